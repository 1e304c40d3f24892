// Range: bytes=a-b | a- | -n. One range only (as S3); unparseable headers are ignored (RFC 9110).
import { S3Error } from '../errors/s3-errors.js';

/** A byte range, first and last byte inclusive, as HTTP's Range names it. */
export interface ReadRange {
  start: number;
  /** Inclusive. */
  end: number;
}

export function parseRange(header: string | undefined, size: number): ReadRange | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  const unsatisfiable = (): never => {
    throw new S3Error('InvalidRange', undefined, { ActualObjectSize: String(size), RangeRequested: header }, {
      'content-range': `bytes */${size}`,
    });
  };
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) unsatisfiable();
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return undefined;
  if (start >= size) unsatisfiable();
  return { start, end };
}
