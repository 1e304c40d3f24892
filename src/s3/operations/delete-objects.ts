// DeleteObjects (POST /bucket?delete): up to 1000 keys in one verified XML body, one result per key.
// A key that cannot be deleted is an <Error> entry, never a failed request; a key that cannot exist
// at all (over 1024 bytes, characters XML cannot carry) refuses the request.
import { S3Error, isS3Error } from '../../errors/s3-errors.js';
import { keyProblem, validateKey } from '../addressing.js';
import { removeObjectVersion } from '../../buckets/object-removal.js';
import { requireBucketPerKey, type OperationHandler } from '../operation.js';
import { parseVersionId } from '../versioning.js';
import { changeEvents } from '../object-events.js';
import { xmlResponse } from '../respond.js';
import { childNames, childValues, isNode, optionalLeaf, parseXmlDocument, readVerifiedBody } from '../request-body-xml.js';
import { toXml, type XmlObject } from '../xml.js';

export const MAX_DELETE_KEYS = 1000;
/** 1000 keys of 1024 bytes, XML-escaped, fit with room to spare. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export interface DeleteRequest {
  quiet: boolean;
  objects: Array<{ key: string; versionId?: string }>;
}

/** Parses and validates a `<Delete>` document. Pure; exported for tests. */
export function parseDeleteRequest(body: Buffer): DeleteRequest {
  const root = parseXmlDocument(body, 'Delete');
  for (const name of childNames(root)) if (name !== 'Object' && name !== 'Quiet') throw new S3Error('MalformedXML');
  const quietText = optionalLeaf(root, 'Quiet')?.trim().toLowerCase();
  if (quietText !== undefined && quietText !== 'true' && quietText !== 'false') throw new S3Error('MalformedXML');
  const entries = childValues(root, 'Object');
  if (entries.length === 0 || entries.length > MAX_DELETE_KEYS) throw new S3Error('MalformedXML');
  const objects = entries.map((entry) => {
    if (!isNode(entry)) throw new S3Error('MalformedXML');
    for (const name of childNames(entry)) {
      if (name !== 'Key' && name !== 'VersionId' && name !== 'ETag' && name !== 'LastModifiedTime' && name !== 'Size') {
        throw new S3Error('MalformedXML');
      }
    }
    const key = optionalLeaf(entry, 'Key');
    if (key === undefined) throw new S3Error('MalformedXML');
    // A key no object can have (too long, or with characters XML cannot carry back) refuses the whole
    // request: a per-key <Error> would echo it (a 200 KB key from character references, or bytes
    // that make the answer unreadable XML). The empty key stays a per-key error.
    const problem = key === '' ? undefined : keyProblem(key);
    if (problem) throw problem;
    const versionId = optionalLeaf(entry, 'VersionId');
    return versionId === undefined ? { key } : { key, versionId };
  });
  return { quiet: quietText === 'true', objects };
}

export const deleteObjects: OperationHandler = async (r) => {
  const { bucket, mayDelete } = await requireBucketPerKey(r, 'ObjectWrite');
  const request = parseDeleteRequest(await readVerifiedBody(r, { maxBytes: MAX_BODY_BYTES, requireDigest: true }));
  const deleted: XmlObject[] = [];
  const errors: XmlObject[] = [];
  for (const { key, versionId } of request.objects) {
    try {
      if (key === '') throw new S3Error('InvalidArgument', 'Object key must not be empty.');
      validateKey(key);
      if (!mayDelete(key, versionId)) throw new S3Error('AccessDenied');
      // A version that does not exist is reported deleted, as on AWS.
      const parsed = versionId === undefined ? undefined : parseVersionId(versionId, 'VersionId');
      const result = await removeObjectVersion(r.ctx, bucket.id, key, { versionId: parsed, events: await changeEvents(r, bucket, key) });
      if (!request.quiet) {
        // A delete marker made is reported with its id; a version removed by id echoes that id.
        deleted.push(
          versionId === undefined
            ? { Key: key, DeleteMarker: result.deleteMarker || undefined, DeleteMarkerVersionId: result.deleteMarker ? result.versionId : undefined }
            : { Key: key, VersionId: versionId, DeleteMarker: result.deleteMarker || undefined, DeleteMarkerVersionId: result.deleteMarker ? versionId : undefined },
        );
      }
    } catch (err) {
      if (!isS3Error(err) || err.status >= 500) throw err;
      errors.push({ Key: key, VersionId: versionId, Code: err.code, Message: err.message });
    }
  }
  return xmlResponse(toXml('DeleteResult', { Deleted: deleted, Error: errors }));
};
