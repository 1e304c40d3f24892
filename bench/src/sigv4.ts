// A small SigV4 header signer for the load generator: path-style S3 requests whose keys use only
// unreserved characters and '/', so the wire path is the canonical path. The signing key is derived
// once per day and the x-amz-date string once per second, so a request costs one SHA-256 of the
// canonical request and one HMAC.
import { createHash, createHmac } from 'node:crypto';

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** RFC 3986 escaping as SigV4 wants it for query names and values. */
export function escapeUri(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Query string in canonical order and escaping: what is signed is what is sent. */
export function canonicalQuery(query: Readonly<Record<string, string>>): string {
  return Object.keys(query)
    .sort()
    .map((k) => `${escapeUri(k)}=${escapeUri(query[k] ?? '')}`)
    .join('&');
}

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

function hmac(key: Buffer | string, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

export class SigV4Signer {
  private keyDate = '';
  private signingKey: Buffer = Buffer.alloc(0);
  private dateSecond = -1;
  private amzDate = '';

  constructor(
    private readonly credentials: Credentials,
    private readonly region = 'us-east-1',
    private readonly service = 's3',
  ) {}

  private now(): string {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.dateSecond) {
      this.dateSecond = second;
      this.amzDate = new Date(second * 1000).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
    }
    return this.amzDate;
  }

  /**
   * A presigned request target (query-string auth, as `aws s3 presign` makes): `path` and the
   * X-Amz-* query with X-Amz-Signature, valid for `expiresSeconds` from now; signs only the host.
   * For load generators that cannot sign each request (wrk).
   */
  presign(method: string, host: string, path: string, expiresSeconds: number): string {
    const amzDate = this.now();
    const signingKey = this.keyFor(amzDate.slice(0, 8));
    const scope = `${amzDate.slice(0, 8)}/${this.region}/${this.service}/aws4_request`;
    const query = canonicalQuery({
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Credential': `${this.credentials.accessKeyId}/${scope}`,
      'X-Amz-Date': amzDate,
      'X-Amz-Expires': String(expiresSeconds),
      'X-Amz-SignedHeaders': 'host',
    });
    const canonical = `${method}\n${path}\n${query}\nhost:${host}\n\nhost\n${UNSIGNED_PAYLOAD}`;
    const stringToSign = `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${sha256Hex(canonical)}`;
    const signature = createHmac('sha256', signingKey).update(stringToSign, 'utf8').digest('hex');
    return `${path}?${query}&X-Amz-Signature=${signature}`;
  }

  private keyFor(shortDate: string): Buffer {
    if (shortDate !== this.keyDate) {
      this.keyDate = shortDate;
      this.signingKey = hmac(hmac(hmac(hmac(`AWS4${this.credentials.secretAccessKey}`, shortDate), this.region), this.service), 'aws4_request');
    }
    return this.signingKey;
  }

  /**
   * Headers to send: host, x-amz-date, x-amz-content-sha256 and authorization.
   * `path` is the escaped path, `query` the canonical query string ('' for none).
   */
  sign(method: string, host: string, path: string, query: string, payloadHash: string): Record<string, string> {
    const amzDate = this.now();
    const shortDate = amzDate.slice(0, 8);
    const signingKey = this.keyFor(shortDate);
    const scope = `${shortDate}/${this.region}/${this.service}/aws4_request`;
    const canonical = `${method}\n${path}\n${query}\nhost:${host}\nx-amz-content-sha256:${payloadHash}\nx-amz-date:${amzDate}\n\nhost;x-amz-content-sha256;x-amz-date\n${payloadHash}`;
    const stringToSign = `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${sha256Hex(canonical)}`;
    const signature = createHmac('sha256', signingKey).update(stringToSign, 'utf8').digest('hex');
    return {
      host,
      'x-amz-date': amzDate,
      'x-amz-content-sha256': payloadHash,
      authorization: `AWS4-HMAC-SHA256 Credential=${this.credentials.accessKeyId}/${scope}, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=${signature}`,
    };
  }
}
