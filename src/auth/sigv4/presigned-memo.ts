// Presigned URLs that verified, remembered (bounded): the same URL is typically fetched again and
// again (a link handed to a browser, a player's range requests, a CDN pulling from S3), and checking its
// signature anew each time (parsing and re-encoding the query, SHA-256 of the canonical request, the
// HMAC) was a fifth of a 4 KiB presigned GET. A URL's signature covers exactly what the memo's key
// holds (method, Host, the request target as sent, the payload hash header), so a repeat is the same
// verification with the same answer; what it does not cover is checked on every request as before:
// the time window (not yet valid, expired), the key still having the secret that verified it (a key
// deleted or rotated misses), and no x-amz-* header outside the signature. Only URLs whose signed
// headers are `host` alone are kept (what presigners make); anything else is verified every time.
import type { LRUCache } from 'lru-cache';
import { lazyLru } from '../../lazy-lru.js';
import type { VerifiedAuth } from './types.js';

/** What a presigned request's signature covers, as sent. */
export interface PresignedRequest {
  method: string;
  host: string | undefined;
  rawPath: string;
  rawQuery: string;
  contentSha256: string | undefined;
}

export interface PresignedEntry {
  auth: VerifiedAuth;
  /** The secret the signature verified with. */
  secret: string;
  /** X-Amz-Date, Unix ms. */
  time: number;
  /** X-Amz-Expires, in ms. */
  expiresMs: number;
}

interface Remembered extends PresignedEntry {
  request: PresignedRequest;
}

const SIGNATURE_PARAM = 'X-Amz-Signature=';

/**
 * Entries are found by the URL's X-Amz-Signature (64 hex digits: cheap to hash) and hold the request
 * they verified, compared field by field: hashing the whole request line as one key string was most of
 * a repeat's cost.
 */
export class PresignedMemo {
  private readonly entries: () => LRUCache<string, Remembered>;

  constructor(max = 10_000) {
    this.entries = lazyLru({ max });
  }

  /** The X-Amz-Signature value of a raw query string, or undefined. */
  static signatureOf(rawQuery: string): string | undefined {
    const at = rawQuery.indexOf(SIGNATURE_PARAM);
    if (at < 0 || (at > 0 && rawQuery.charCodeAt(at - 1) !== 0x26 /* & */)) return undefined;
    const from = at + SIGNATURE_PARAM.length;
    const end = rawQuery.indexOf('&', from);
    return rawQuery.slice(from, end < 0 ? rawQuery.length : end);
  }

  /** The entry of exactly this request, as it verified before. */
  get(req: PresignedRequest): PresignedEntry | undefined {
    const signature = PresignedMemo.signatureOf(req.rawQuery);
    if (signature === undefined) return undefined;
    const entry = this.entries().get(signature);
    if (entry === undefined) return undefined;
    const was = entry.request;
    const same =
      was.rawQuery === req.rawQuery && was.rawPath === req.rawPath && was.method === req.method && was.host === req.host && was.contentSha256 === req.contentSha256;
    return same ? entry : undefined;
  }

  set(req: PresignedRequest, entry: PresignedEntry): void {
    const signature = PresignedMemo.signatureOf(req.rawQuery);
    if (signature !== undefined) this.entries().set(signature, { ...entry, request: req });
  }

  get size(): number {
    return this.entries().size;
  }
}
