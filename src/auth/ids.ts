// Random identifiers: access key ids, secret keys and row ids. All from the CSPRNG.
import { randomBytes } from 'node:crypto';

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

/** 32 lowercase hex characters (128 random bits), for user, bucket and blob ids. */
export function newId(): string {
  return randomBytes(16).toString('hex');
}
