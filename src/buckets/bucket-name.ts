// AWS general-purpose bucket naming rules, plus the names of our management routes.
import { S3Error } from '../errors/s3-errors.js';

/** Paths of the management API, the dashboard, health and metrics on the S3 port (/api, /storage, /dashboard, /healthz, /readyz, /metrics). */
export const RESERVED_BUCKET_NAMES: ReadonlySet<string> = new Set(['api', 'storage', 'dashboard', 'healthz', 'readyz', 'metrics']);

const PREFIXES = ['xn--', 'sthree-', 'amzn-s3-demo-'] as const;
const SUFFIXES = ['-s3alias', '--ol-s3', '.mrap', '--x-s3', '--table-s3'] as const;

/** Why `name` is not a valid bucket name, or undefined if it is. */
export function bucketNameProblem(name: string): string | undefined {
  if (name.length < 3 || name.length > 63) return 'must be 3 to 63 characters long';
  if (!/^[a-z0-9.-]+$/.test(name)) return 'may contain only lowercase letters, digits, dots and hyphens';
  if (!/^[a-z0-9]/.test(name) || !/[a-z0-9]$/.test(name)) return 'must begin and end with a letter or digit';
  if (name.includes('..')) return 'must not contain two adjacent dots';
  // Each dot-separated part is a DNS label in virtual-host addressing: no label may begin or end with '-'.
  if (name.includes('.-') || name.includes('-.')) return 'must not contain a hyphen next to a dot';
  if (/^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name)) return 'must not be formatted as an IP address';
  const prefix = PREFIXES.find((p) => name.startsWith(p));
  if (prefix) return `must not begin with '${prefix}'`;
  const suffix = SUFFIXES.find((s) => name.endsWith(s));
  if (suffix) return `must not end with '${suffix}'`;
  if (RESERVED_BUCKET_NAMES.has(name)) return 'is reserved';
  return undefined;
}

/** Throws S3Error('InvalidBucketName') for a name AWS would refuse, or a reserved one. */
export function validateBucketName(name: string): void {
  const problem = bucketNameProblem(name);
  if (problem) throw new S3Error('InvalidBucketName', `The specified bucket is not valid: the name ${problem}.`, { BucketName: name });
}
