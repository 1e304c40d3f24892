// kSigning derivation with a small LRU cache (four HMACs per request otherwise), and the HMAC a
// signature is made with under it.
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';

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

/**
 * Node 24's createHmac makes a KeyObject of a Buffer key on every call (~11 µs, more than the HMAC);
 * one made once per signing key, which the cache above hands out as the same Buffer, costs ~2 µs a call.
 */
const keyObjects = new WeakMap<Buffer, KeyObject>();

/** HMAC-SHA256 of `data` under a signing key (a request's, a chunk's, a trailer's or a POST policy's signature). */
export function signWithKey(signingKey: Buffer, data: string): Buffer {
  let key = keyObjects.get(signingKey);
  if (key === undefined) {
    key = createSecretKey(signingKey);
    keyObjects.set(signingKey, key);
  }
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

/** For tests. */
export function clearSigningKeyCache(): void {
  cache.clear();
}
