// x-amz-copy-source read: the source bucket, key and version of CopyObject and UploadPartCopy. Pure.
import { S3Error } from '../errors/s3-errors.js';
import { parseQuery } from './addressing.js';

export interface CopySourceRef {
  bucket: string;
  key: string;
  versionId?: string;
}

function invalid(message: string): S3Error {
  return new S3Error('InvalidArgument', message, { ArgumentName: 'x-amz-copy-source' });
}

/** `bucket/key` or `/bucket/key`, percent-encoded, optionally `?versionId=...`. Pure; exported for tests. */
export function parseCopySourceHeader(raw: string | undefined): CopySourceRef {
  if (raw === undefined || raw === '') throw invalid('Copy Source must mention the source bucket and key: sourcebucket/sourcekey');
  // A literal '?' starts the query: clients percent-encode a '?' that belongs to the key.
  const q = raw.indexOf('?');
  const path = (q < 0 ? raw : raw.slice(0, q)).replace(/^\//, '');
  const query = q < 0 ? new Map<string, string>() : parseQuery(raw.slice(q + 1));
  const slash = path.indexOf('/');
  if (slash <= 0 || slash === path.length - 1) {
    throw invalid('Copy Source must mention the source bucket and key: sourcebucket/sourcekey');
  }
  let bucket: string;
  let key: string;
  try {
    bucket = decodeURIComponent(path.slice(0, slash));
    key = decodeURIComponent(path.slice(slash + 1));
  } catch {
    throw invalid('Invalid copy source encoding.');
  }
  const versionId = query.get('versionId');
  return versionId === undefined ? { bucket, key } : { bucket, key, versionId };
}
