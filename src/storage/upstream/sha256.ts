// SigV4 needs a hash constructor in smithy's Checksum shape; node:crypto's SHA-256 does the work.
import { createHash, createHmac, createSecretKey, type Hash, type Hmac, type KeyObject } from 'node:crypto';

type Input = string | ArrayBuffer | ArrayBufferView;

function toBuffer(data: Input): Buffer | string {
  if (typeof data === 'string') return data;
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

/**
 * KeyObjects of the keys smithy signs with, by the key's own object: smithy hands its cached signing
 * key to every request's HMAC, and Node 24's createHmac makes a KeyObject of a Buffer key on every call
 * (~11 µs); one made once costs ~2 µs a call.
 */
const keyObjects = new WeakMap<object, KeyObject>();

function hmacKey(secret: Input): Buffer | string | KeyObject {
  if (typeof secret === 'string' || secret.byteLength === 0) return toBuffer(secret);
  let key = keyObjects.get(secret);
  if (key === undefined) {
    key = createSecretKey(toBuffer(secret) as Buffer);
    keyObjects.set(secret, key);
  }
  return key;
}

export class Sha256 {
  private hash: Hash | Hmac;

  constructor(private readonly secret?: Input) {
    this.hash = this.fresh();
  }

  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', hmacKey(this.secret));
  }

  update(data: Input): void {
    this.hash.update(toBuffer(data));
  }

  async digest(): Promise<Uint8Array> {
    return this.hash.digest();
  }

  reset(): void {
    this.hash = this.fresh();
  }
}
