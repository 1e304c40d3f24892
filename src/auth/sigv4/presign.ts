// Presigned S3 URLs (query-string SigV4, UNSIGNED-PAYLOAD) made by the gateway itself, for the
// dashboard's object browser: built from the same canonical-request pieces the verifier computes
// (canonical.ts, signing-key.ts), so what is signed here is what verify.ts checks.
import { ALGORITHM, awsUriEncode, canonicalQueryString, canonicalRequest, parseQuery, reencodePath, stringToSign } from './canonical.js';
import { deriveSigningKey, signWithKey } from './signing-key.js';

export interface PresignRequest {
  method: 'GET' | 'PUT' | 'DELETE' | 'HEAD';
  /** The Host the client will send (signed). */
  host: string;
  bucket: string;
  /** Absent: the bucket itself (ListObjectsV2 and the like). */
  key?: string;
  /** The operation's own query parameters, decoded (list-type, prefix, response-content-disposition, ...). */
  query?: Record<string, string>;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** Seconds the URL is good for (1..604800). */
  expiresIn: number;
  now: Date;
}

function amzDateOf(d: Date): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}Z$/, 'Z');
}

/** The path and query of a presigned path-style URL: `/bucket/key?...&X-Amz-Signature=...`. */
export function presignPath(r: PresignRequest): string {
  const path = `/${awsUriEncode(r.bucket)}${r.key === undefined ? '' : `/${awsUriEncode(r.key, false)}`}`;
  const amzDate = amzDateOf(r.now);
  const date = amzDate.slice(0, 8);
  const scope = `${date}/${r.region}/s3/aws4_request`;
  const params: [string, string][] = [
    ...Object.entries(r.query ?? {}),
    ['X-Amz-Algorithm', ALGORITHM],
    ['X-Amz-Credential', `${r.accessKeyId}/${scope}`],
    ['X-Amz-Date', amzDate],
    ['X-Amz-Expires', String(r.expiresIn)],
    ['X-Amz-SignedHeaders', 'host'],
  ];
  const rawQuery = params.map(([n, v]) => `${awsUriEncode(n)}=${awsUriEncode(v)}`).join('&');
  const canonical = canonicalRequest({
    method: r.method,
    canonicalUri: reencodePath(path),
    canonicalQuery: canonicalQueryString(parseQuery(rawQuery)),
    canonicalHeaders: `host:${r.host.trim()}\n`,
    signedHeaders: ['host'],
    payloadHash: 'UNSIGNED-PAYLOAD',
  });
  const signature = signWithKey(deriveSigningKey(r.secretAccessKey, date, r.region, 's3'), stringToSign(amzDate, scope, canonical)).toString('hex');
  return `${path}?${rawQuery}&X-Amz-Signature=${signature}`;
}
