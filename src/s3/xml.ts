// XML in and out. Bodies are built from plain objects; request XML is read whole under a size cap.
import type { X2jOptions, XMLBuilder, XMLParser, XmlBuilderOptions } from 'fast-xml-parser';
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { acceptBody } from './body.js';
import { S3Error } from '../errors/s3-errors.js';

const S3_NS = 'http://s3.amazonaws.com/doc/2006-03-01/';

type FastXml = typeof import('fast-xml-parser');
let fastXmlModule: FastXml | undefined;
/** fast-xml-parser, loaded by the first XML answer or body: its entity tables were ~15 ms of every start. */
function fastXml(): FastXml {
  return (fastXmlModule ??= createRequire(import.meta.url)('fast-xml-parser') as FastXml);
}

// `entities` is a builder option its typings leave out (fast-xml-builder's defaults: the first five).
const BUILDER_OPTIONS = {
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  suppressEmptyNode: false,
  processEntities: true,
  // The builder's own five, then the white space a parser would rewrite (CR and CR LF become LF,
  // attribute values fold tabs): as references, a key with them comes back byte for byte.
  entities: [
    { regex: /&/g, val: '&amp;' },
    { regex: />/g, val: '&gt;' },
    { regex: /</g, val: '&lt;' },
    { regex: /'/g, val: '&apos;' },
    { regex: /"/g, val: '&quot;' },
    { regex: /\r/g, val: '&#13;' },
    { regex: /\n/g, val: '&#10;' },
    { regex: /\t/g, val: '&#9;' },
  ],
} as XmlBuilderOptions;
let builderMade: XMLBuilder | undefined;
const builder = (): XMLBuilder => (builderMade ??= new (fastXml().XMLBuilder)(BUILDER_OPTIONS));

/** A parser with these options, made at its first use (fastXml()). */
export function lazyXmlParser(options: X2jOptions): () => XMLParser {
  let made: XMLParser | undefined;
  return () => (made ??= new (fastXml().XMLParser)(options));
}

const parser = lazyXmlParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  trimValues: true,
  processEntities: true,
});

export type XmlValue = string | number | boolean | XmlObject | XmlValue[] | XmlSequence | undefined | null;
export interface XmlObject {
  [name: string]: XmlValue;
}

/**
 * Elements of different names in one given order, where a plain object can only group them by name:
 * ListObjectVersions interleaves `<Version>` and `<DeleteMarker>` by key, newest first, as AWS does.
 */
export class XmlSequence {
  constructor(readonly items: ReadonlyArray<readonly [name: string, element: XmlObject]>) {}
}

/**
 * Characters XML 1.0 cannot carry at all, not even as a character reference: NUL and the other C0
 * controls but tab, line feed and carriage return, and the non-characters U+FFFE and U+FFFF. (A lone
 * surrogate cannot leave the process: UTF-8 encoding writes it as U+FFFD.)
 */
const NOT_XML_CHAR = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/;
const NOT_XML_CHARS = new RegExp(NOT_XML_CHAR.source, 'g');

/** True when `s` holds a character no XML 1.0 document can carry. */
export function hasNonXmlChar(s: string): boolean {
  return NOT_XML_CHAR.test(s);
}

/**
 * `<?xml ...?><Root xmlns="...">...</Root>`; undefined fields are left out, arrays repeat the element.
 * Every answer is well-formed XML 1.0: a character it cannot carry (a key stored before such keys were
 * refused, a request parameter echoed in an error) is written as U+FFFD. Requests that would need one
 * are refused or answered URL-encoded before they get here (docs/COMPATIBILITY.md "Keys are opaque");
 * this is the last line. Element names are our own ASCII, so the whole text can be swept.
 */
export function toXml(root: string, body: XmlObject, opts: { namespace?: boolean } = {}): string {
  const content: XmlObject = opts.namespace === false ? body : { '@_xmlns': S3_NS, ...body };
  const sequences: XmlSequence[] = [];
  let xml = builder().build({ [root]: prune(content, sequences) }) as string;
  // A sequence was built as an empty placeholder element (our own ASCII name, never in user text,
  // which the builder escapes); its elements, built by the same builder, take its place.
  for (const [i, seq] of sequences.entries()) {
    const elements = seq.items.map(([name, element]) => builder().build({ [name]: prune(element, sequences) }) as string).join('');
    xml = xml.replace(`<${placeholder(i)}></${placeholder(i)}>`, () => elements);
  }
  return ('<?xml version="1.0" encoding="UTF-8"?>\n' + xml).replace(NOT_XML_CHARS, '\ufffd');
}

function placeholder(i: number): string {
  return `S3edgeXmlSequence${i}`;
}

function prune(v: XmlValue, sequences: XmlSequence[]): XmlValue {
  if (Array.isArray(v)) return v.map((item) => prune(item, sequences));
  if (v instanceof XmlSequence) return v;
  if (v && typeof v === 'object') {
    const out: XmlObject = {};
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined || val === null) continue;
      if (val instanceof XmlSequence) {
        sequences.push(val);
        out[placeholder(sequences.length - 1)] = '';
      } else out[k] = prune(val, sequences);
    }
    return out;
  }
  return v;
}

/** Reads a request body of at most maxBytes and parses it; an empty body gives undefined. */
export async function readXmlBody(body: IncomingMessage, maxBytes = 1024 * 1024): Promise<Record<string, unknown> | undefined> {
  acceptBody(body);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new S3Error('MalformedXML', 'The XML you provided was too large.');
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (!text) return undefined;
  try {
    const parsed: unknown = parser().parse(text, true);
    if (!parsed || typeof parsed !== 'object') throw new Error('not an element');
    return parsed as Record<string, unknown>;
  } catch {
    throw new S3Error('MalformedXML');
  }
}
