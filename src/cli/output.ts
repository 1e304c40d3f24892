// How an admin command's result is printed: as JSON with --json; else a table for a list, `key: value`
// lines for one object (the S3 endpoint with what to make of it), a string as it is. And a failure:
// one line on stderr, and with --json the error object on stdout.
import { Presented } from './command.js';

/** The human output's endpoint line: the URL, and what to make of it. */
function endpointLine(endpoint: unknown, status: unknown): string {
  if (endpoint === null) return 'unknown: no server has started on this data directory yet (start it, or pass --public-url)';
  if (status === 'not-running') return `${String(endpoint)} (from when the server last ran on this data directory: it is not running now)`;
  if (status === 'unverified') return `${String(endpoint)} (recorded by the server when it started: whether it runs now cannot be told from here)`;
  return String(endpoint);
}

/** Renders rows as a left-aligned text table. */
function table(rows: Record<string, unknown>[]): string {
  const first = rows[0];
  if (!first) return '(none)';
  const cols = Object.keys(first);
  const cells = [cols.map((c) => c.toUpperCase()), ...rows.map((r) => cols.map((c) => String(r[c] ?? '')))];
  const widths = cols.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return cells.map((row) => row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}

function isCounts(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A value of a result that is an object (counts by name): on indented lines of its own. */
function counts(v: Record<string, unknown>): string {
  const entries = Object.entries(v);
  const width = Math.max(0, ...entries.map(([k]) => k.length));
  return entries.map(([k, x]) => `\n  ${k.padEnd(width)}  ${String(x)}`).join('');
}

function human(result: unknown): string {
  if (typeof result === 'string') return result;
  if (Array.isArray(result)) return table(result as Record<string, unknown>[]);
  const obj = result as Record<string, unknown>;
  const lines = Object.entries(obj)
    .filter(([k]) => k !== 'endpointStatus')
    .map(([k, v]) => (isCounts(v) ? `${k}:${counts(v)}` : `${(k + ':').padEnd(17)} ${k === 'endpoint' ? endpointLine(v, obj.endpointStatus) : String(v)}`));
  if ('secretAccessKey' in obj) lines.push('', 'The secret access key is shown only now: store it somewhere safe.');
  return lines.join('\n');
}

/** A command's result on stdout: JSON with --json, else for people (a Presented result: its face for each). */
export function printResult(json: boolean, result: unknown): void {
  const shown = result instanceof Presented ? (json ? result.json : result.human) : result;
  process.stdout.write((json ? JSON.stringify(shown) : human(shown)) + '\n');
}

/** A failed command or invocation: the message on stderr, and with --json the error object on stdout. */
export function fail(json: boolean, code: string, message: string): void {
  process.stderr.write(`s3edge: ${message}\n`);
  if (json) process.stdout.write(JSON.stringify({ error: { code, message } }) + '\n');
}
