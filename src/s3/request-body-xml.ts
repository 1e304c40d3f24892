// Small XML request bodies that carry instructions (DeleteObjects, PutBucketCors, PutBucketAcl): read
// whole under a cap, aws-chunked framing decoded, every digest the client sent verified, then parsed
// without trimming or guessing, because object keys may start or end with spaces.
import { ChunkDecoder } from '../auth/sigv4/index.js';
import { S3Error, isS3Error } from '../errors/s3-errors.js';
import { UploadHasher } from '../hashing/upload-hasher.js';
import { requestBody } from './body.js';
import { header, type S3Request } from './operation.js';
import { checkUpload, parseUploadExpectations } from './upload-checks.js';
import { lazyXmlParser } from './xml.js';

function tooLarge(): S3Error {
  return new S3Error('MalformedXML', 'The XML you provided was too large.');
}

/**
 * Reads the whole body (at most maxBytes) and checks the signed payload hash, Content-MD5 and any
 * x-amz-checksum-* (header or trailer). With `requireDigest`, a request sending neither Content-MD5 nor
 * a checksum value is refused, as AWS does for DeleteObjects and PutBucketCors.
 */
export async function readVerifiedBody(r: S3Request, opts: { maxBytes: number; requireDigest: boolean }): Promise<Buffer> {
  const { req, auth } = r;
  const expect = parseUploadExpectations(req, auth.payload);
  if (opts.requireDigest && expect.contentMd5 === undefined && expect.checksumValue === undefined && expect.trailerName === undefined) {
    throw new S3Error('InvalidRequest', 'Missing required header for this request: Content-MD5');
  }
  const declaredRaw = header(r, 'x-amz-decoded-content-length') ?? header(r, 'content-length');
  const declared = declaredRaw !== undefined && /^\d+$/.test(declaredRaw) ? Number(declaredRaw) : undefined;
  if (declared !== undefined && declared > opts.maxBytes) throw tooLarge();
  const framed = auth.payload.kind === 'streaming-signed' || auth.payload.kind === 'streaming-unsigned-trailer';
  const decodedRaw = header(r, 'x-amz-decoded-content-length');
  const decoder = framed
    ? new ChunkDecoder({ auth, decodedContentLength: decodedRaw === undefined ? undefined : Number(decodedRaw) })
    : undefined;
  const hasher = new UploadHasher({ checksumAlgorithm: expect.checksumAlgorithm, maxSize: opts.maxBytes });
  const body = requestBody(req, decoder ? [decoder, hasher] : [hasher]);
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of body) chunks.push(chunk as Buffer);
  } catch (err) {
    if (isS3Error(err) && err.code === 'EntityTooLarge') throw tooLarge();
    throw err;
  }
  const digests = await hasher.digests();
  if (!framed && declared !== undefined && digests.size !== declared) throw new S3Error('IncompleteBody');
  checkUpload(expect, digests, decoder?.trailers ?? {});
  return Buffer.concat(chunks);
}

const CDATA = '#cdata';

// Entities are decoded by decodeXmlText in one pass (the parser's own pass would turn `&amp;#13;`
// into a character reference and skips numeric ones); values are never trimmed or coerced.
const parser = lazyXmlParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  trimValues: false,
  processEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  // CDATA stays apart from text: it is taken literally, never entity-decoded.
  cdataPropName: CDATA,
});

const ENTITY = /&(lt|gt|amp|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);/g;

/** XML text with the five predefined entities and character references decoded. */
export function decodeXmlText(s: string): string {
  return s.replace(ENTITY, (_m, ent: string) => {
    switch (ent) {
      case 'lt':
        return '<';
      case 'gt':
        return '>';
      case 'amp':
        return '&';
      case 'quot':
        return '"';
      case 'apos':
        return "'";
      default: {
        const code = ent.startsWith('#x') ? parseInt(ent.slice(2), 16) : parseInt(ent.slice(1), 10);
        if (!(code <= 0x10ffff) || (code >= 0xd800 && code <= 0xdfff)) throw new S3Error('MalformedXML');
        return String.fromCodePoint(code);
      }
    }
  });
}

export type XmlNode = Record<string, unknown>;

/** Parses an XML document and returns its root element, which must be named `root`. */
export function parseXmlDocument(body: Buffer, root: string): XmlNode {
  const text = body.toString('utf8');
  // No DTDs: nothing we accept needs one, and entity definitions invite expansion attacks.
  if (/<!DOCTYPE/i.test(text)) throw new S3Error('MalformedXML');
  let parsed: unknown;
  try {
    parsed = parser().parse(text, true);
  } catch {
    throw new S3Error('MalformedXML');
  }
  if (!isNode(parsed)) throw new S3Error('MalformedXML');
  const names = Object.keys(parsed).filter((k) => k !== '#text');
  const node = parsed[root];
  if (names.length !== 1 || names[0] !== root) throw new S3Error('MalformedXML');
  if (node === '' || (typeof node === 'string' && node.trim() === '')) return {};
  if (!isNode(node)) throw new S3Error('MalformedXML');
  return node;
}

export function isNode(v: unknown): v is XmlNode {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The values of every child element `name` (the parser gives one child as a value, several as an array). */
export function childValues(node: XmlNode, name: string): unknown[] {
  const v = node[name];
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** Child element names other than whitespace text. */
export function childNames(node: XmlNode): string[] {
  return Object.keys(node).filter((k) => k !== '#text');
}

/** A leaf element's text, entities decoded, untrimmed; MalformedXML if it has child elements. */
export function leafText(v: unknown): string {
  if (typeof v === 'string') return decodeXmlText(v);
  if (!isNode(v)) throw new S3Error('MalformedXML');
  const names = Object.keys(v);
  if (names.length === 0) return '';
  // Only CDATA: its text as is. CDATA mixed with text loses its order in the parse: refused.
  const cdata = v[CDATA];
  if (names.length === 1 && cdata !== undefined) {
    const parts = Array.isArray(cdata) ? cdata : [cdata];
    if (parts.every((p): p is string => typeof p === 'string')) return parts.join('');
  }
  throw new S3Error('MalformedXML');
}

/** The text of the one child element `name`, or undefined; MalformedXML when it repeats. */
export function optionalLeaf(node: XmlNode, name: string): string | undefined {
  const values = childValues(node, name);
  if (values.length > 1) throw new S3Error('MalformedXML');
  return values.length === 0 ? undefined : leafText(values[0]);
}
