// --storage of `users set-quota` and `buckets set-quota`: a size, or `none` to remove the quota.
import { parseSize } from '../config/load.js';
import { formatBytes } from '../credits/quotas.js';
import { AdminError } from './command.js';

export const QUOTA_FORM = "a size like 10GiB, 500MB or 1048576 (bytes; units B, KB, MB, GB, TB = 1000-based, KiB, MiB, GiB, TiB = 1024-based), or 'none' to remove the quota";

/** The quota in bytes, or null for `none`; an AdminError naming the accepted form otherwise. */
export function parseQuotaSize(raw: string): number | null {
  if (raw.trim().toLowerCase() === 'none') return null;
  // parseSize takes a bare number of bytes and decimal fractions of a unit (1.5GiB), never a sign.
  const bytes = parseSize(raw);
  if (bytes === undefined) throw new AdminError('InvalidSize', `--storage must be ${QUOTA_FORM} (got '${raw}')`);
  return bytes;
}

/** A quota as the commands print it: `10 GiB`, or `none`. */
function quotaText(bytes: number | null): string {
  return bytes === null ? 'none' : formatBytes(bytes);
}

/** What `set-quota` prints for a user or a bucket: the quota set and what is stored now, as bytes and as text. */
export function quotaAnswer(name: string, quota: number | null, storedBytes: number): Record<string, unknown> {
  return { name, quota: quotaText(quota), quotaBytes: quota, storedBytes, stored: quotaText(storedBytes) };
}
