import { randomBytes, randomUUID } from 'node:crypto';

/** A random, file-name-safe blob id: 26 base32 chars (130 bits). Never derived from an object key. */
export function newBlobId(): string {
  const bytes = randomBytes(17);
  let bits = 0;
  let value = 0;
  let out = '';
  const alphabet = '0123456789abcdefghijklmnopqrstuv';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5 && out.length < 26) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

/** Whether a name is a backend blob id (as newBlobId makes; older ids were longer): anything else in the store is not ours. */
export function isBackendBlobId(name: string): boolean {
  return /^[0-9a-z]{16,64}$/.test(name);
}

const INLINE_PREFIX = 'inline-';

/**
 * The id of a blob kept in the metadata database (inline_blobs) rather than in the storage backend.
 * The '-' never occurs in a backend blob id, so an inline id can never name a file.
 */
export function newInlineBlobId(): string {
  // randomUUID draws from a cached entropy pool: cheaper per PUT than randomBytes.
  return INLINE_PREFIX + randomUUID();
}

export function isInlineBlobId(blobId: string): boolean {
  return blobId.startsWith(INLINE_PREFIX);
}

/** A blob that is not there (any more), in the shape the StorageBackend contract promises (code 'ENOENT'). */
export function blobGone(blobId: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`blob ${blobId} is gone`), { code: 'ENOENT' });
}
