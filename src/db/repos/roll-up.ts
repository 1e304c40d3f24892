// The listing walk S3 shares between ListObjects and ListMultipartUploads: rows in key order under a
// prefix, each key cut at the first delimiter past the prefix into a common prefix (which counts as one
// entry and is skipped past with one re-query), up to a maximum. The repositories supply the query
// and the cursor, which differ (an object key; a key and an upload id).

/**
 * The smallest string greater than every string that starts with `prefix`, in UTF-8 byte order
 * (bumps the last code point; falls back to appending U+10FFFF, above any UTF-8 continuation).
 */
export function prefixUpperBound(prefix: string): string {
  const last = prefix.charCodeAt(prefix.length - 1);
  if (last < 0xd7ff) return prefix.slice(0, -1) + String.fromCharCode(last + 1);
  return prefix + '\u{10FFFF}';
}

/**
 * A marker that is itself a common prefix (one delimiter, at its end, past `prefix`) means every key
 * under it was already returned: the bound to resume from, else undefined.
 */
export function markerPrefixBound(marker: string, prefix: string, delimiter: string): string | undefined {
  if (!delimiter || !marker.startsWith(prefix) || !marker.endsWith(delimiter)) return undefined;
  const rest = marker.slice(prefix.length);
  return rest.indexOf(delimiter) === rest.length - delimiter.length ? prefixUpperBound(marker) : undefined;
}

export interface RollUpWalk<R extends { key: string }, C> {
  prefix: string;
  delimiter: string;
  /** Entries (rows plus common prefixes) at most. */
  max: number;
  start: C;
  /** Up to `limit` rows after `cursor`, in key order. */
  fetch(cursor: C, limit: number): Promise<R[]>;
  afterRow(row: R): C;
  /** The cursor that resumes at `upperBound`, past every key of a common prefix. */
  afterPrefix(upperBound: string): C;
  onRow(row: R): void;
  onPrefix(commonPrefix: string): void;
}

/** Walks one page; returns whether entries were left over (the page is truncated). */
export async function walkRolledUp<R extends { key: string }, C>(w: RollUpWalk<R, C>): Promise<boolean> {
  if (w.max <= 0) return false;
  const limit = Math.min(w.max + 1, 1001);
  let cursor = w.start;
  let count = 0;
  for (;;) {
    const rows = await w.fetch(cursor, limit);
    if (rows.length === 0) return false;
    let requery = false;
    for (const row of rows) {
      if (!row.key.startsWith(w.prefix)) return false;
      if (count === w.max) return true;
      count++;
      const rest = row.key.slice(w.prefix.length);
      const at = w.delimiter ? rest.indexOf(w.delimiter) : -1;
      if (at >= 0) {
        const commonPrefix = w.prefix + rest.slice(0, at + w.delimiter.length);
        w.onPrefix(commonPrefix);
        cursor = w.afterPrefix(prefixUpperBound(commonPrefix));
        requery = true;
        break;
      }
      w.onRow(row);
      cursor = w.afterRow(row);
    }
    if (!requery && rows.length < limit) return false;
  }
}
