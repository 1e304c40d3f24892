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

export interface PresignedEntry {
  auth: VerifiedAuth;
  /** The secret the signature verified with. */
  secret: string;
  /** X-Amz-Date, Unix ms. */
  time: number;
  /** X-Amz-Expires, in ms. */
  expiresMs: number;
}

export class PresignedMemo {
  private readonly entries: () => LRUCache<string, PresignedEntry>;

  constructor(max = 10_000) {
    this.entries = lazyLru({ max });
  }

  /** What a presigned request's signature covers, as one string (Host and target as sent). */
  static keyOf(method: string, host: string | undefined, rawPath: string, rawQuery: string, contentSha256: string | undefined): string {
    return `${method}\n${host ?? ''}\n${rawPath}?${rawQuery}\n${contentSha256 ?? ''}`;
  }

  get(key: string): PresignedEntry | undefined {
    return this.entries().get(key);
  }

  set(key: string, entry: PresignedEntry): void {
    this.entries().set(key, entry);
  }

  get size(): number {
    return this.entries().size;
  }
}
