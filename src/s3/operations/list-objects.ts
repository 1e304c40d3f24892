// ListObjectsV2 and ListObjects (V1): the same walk, two dialects of XML.
import { S3Error } from '../../errors/s3-errors.js';
import type { ListPage } from '../../db/repos/objects.js';
import { isoDate, requireBucket, type OperationHandler } from '../operation.js';
import { xmlResponse } from '../respond.js';
import { toXml, type XmlObject } from '../xml.js';
import { encodingOf, listParam } from '../listing-params.js';

const MAX_KEYS = 1000;

export function parseMaxKeys(raw: string | undefined): number {
  if (raw === undefined || raw === '') return MAX_KEYS;
  if (!/^\d+$/.test(raw)) throw new S3Error('InvalidArgument', 'Provided max-keys not an integer or within integer range', { ArgumentName: 'max-keys', ArgumentValue: raw });
  return Math.min(Number(raw), MAX_KEYS);
}

function contents(page: ListPage, enc: (s: string) => string, ownerId?: string): XmlObject[] {
  return page.contents.map((c) => ({
    Key: enc(c.key),
    LastModified: isoDate(c.lastModified),
    ETag: c.etag,
    Size: c.size,
    Owner: ownerId ? { ID: ownerId, DisplayName: ownerId } : undefined,
    StorageClass: 'STANDARD',
  }));
}

function commonPrefixes(page: ListPage, enc: (s: string) => string): XmlObject[] {
  return page.commonPrefixes.map((p) => ({ Prefix: enc(p) }));
}

function encodeToken(last: string): string {
  return Buffer.from(last, 'utf8').toString('base64url');
}

function decodeToken(token: string): string {
  const last = Buffer.from(token, 'base64url').toString('utf8');
  if (!last || encodeToken(last) !== token.replace(/=+$/, '')) {
    throw new S3Error('InvalidArgument', 'The continuation token provided is incorrect', { ArgumentName: 'continuation-token' });
  }
  return last;
}

export const listObjectsV2: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  const q = r.addr.query;
  const enc = encodingOf(r);
  const prefix = listParam(r, 'prefix');
  const delimiter = listParam(r, 'delimiter');
  const maxKeys = parseMaxKeys(q.get('max-keys'));
  const token = q.get('continuation-token');
  const startAfter = listParam(r, 'start-after');
  const after = token !== undefined ? decodeToken(token) : startAfter;
  const page = await r.ctx.objects.list(bucket.id, { prefix, delimiter, after, maxKeys });
  const body: XmlObject = {
    Name: bucket.name,
    Prefix: enc(prefix),
    Delimiter: delimiter ? enc(delimiter) : undefined,
    MaxKeys: maxKeys,
    KeyCount: page.contents.length + page.commonPrefixes.length,
    IsTruncated: page.isTruncated,
    ContinuationToken: token,
    NextContinuationToken: page.isTruncated && page.last !== undefined ? encodeToken(page.last) : undefined,
    StartAfter: startAfter ? enc(startAfter) : undefined,
    EncodingType: q.get('encoding-type') || undefined,
    Contents: contents(page, enc, q.get('fetch-owner') === 'true' ? bucket.ownerId : undefined),
    CommonPrefixes: commonPrefixes(page, enc),
  };
  return xmlResponse(toXml('ListBucketResult', body));
};

export const listObjectsV1: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  const q = r.addr.query;
  const enc = encodingOf(r);
  const prefix = listParam(r, 'prefix');
  const delimiter = listParam(r, 'delimiter');
  const maxKeys = parseMaxKeys(q.get('max-keys'));
  const marker = listParam(r, 'marker');
  const page = await r.ctx.objects.list(bucket.id, { prefix, delimiter, after: marker, maxKeys });
  const body: XmlObject = {
    Name: bucket.name,
    Prefix: enc(prefix),
    Marker: enc(marker),
    // AWS sends NextMarker only with a delimiter; without one clients resume from the last key.
    NextMarker: page.isTruncated && delimiter && page.last !== undefined ? enc(page.last) : undefined,
    MaxKeys: maxKeys,
    Delimiter: delimiter ? enc(delimiter) : undefined,
    IsTruncated: page.isTruncated,
    EncodingType: q.get('encoding-type') || undefined,
    Contents: contents(page, enc, bucket.ownerId),
    CommonPrefixes: commonPrefixes(page, enc),
  };
  return xmlResponse(toXml('ListBucketResult', body));
};
