// SigV4 needs a hash constructor in smithy's Checksum shape; node:crypto's SHA-256 does the work.
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';

type Input = string | ArrayBuffer | ArrayBufferView;

function toBuffer(data: Input): Buffer | string {
  if (typeof data === 'string') return data;
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

export class Sha256 {
  private hash: Hash | Hmac;

  constructor(private readonly secret?: Input) {
    this.hash = this.fresh();
  }

  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', toBuffer(this.secret));
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
