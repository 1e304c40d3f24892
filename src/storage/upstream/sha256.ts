// SigV4 needs a hash constructor in smithy's Checksum shape; node:crypto's SHA-256 does the work.
import { createHash, createHmac, type Hash, type Hmac, type KeyObject } from 'node:crypto';
import { hmacKeyOf } from '../../hashing/hmac-key.js';

type Input = string | ArrayBuffer | ArrayBufferView;

function toBuffer(data: Input): Buffer | string {
  if (typeof data === 'string') return data;
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

/** A string as it is; bytes as a KeyObject made once per key (smithy hands its cached signing key to every request's HMAC). */
function hmacKey(secret: Input): Buffer | string | KeyObject {
  return typeof secret === 'string' || secret.byteLength === 0 ? toBuffer(secret) : hmacKeyOf(secret);
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
