// Raw signed S3 operations beyond RawS3's basics (ListBuckets, CopyObject, multipart, DeleteObjects,
// bucket CORS), built on RawS3.send so every response lands in the same log. Request bodies are
// written here by hand from the S3 API reference; responses are read with test/helpers/xml.ts.
import type { RawResponse } from './raw-http.js';
import { md5Base64 } from './checksums.js';
import type { RawS3 } from './s3-client.js';
import { encodeKeyPath } from './signer.js';
import { xmlBlocks, xmlText } from './xml.js';

/** XML text content with the five special characters escaped. */
export function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

/** The value of x-amz-copy-source for an object: /bucket/escaped-key. */
export function copySource(bucket: string, key: string): string {
  return `/${bucket}/${encodeKeyPath(key)}`;
}

export async function listBuckets(s3: RawS3): Promise<{ res: RawResponse; names: string[] }> {
  const res = await s3.send({ method: 'GET', path: '/' });
  const names = xmlBlocks(res.text, 'Bucket').map((b) => xmlText(b, 'Name') ?? '');
  return { res, names };
}

export function copyObject(s3: RawS3, dstBucket: string, dstKey: string, srcBucket: string, srcKey: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return s3.send({ method: 'PUT', bucket: dstBucket, key: dstKey, headers: { 'x-amz-copy-source': copySource(srcBucket, srcKey), ...headers }, body: Buffer.alloc(0) });
}

export async function createMultipartUpload(s3: RawS3, bucket: string, key: string, headers: Record<string, string> = {}): Promise<{ res: RawResponse; uploadId: string | undefined }> {
  const res = await s3.send({ method: 'POST', bucket, key, query: { uploads: '' }, headers, body: Buffer.alloc(0) });
  return { res, uploadId: res.status === 200 ? xmlText(res.text, 'UploadId') : undefined };
}

export function uploadPart(s3: RawS3, bucket: string, key: string, uploadId: string, partNumber: number, body: Buffer): Promise<RawResponse> {
  return s3.send({ method: 'PUT', bucket, key, query: { partNumber: String(partNumber), uploadId }, body });
}

export function uploadPartCopy(s3: RawS3, bucket: string, key: string, uploadId: string, partNumber: number, srcBucket: string, srcKey: string, range?: string): Promise<RawResponse> {
  const headers: Record<string, string> = { 'x-amz-copy-source': copySource(srcBucket, srcKey) };
  if (range !== undefined) headers['x-amz-copy-source-range'] = range;
  return s3.send({ method: 'PUT', bucket, key, query: { partNumber: String(partNumber), uploadId }, headers, body: Buffer.alloc(0) });
}

export function completeXml(parts: Array<{ partNumber: number; etag: string }>): Buffer {
  return Buffer.from(
    `<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${parts
      .map((p) => `<Part><PartNumber>${p.partNumber}</PartNumber><ETag>${xmlEscape(p.etag)}</ETag></Part>`)
      .join('')}</CompleteMultipartUpload>`,
  );
}

export function completeMultipartUpload(s3: RawS3, bucket: string, key: string, uploadId: string, parts: Array<{ partNumber: number; etag: string }>, headers: Record<string, string> = {}): Promise<RawResponse> {
  return s3.send({ method: 'POST', bucket, key, query: { uploadId }, headers, body: completeXml(parts) });
}

export function abortMultipartUpload(s3: RawS3, bucket: string, key: string, uploadId: string): Promise<RawResponse> {
  return s3.send({ method: 'DELETE', bucket, key, query: { uploadId } });
}

export function listParts(s3: RawS3, bucket: string, key: string, uploadId: string): Promise<RawResponse> {
  return s3.send({ method: 'GET', bucket, key, query: { uploadId } });
}

export function listMultipartUploads(s3: RawS3, bucket: string): Promise<RawResponse> {
  return s3.send({ method: 'GET', bucket, query: { uploads: '' } });
}

/** DeleteObjects with Content-MD5 (the form every SDK accepted by AWS can send). */
export async function deleteObjects(s3: RawS3, bucket: string, keys: string[], quiet = false): Promise<{ res: RawResponse; deleted: string[]; errors: Array<{ key: string; code: string }> }> {
  const body = Buffer.from(
    `<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${quiet ? '<Quiet>true</Quiet>' : ''}${keys
      .map((k) => `<Object><Key>${xmlEscape(k)}</Key></Object>`)
      .join('')}</Delete>`,
  );
  const res = await s3.send({ method: 'POST', bucket, query: { delete: '' }, headers: { 'content-md5': md5Base64(body) }, body });
  const deleted = xmlBlocks(res.text, 'Deleted').map((d) => xmlText(d, 'Key') ?? '');
  const errors = xmlBlocks(res.text, 'Error')
    .filter((e) => xmlText(e, 'Key') !== undefined)
    .map((e) => ({ key: xmlText(e, 'Key') ?? '', code: xmlText(e, 'Code') ?? '' }));
  return { res, deleted, errors };
}

export function putBucketCors(s3: RawS3, bucket: string, origins: string[], methods: string[]): Promise<RawResponse> {
  const body = Buffer.from(
    `<CORSConfiguration><CORSRule>${origins.map((o) => `<AllowedOrigin>${xmlEscape(o)}</AllowedOrigin>`).join('')}${methods
      .map((m) => `<AllowedMethod>${m}</AllowedMethod>`)
      .join('')}</CORSRule></CORSConfiguration>`,
  );
  return s3.send({ method: 'PUT', bucket, query: { cors: '' }, headers: { 'content-md5': md5Base64(body) }, body });
}

export function getBucketCors(s3: RawS3, bucket: string): Promise<RawResponse> {
  return s3.send({ method: 'GET', bucket, query: { cors: '' } });
}

/** Keys of a ListMultipartUploads answer, with their upload ids. */
export function parseUploads(xml: string): Array<{ key: string; uploadId: string }> {
  return xmlBlocks(xml, 'Upload').map((u) => ({ key: xmlText(u, 'Key') ?? '', uploadId: xmlText(u, 'UploadId') ?? '' }));
}

/** Part numbers of a ListParts answer. */
export function parsePartNumbers(xml: string): number[] {
  return xmlBlocks(xml, 'Part').map((p) => Number(xmlText(p, 'PartNumber')));
}
