// Signed CDN URLs: `<publicUrl>?expires=<unix seconds>&signature=<base64url HMAC-SHA256>`. The MAC covers
// the asset id, its file name and the expiry, under a key derived from the master key by HKDF, so the
// master key itself never signs anything and rotating it invalidates every URL. Pure functions with an
// injected clock: the CDN verifies what the API issued.
import { createHmac, createSecretKey, hkdfSync, timingSafeEqual, type KeyObject } from 'node:crypto';

export const SIGNING_INFO = 's3edge cdn url signing';
export const DEFAULT_EXPIRES_IN = 3600;
export const MIN_EXPIRES_IN = 1;
/** Seven days, like S3 presigned URLs. */
export const MAX_EXPIRES_IN = 604_800;

export function deriveSigningKey(masterKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), SIGNING_INFO, 32));
}

export interface SignedTarget {
  id: string;
  fileName: string;
}

export interface Signature {
  /** Unix seconds. */
  expires: number;
  signature: string;
}

/** Length-prefixed fields: no id/name/expiry split can collide with another. */
function mac(key: KeyObject, target: SignedTarget, expires: number): Buffer {
  const h = createHmac('sha256', key);
  for (const field of [target.id, target.fileName, String(expires)]) {
    const bytes = Buffer.from(field, 'utf8');
    const len = Buffer.alloc(4);
    len.writeUInt32BE(bytes.length);
    h.update(len).update(bytes);
  }
  return h.digest();
}

export class UrlSigner {
  /** A KeyObject made once: Node 24's createHmac makes one of a Buffer key on every call (~11 µs). */
  private readonly key: KeyObject;

  constructor(
    key: Buffer,
    private readonly now: () => Date,
  ) {
    this.key = createSecretKey(key);
  }

  static fromMasterKey(masterKey: Buffer, now: () => Date): UrlSigner {
    return new UrlSigner(deriveSigningKey(masterKey), now);
  }

  /** `expiresIn` seconds from now; the caller validated the range. */
  sign(target: SignedTarget, expiresIn: number): Signature {
    const expires = Math.floor(this.now().getTime() / 1000) + expiresIn;
    return { expires, signature: mac(this.key, target, expires).toString('base64url') };
  }

  /** The query string to append to the asset's publicUrl. */
  static query(sig: Signature): string {
    return `expires=${sig.expires}&signature=${sig.signature}`;
  }

  /**
   * True for a signature we issued for this asset and name that has not expired (valid through the
   * `expires` second). Malformed values are simply invalid.
   */
  verify(target: SignedTarget, expiresRaw: string, signatureRaw: string): boolean {
    if (!/^\d{1,12}$/.test(expiresRaw) || !/^[A-Za-z0-9_-]{43}$/.test(signatureRaw)) return false;
    const expires = Number(expiresRaw);
    const nowSeconds = Math.floor(this.now().getTime() / 1000);
    // Expired, or further out than we ever sign: not a URL we issued.
    if (expires < nowSeconds || expires > nowSeconds + MAX_EXPIRES_IN) return false;
    const given = Buffer.from(signatureRaw, 'base64url');
    const expected = mac(this.key, target, expires);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
