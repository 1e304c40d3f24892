// Bucket versioning: PutBucketVersioning, GetBucketVersioning and ListObjectVersions (GET ?versions).
// What a version is, and how writes and deletes treat them, is in db/repos/objects.ts and
// object-versions.ts; the decisions are in docs/COMPATIBILITY.md "Versioning".
import { S3Error } from '../../errors/s3-errors.js';
import type { VersionListPage } from '../../db/repos/object-versions.js';
import { encodingOf, listParam } from '../listing-params.js';
import { isoDate, requireBucket, type OperationHandler } from '../operation.js';
import { childNames, optionalLeaf, parseXmlDocument, readVerifiedBody } from '../request-body-xml.js';
import { xmlResponse } from '../respond.js';
import { toXml, XmlSequence, type XmlObject } from '../xml.js';
import { parseVersionId } from '../versioning.js';
import { parseMaxKeys } from './list-objects.js';

const MAX_CONFIG_BYTES = 64 * 1024;

/**
 * `<VersioningConfiguration>` with Status Enabled or Suspended (absent: no change) and MfaDelete
 * Disabled (absent is the same). MFA delete is not supported: Enabled is 501 NotImplemented. Pure;
 * exported for tests.
 */
export function parseVersioningConfiguration(body: Buffer): 'Enabled' | 'Suspended' | undefined {
  const root = parseXmlDocument(body, 'VersioningConfiguration');
  for (const name of childNames(root)) if (name !== 'Status' && name !== 'MfaDelete') throw new S3Error('MalformedXML');
  const status = optionalLeaf(root, 'Status');
  const mfa = optionalLeaf(root, 'MfaDelete');
  if (mfa !== undefined && mfa !== 'Disabled') {
    if (mfa === 'Enabled') throw new S3Error('NotImplemented', 'MFA Delete is not supported.');
    throw new S3Error('MalformedXML');
  }
  if (status === undefined) return undefined;
  if (status !== 'Enabled' && status !== 'Suspended') throw new S3Error('MalformedXML');
  return status;
}

export const putBucketVersioning: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketAdmin');
  const status = parseVersioningConfiguration(await readVerifiedBody(r, { maxBytes: MAX_CONFIG_BYTES, requireDigest: false }));
  if (status !== undefined && status !== bucket.versioning) {
    if (!(await r.ctx.repos.buckets.setVersioning(bucket.id, status))) throw new S3Error('NoSuchBucket', undefined, { BucketName: bucket.name });
    // Writes read the state in their own transaction; answers (x-amz-version-id) from the cached bucket.
    r.ctx.bucketDirectory.forget(bucket.name);
  }
  return { status: 200, headers: { 'content-length': 0 } };
};

export const getBucketVersioning: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  // Read fresh: a change by this request's predecessor must show at once.
  const versioning = (await r.ctx.repos.buckets.getById(bucket.id))?.versioning ?? null;
  return xmlResponse(toXml('VersioningConfiguration', versioning === null ? {} : { Status: versioning }));
};

function owner(id: string): XmlObject {
  return { ID: id, DisplayName: id };
}

/** Versions and delete markers in the page's order (key ascending, newest first), interleaved as on AWS. */
function entries(page: VersionListPage, enc: (s: string) => string, ownerId: string): XmlSequence {
  return new XmlSequence(page.entries.map((e) => {
    const common = { Key: enc(e.key), VersionId: e.versionId ?? 'null', IsLatest: e.isLatest, LastModified: isoDate(e.lastModified) };
    return e.deleteMarker
      ? ['DeleteMarker', { ...common, Owner: owner(ownerId) }]
      : ['Version', { ...common, ETag: e.etag, Size: e.size, Owner: owner(ownerId), StorageClass: 'STANDARD' }];
  }));
}

export const listObjectVersions: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  const q = r.addr.query;
  const enc = encodingOf(r);
  const prefix = listParam(r, 'prefix');
  const delimiter = listParam(r, 'delimiter');
  const maxKeys = parseMaxKeys(q.get('max-keys'));
  const keyMarker = listParam(r, 'key-marker');
  const versionIdMarkerRaw = listParam(r, 'version-id-marker', false);
  if (versionIdMarkerRaw !== '' && keyMarker === '') {
    throw new S3Error('InvalidArgument', 'A version-id marker cannot be specified without a key marker.', {
      ArgumentName: 'version-id-marker',
      ArgumentValue: versionIdMarkerRaw,
    });
  }
  const versionIdMarker = versionIdMarkerRaw === '' ? undefined : parseVersionId(versionIdMarkerRaw, 'version-id-marker');
  const page = await r.ctx.objects.versions.list(bucket.id, { prefix, delimiter, keyMarker, versionIdMarker, maxKeys });
  const body: XmlObject = {
    Name: bucket.name,
    Prefix: enc(prefix),
    KeyMarker: enc(keyMarker),
    VersionIdMarker: versionIdMarkerRaw,
    NextKeyMarker: page.isTruncated && page.nextKeyMarker !== undefined ? enc(page.nextKeyMarker) : undefined,
    NextVersionIdMarker: page.isTruncated && page.nextVersionIdMarker !== undefined ? (page.nextVersionIdMarker ?? 'null') : undefined,
    MaxKeys: maxKeys,
    Delimiter: delimiter ? enc(delimiter) : undefined,
    IsTruncated: page.isTruncated,
    EncodingType: q.get('encoding-type') || undefined,
    Versions: entries(page, enc, bucket.ownerId),
    CommonPrefixes: page.commonPrefixes.map((p) => ({ Prefix: enc(p) })),
  };
  return xmlResponse(toXml('ListVersionsResult', body));
};
