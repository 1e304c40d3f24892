// kSigning derivation with a small LRU cache (four HMACs per request otherwise), and the HMAC a
// signature is made with under it.
import { createHmac } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { hmacKeyOf } from '../../hashing/hmac-key.js';

const cache = new LRUCache<string, Buffer>({ max: 1000 });

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

/** kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request"), uncached. */
export function computeSigningKey(secret: string, date: string, region: string, service: string): Buffer {
  const kDate = hmac('AWS4' + secret, date);
  const kRegion = hmac(kDate, region);
  const kService = hmac(kRegion, service);
  return hmac(kService, 'aws4_request');
}

/** Cached kSigning. The cache key is length-prefixed so no two distinct inputs can collide. */
export function deriveSigningKey(secret: string, date: string, region: string, service: string): Buffer {
  const key = `${secret.length}:${secret}${date.length}:${date}${region.length}:${region}${service}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const k = computeSigningKey(secret, date, region, service);
  cache.set(key, k);
  return k;
}

/** HMAC-SHA256 of `data` under a signing key (a request's, a chunk's, a trailer's or a POST policy's signature). */
export function signWithKey(signingKey: Buffer, data: string): Buffer {
  return createHmac('sha256', hmacKeyOf(signingKey)).update(data, 'utf8').digest();
}

/** For tests. */
export function clearSigningKeyCache(): void {
  cache.clear();
}
