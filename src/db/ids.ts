// Random identifiers: access key ids, secret keys and row ids. All from the CSPRNG.
import { randomBytes, randomFillSync, randomUUID } from 'node:crypto';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** `count` characters of RFC 4648 base32 (A-Z, 2-7), 5 random bits each. */
function randomBase32(count: number): string {
  const bytes = randomBytes(Math.ceil((count * 5) / 8));
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = ((value << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5 && out.length < count) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

/** 20 characters: `SE` + 18 base32 characters (90 random bits), like AWS's `AKIA...` ids. */
export function newAccessKeyId(): string {
  return 'SE' + randomBase32(18);
}

/** 40 characters of the base64url alphabet (240 random bits). */
export function newSecretKey(): string {
  return randomBytes(30).toString('base64url');
}

/**
 * 32 lowercase hex characters, for user, bucket, asset and event ids: a v4 UUID without its dashes
 * (122 random bits). randomUUID draws from a cached entropy pool, about 6x cheaper per call than
 * randomBytes(16), which counted on the CDN's hot path (every download is a usage event).
 */
export function newId(): string {
  const u = randomUUID();
  return u.slice(0, 8) + u.slice(9, 13) + u.slice(14, 18) + u.slice(19, 23) + u.slice(24);
}

/**
 * Like newId (32 lowercase hex characters), but ordered by time: 48 bits of Unix milliseconds, then 80
 * random bits (UUIDv7's layout, without dashes and version bits). For rows written in bulk under a
 * unique index (the CDN's download usage events): a random id lands each insert on a random page of
 * the index, which cost 3-4x the row itself once the table outgrew the page cache; these append.
 */
export function newTimeOrderedId(nowMs: number = Date.now()): string {
  return Math.floor(nowMs).toString(16).padStart(12, '0').slice(-12) + randomHex(10);
}

/**
 * Random bytes drawn 4 KiB at a time (as randomUUID's cache does), for the ids made in bulk: slicing a
 * UUID into pieces was 6% of the request log writer's thread.
 */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

/** `bytes` random bytes as lowercase hex. */
function randomHex(bytes: number): string {
  if (poolAt + bytes > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const hex = pool.toString('hex', poolAt, poolAt + bytes);
  poolAt += bytes;
  return hex;
}
