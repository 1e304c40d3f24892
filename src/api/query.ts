// Lenient query parameters: SPEC.md §7 says an invalid page or limit is not an error, defaults apply.
import { badRequest } from './errors.js';
import { parseCursor, type PageCursor } from '../db/repos/page-cursor.js';

/**
 * The management API's query string parser: every key maps to one string, the first value given
 * (`page=2&page=3` is page 2 on every route), so no route sees an array it was not written for.
 * A null-prototype object: `__proto__` or `constructor` are ordinary keys.
 */
export function parseQueryFirstValue(raw: string): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const [key, value] of new URLSearchParams(raw)) if (!(key in out)) out[key] = value;
  return out;
}

/** A positive decimal integer (no sign, fraction or exponent) from one query value; else undefined. */
export function positiveInt(raw: unknown): number | undefined {
  if (typeof raw !== 'string') return undefined;
  const s = raw.trim();
  if (!/^\d{1,15}$/.test(s)) return undefined;
  const n = Number(s);
  return n >= 1 ? n : undefined;
}

/** A whole number in [min, max] from a query value; anything else (absent, text, out of range) -> fallback. Values above max are capped. */
export function intParam(raw: unknown, fallback: number, min: number, max: number): number {
  const n = positiveInt(raw);
  if (n === undefined || n < min) return fallback;
  return Math.min(n, max);
}

// Strict parameters, for filters: a value that cannot mean what the caller meant is a 400 naming it,
// since an empty page would look like an answer.

/** A query value, trimmed; undefined when absent or empty. */
export function textParam(query: Record<string, unknown>, name: string): string | undefined {
  const v = query[name];
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/** A time in ISO 8601 as Unix ms; undefined when absent. */
export function timeParam(query: Record<string, unknown>, name: string): number | undefined {
  const v = textParam(query, name);
  if (v === undefined) return undefined;
  const ms = Date.parse(v);
  if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(ms)) throw badRequest(`${name} must be a time in ISO 8601, like 2026-12-03T08:00:00Z`);
  return ms;
}

/** `cursor`: a page's nextCursor; null when absent. */
export function cursorParam(query: Record<string, unknown>): PageCursor | null {
  const raw = textParam(query, 'cursor');
  if (raw === undefined) return null;
  const cursor = parseCursor(raw);
  if (cursor === undefined) throw badRequest("cursor must be a page's nextCursor, as given");
  return cursor;
}

/**
 * `from` and `to` (ISO 8601) as a window of Unix ms, both ends included: `to` defaults to now, `from`
 * to `defaultFrom(to)`. `from` after a given `to` is a 400; a window that starts later than now is
 * empty, not wrong.
 */
export function windowParams(query: Record<string, unknown>, nowMs: number, defaultFrom: (toMs: number) => number): { fromMs: number; toMs: number } {
  const to = timeParam(query, 'to');
  const fromMs = timeParam(query, 'from') ?? defaultFrom(to ?? nowMs);
  if (to !== undefined && fromMs > to) throw badRequest('from must not be after to');
  return { fromMs, toMs: to ?? Math.max(nowMs, fromMs) };
}
