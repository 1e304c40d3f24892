// CompleteMultipartUpload: the listed parts become the object, atomically, like a PUT: one metadata
// transaction checks the parts, makes the object visible as a manifest of the part blobs (no byte is
// copied) and removes the upload; parts not listed go to the blob trash. A retry of a completion that
// already succeeded gets the same answer, as on AWS.
import { createHash } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { ChunkDecoder } from '../../../auth/sigv4/index.js';
import type { ObjectPart, ObjectRecord } from '../../../db/repos/objects.js';
import type { CompletedUpload, CompletionPlan, MultipartUpload, UploadPart } from '../../../db/repos/multipart.js';
import { S3Error } from '../../../errors/s3-errors.js';
import { CHECKSUM_ALGORITHMS, checksumHeader, type ChecksumAlgorithm } from '../../../hashing/checksums.js';
import { acceptBody, requestBody } from '../../body.js';
import { childValues, isNode, optionalLeaf, parseXmlDocument } from '../../request-body-xml.js';
import { MAX_PART_NUMBER } from '../../../storage/object-reader.js';
import { checkWriteCondition, createdOutcome, type WriteCondition } from '../../object-writes.js';
import { versionReplaced } from '../../../buckets/object-removal.js';
import { changeEvents } from '../../object-events.js';
import { header, requireBucket, requireKey, type S3Request, type OperationHandler } from '../../operation.js';
import { xmlResponse, type S3Response } from '../../respond.js';
import { toXml, type XmlObject } from '../../xml.js';
import { versionHeaders } from '../../versioning.js';
import { MAX_MULTIPART_OBJECT_SIZE, MIN_PART_SIZE, scheduleTrashDrain } from './common.js';
import { quotaTarget } from '../../quota.js';
import { bareEtag, multipartEtag, objectChecksum } from './compose.js';

/** 10000 parts with an ETag and a SHA-256 each fit in about 1.6 MB. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export interface RequestedPart {
  partNumber: number;
  etag: string;
  /** Checksums the client listed for the part, by algorithm. */
  checksums: Partial<Record<ChecksumAlgorithm, string>>;
}

function malformed(): S3Error {
  return new S3Error('MalformedXML');
}

/** The parts of a `<CompleteMultipartUpload>` document, as listed (order is checked later). */
export function parseCompleteXml(body: Buffer | string): RequestedPart[] {
  const root = parseXmlDocument(typeof body === 'string' ? Buffer.from(body) : body, 'CompleteMultipartUpload');
  const parts = childValues(root, 'Part');
  if (parts.length === 0) throw malformed();
  return parts.map((p: unknown): RequestedPart => {
    if (!isNode(p)) throw malformed();
    // Character references are decoded: the Go SDK sends the ETag's quotes as &#34;.
    const numberText = optionalLeaf(p, 'PartNumber')?.trim();
    if (numberText === undefined || !/^-?\d+$/.test(numberText)) throw malformed();
    const partNumber = Number(numberText);
    if (partNumber < 1 || partNumber > MAX_PART_NUMBER) {
      throw new S3Error('InvalidArgument', `PartNumber must be >= 1 and <= ${MAX_PART_NUMBER}`, { ArgumentName: 'PartNumber', ArgumentValue: numberText });
    }
    const etag = optionalLeaf(p, 'ETag')?.trim();
    if (etag === undefined || etag === '') throw new S3Error('InvalidPart', undefined, { PartNumber: numberText });
    const checksums: RequestedPart['checksums'] = {};
    for (const algo of CHECKSUM_ALGORITHMS) {
      const v = optionalLeaf(p, `Checksum${algo}`)?.trim();
      if (v !== undefined && v !== '') checksums[algo] = v;
    }
    return { partNumber, etag, checksums };
  });
}

/**
 * Reads the (small) request body, verifying a signed payload hash and Content-MD5. Not
 * request-body-xml's readVerifiedBody: on this operation x-amz-checksum-* is the whole object's.
 */
async function readBody(r: S3Request): Promise<Buffer> {
  const { auth, req } = r;
  let body: AsyncIterable<unknown> = req;
  if (auth.payload.kind === 'streaming-signed' || auth.payload.kind === 'streaming-unsigned-trailer') {
    const decoded = header(r, 'x-amz-decoded-content-length');
    body = requestBody(req, [new ChunkDecoder({ auth, decodedContentLength: decoded === undefined ? undefined : Number(decoded) })]);
  } else {
    acceptBody(req);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new S3Error('MalformedXML', 'The XML you provided was too large.');
    chunks.push(chunk as Buffer);
  }
  const bytes = Buffer.concat(chunks);
  if (auth.payload.kind === 'signed') {
    const got = createHash('sha256').update(bytes).digest('hex');
    if (got !== auth.payload.sha256) {
      throw new S3Error('XAmzContentSHA256Mismatch', undefined, { ClientComputedContentSHA256: auth.payload.sha256, S3ComputedContentSHA256: got });
    }
  }
  const md5 = header(r, 'content-md5');
  if (md5 !== undefined && createHash('md5').update(bytes).digest('base64') !== md5) throw new S3Error('BadDigest');
  return bytes;
}

/** Checks one listed part against the stored one; the part checksum rules follow AWS. */
function checkPart(upload: MultipartUpload, wanted: RequestedPart, stored: UploadPart | undefined): UploadPart {
  const n = String(wanted.partNumber);
  if (!stored || bareEtag(stored.etag) !== bareEtag(wanted.etag)) {
    throw new S3Error('InvalidPart', undefined, { UploadId: upload.uploadId, PartNumber: n, ETag: wanted.etag });
  }
  const algo = upload.checksumAlgorithm as ChecksumAlgorithm | null;
  if (!algo) return stored;
  const listed = Object.keys(wanted.checksums) as ChecksumAlgorithm[];
  if (listed.length > 1) throw new S3Error('InvalidRequest', `Part ${n} lists more than one checksum.`);
  const given = wanted.checksums[algo];
  if (listed.length === 1 && given === undefined) {
    throw new S3Error('InvalidRequest', `Checksum Type mismatch occurred, expected checksum Type: ${algo.toLowerCase()}, actual checksum Type: ${(listed[0] as string).toLowerCase()}`);
  }
  if (given === undefined && upload.checksumType === 'COMPOSITE') {
    throw new S3Error(
      'InvalidRequest',
      `The upload was created using a ${algo.toLowerCase()} checksum. The complete request must include the checksum for each part. It was missing for part ${n} in the request.`,
    );
  }
  if (given !== undefined && given !== stored.checksumValue) {
    throw new S3Error('InvalidPart', undefined, { UploadId: upload.uploadId, PartNumber: n, ETag: wanted.etag });
  }
  return stored;
}

export interface CompleteHeaders {
  checksumType?: string;
  objectSize?: number;
  /** A whole-object checksum the client sent, by algorithm. */
  checksums: Partial<Record<ChecksumAlgorithm, string>>;
}

function parseCompleteHeaders(r: S3Request): CompleteHeaders {
  const out: CompleteHeaders = { checksums: {} };
  const type = header(r, 'x-amz-checksum-type');
  if (type !== undefined) out.checksumType = type.trim().toUpperCase();
  const size = header(r, 'x-amz-mp-object-size');
  if (size !== undefined) {
    if (!/^\d+$/.test(size.trim())) throw new S3Error('InvalidRequest', 'Value for x-amz-mp-object-size header is invalid.');
    out.objectSize = Number(size.trim());
  }
  for (const algo of CHECKSUM_ALGORITHMS) {
    const v = header(r, checksumHeader(algo));
    if (v !== undefined) out.checksums[algo] = v.trim();
  }
  return out;
}

/** Decides the object from the upload and its parts; throws the AWS error for the first problem. */
export function planCompletion(
  upload: MultipartUpload,
  stored: UploadPart[],
  wanted: RequestedPart[],
  h: CompleteHeaders,
  now: number,
): CompletionPlan {
  if (h.checksumType !== undefined && h.checksumType !== (upload.checksumType ?? '')) {
    throw new S3Error(
      'InvalidRequest',
      `The upload was created using the ${upload.checksumType ?? 'null'} checksum mode. The complete request must use the same checksum mode.`,
    );
  }
  const byNumber = new Map(stored.map((p) => [p.partNumber, p]));
  const parts: UploadPart[] = [];
  let previous = 0;
  for (const w of wanted) {
    if (w.partNumber <= previous) throw new S3Error('InvalidPartOrder', undefined, { UploadId: upload.uploadId });
    previous = w.partNumber;
    parts.push(checkPart(upload, w, byNumber.get(w.partNumber)));
  }
  parts.forEach((p, i) => {
    if (i < parts.length - 1 && p.size < MIN_PART_SIZE) {
      throw new S3Error('EntityTooSmall', undefined, {
        ProposedSize: String(p.size),
        MinSizeAllowed: String(MIN_PART_SIZE),
        PartNumber: String(p.partNumber),
        ETag: p.etag,
      });
    }
  });
  const size = parts.reduce((sum, p) => sum + p.size, 0);
  if (size > MAX_MULTIPART_OBJECT_SIZE) throw new S3Error('EntityTooLarge');
  if (h.objectSize !== undefined && h.objectSize !== size) {
    throw new S3Error('InvalidRequest', `The provided 'x-amz-mp-object-size' header value ${h.objectSize} does not match what was computed: ${size}`);
  }

  const algo = upload.checksumAlgorithm as ChecksumAlgorithm | null;
  let checksumValue: string | null = null;
  if (algo && upload.checksumType) {
    const sums = parts.map((p) => {
      if (p.checksumAlgorithm !== algo || !p.checksumValue) {
        throw new S3Error('InvalidRequest', `Part ${p.partNumber} has no ${algo.toLowerCase()} checksum.`);
      }
      return { checksum: p.checksumValue, size: p.size };
    });
    checksumValue = objectChecksum(algo, upload.checksumType, sums);
    const claimed = h.checksums[algo];
    if (claimed !== undefined) {
      const comparable = upload.checksumType === 'COMPOSITE' && !claimed.includes('-') ? `${claimed}-${parts.length}` : claimed;
      if (comparable !== checksumValue) {
        throw new S3Error('BadDigest', `The ${algo.toLowerCase()} you specified did not match the calculated checksum.`);
      }
    }
  }

  const etag = multipartEtag(parts.map((p) => p.etag));
  const manifest: ObjectPart[] = parts.map((p) => ({
    blobId: p.blobId,
    size: p.size,
    etag: p.etag,
    ...(algo && p.checksumValue ? { checksum: p.checksumValue } : {}),
    ...(p.crc32c === null ? {} : { crc32c: p.crc32c }),
    number: p.partNumber,
  }));
  const lastModified = Math.floor(now / 1000) * 1000;
  const record: ObjectRecord = {
    bucketId: upload.bucketId,
    key: upload.key,
    blobId: '',
    size,
    etag,
    // No whole-object SHA-256 without reading the bytes back; nothing needs one.
    sha256: '',
    checksumAlgorithm: checksumValue ? algo : null,
    checksumValue,
    checksumType: checksumValue ? upload.checksumType : null,
    contentType: upload.contentType,
    contentEncoding: upload.contentEncoding,
    contentDisposition: upload.contentDisposition,
    contentLanguage: upload.contentLanguage,
    cacheControl: upload.cacheControl,
    expires: upload.expires,
    userMetadata: upload.userMetadata,
    lastModified,
    parts: manifest,
    ...(upload.tagging ? { tagging: upload.tagging } : {}),
    ...(upload.acl ? { acl: upload.acl } : {}),
  };
  const completed: CompletedUpload = {
    uploadId: upload.uploadId,
    bucketId: upload.bucketId,
    key: upload.key,
    etag,
    checksumAlgorithm: record.checksumAlgorithm,
    checksumValue,
    checksumType: record.checksumType,
    completedAt: now,
  };
  return { record, claimed: parts.map((p) => p.partNumber), completed };
}

function result(r: S3Request, bucketName: string, key: string, c: CompletedUpload): S3Response {
  const secure = (r.req.socket as Partial<TLSSocket>).encrypted === true;
  const body: XmlObject = {
    Location: `${secure ? 'https' : 'http'}://${header(r, 'host') ?? 'localhost'}${r.addr.rawPath}`,
    Bucket: bucketName,
    Key: key,
    ETag: c.etag,
  };
  if (c.checksumAlgorithm && c.checksumValue) {
    body[`Checksum${c.checksumAlgorithm}`] = c.checksumValue;
    body['ChecksumType'] = c.checksumType ?? undefined;
  }
  return xmlResponse(toXml('CompleteMultipartUploadResult', body), 200, versionHeaders(c.versionId));
}

/** The earlier answer when this upload already completed at this bucket and key. */
async function earlierCompletion(r: S3Request, bucketId: string, key: string, uploadId: string): Promise<CompletedUpload | undefined> {
  const done = await r.ctx.multipart.getCompleted(uploadId);
  return done && done.bucketId === bucketId && done.key === key ? done : undefined;
}

export const completeMultipartUpload: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectWrite');
  const key = requireKey(r);
  const uploadId = r.addr.query.get('uploadId') ?? '';
  const { ctx } = r;
  const noSuchUpload = (): S3Error => new S3Error('NoSuchUpload', undefined, { UploadId: uploadId });

  const upload = uploadId ? await ctx.multipart.get(uploadId) : undefined;
  if (!upload || upload.bucketId !== bucket.id || upload.key !== key) {
    const done = upload ? undefined : await earlierCompletion(r, bucket.id, key, uploadId);
    if (!done) throw noSuchUpload();
    await readBody(r);
    return result(r, bucket.name, key, done);
  }
  const cond: WriteCondition = { ifMatch: header(r, 'if-match'), ifNoneMatch: header(r, 'if-none-match') };
  checkWriteCondition(await ctx.objects.get(bucket.id, key), cond, 'request');
  // The parts count as stored already and the completion adds nothing: refused only while the owner or
  // the bucket stores more than its quota (one lowered since), as no new object may be made then.
  await ctx.quotas.checkStored(quotaTarget(bucket));
  const headers = parseCompleteHeaders(r);
  const wanted = parseCompleteXml(await readBody(r));

  const now = ctx.clock().getTime();
  const report = await changeEvents(r, bucket, key);
  const outcome = await ctx.multipart.complete(
    uploadId,
    (current, stored) => planCompletion(current, stored, wanted, headers, now),
    (existing) => checkWriteCondition(existing, cond, 'commit'),
    report && ((record, versionId) => report(createdOutcome('s3:ObjectCreated:CompleteMultipartUpload', record, versionId))),
  );
  if (!outcome) {
    // Completed (or aborted) by a concurrent request while this one read its body.
    const done = await earlierCompletion(r, bucket.id, key, uploadId);
    if (!done) throw noSuchUpload();
    return result(r, bucket.name, key, done);
  }
  versionReplaced(ctx, bucket.id, key, outcome.replaced);
  // Parts left out of the list are in the trash now.
  scheduleTrashDrain(r);
  return result(r, bucket.name, key, outcome.plan.completed);
};
