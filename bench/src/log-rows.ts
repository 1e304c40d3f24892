// --log-rows: what the request log's rows cost the writer thread, per request, on SQLite. The server's
// own code (dist/): a fresh metadata database with every migration, the log writer thread's PRAGMAs,
// CdnLogRepo.insertBatch with flushes of 4096 records (a loaded server flushes half its 10,000-record
// buffer at once; the repo writes them in statements of 32 rows, one transaction), each flush encoded
// and decoded as it crosses to the thread (analytics/record-batch.ts); the decode and the inserts timed. Three kinds of record, rounds interleaved: a CDN hit that served
// a body (its log row and its download usage event, as every CDN hit writes), a request with no body
// served (the log row alone), and the proxied request's row. CPU time of this process (the inserts
// run on its main thread here), per record. Issue 30's CDN hit at two workers must fit its whole
// process's CPU in ~0.6x of a bare node:http answer's; these rows are the largest part of it that is
// not the event loop (docs/ARCHITECTURE.md, "What the rest of issue 30's aims would take").
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './targets.js';
import { median } from './workloads.js';

export interface LogRowsOptions {
  rounds: number;
  /** Records inserted per kind and round, in flushes of `flush`. */
  records: number;
  /** Records a flush (one transaction). */
  flush: number;
  /** Records inserted before the first round, so that the table's indexes are not tiny. */
  preload: number;
  out: string;
  command: string;
}

export const LOG_ROW_KINDS = ['CDN hit (row + download event)', 'CDN request, no body (row)', 'proxied request (row)'] as const;
export type LogRowKind = (typeof LOG_ROW_KINDS)[number];

export interface LogRowsResult {
  /** µs of CPU per record, per kind, one figure per round. */
  perRecord: Record<LogRowKind, number[]>;
  /** The flush's decode alone (no SQLite), per record, one figure per round. */
  codecPerRecord: number[];
  /** Rows in the tables at the end (the preload's included): what the inserts wrote. */
  rows: { requests: number; downloadEvents: number };
  /** The report written to `out`. */
  report: string;
}

export function logRowsResultsFile(): string {
  return join(repoRoot(), 'bench', 'RESULTS-log-rows.md');
}

interface Repo {
  insertBatch(records: readonly unknown[]): Promise<void>;
}

export async function runLogRowsBench(opts: LogRowsOptions): Promise<LogRowsResult> {
  const dist = (p: string) => pathToFileURL(join(repoRoot(), 'dist', 'src', p)).href;
  const { openDatabase } = (await import(dist('db/open.js'))) as { openDatabase: (file: string) => Db };
  const { SqliteStore } = (await import(dist('db/store/sqlite-store.js'))) as { SqliteStore: new (db: Db) => unknown };
  const { CdnLogRepo } = (await import(dist('db/repos/cdn-log.js'))) as { CdnLogRepo: new (store: unknown) => Repo };
  const { encodeRecordBatch, decodeRecordBatch } = (await import(dist('analytics/record-batch.js'))) as {
    encodeRecordBatch: (r: readonly unknown[]) => string;
    decodeRecordBatch: (s: string) => unknown[];
  };
  const dir = await mkdtemp(join(tmpdir(), 's3edge-bench-log-rows-'));
  try {
    const db = openDatabase(join(dir, 'meta.db'));
    // As the writer thread (analytics/log-writer-worker.ts) sets its connection.
    db.pragma('synchronous = NORMAL');
    db.pragma('wal_autocheckpoint = 0');
    db.pragma('temp_store = MEMORY');
    const owner = 'f'.repeat(32);
    db.prepare('INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)').run(owner, 'bench-log-rows', Date.now());
    const repo = new CdnLogRepo(new SqliteStore(db));
    const checkpoint = () => db.pragma('wal_checkpoint(TRUNCATE)');
    // Request times as a server's under load: 32 a millisecond, never going back (the download events'
    // time-ordered ids append to their unique index, as they do in a server).
    let clock = Date.now();
    const make = (kind: LogRowKind, n: number): unknown[] => {
      const out: unknown[] = [];
      for (let i = 0; i < n; i++, clock += 1 / 32) out.push(recordOf(kind, owner, Math.floor(clock)));
      return out;
    };
    // Timed per flush as the writer thread does it: the decode and the inserts. The records and their
    // encoding are the event loop's (made per flush, so they die young as a server's do).
    const insert = async (kind: LogRowKind, n: number): Promise<number> => {
      let micros = 0;
      for (let at = 0; at < n; at += opts.flush) {
        const text = encodeRecordBatch(make(kind, Math.min(opts.flush, n - at)));
        const start = process.cpuUsage();
        await repo.insertBatch(decodeRecordBatch(text));
        const used = process.cpuUsage(start);
        micros += used.user + used.system;
      }
      checkpoint(); // the checkpointer thread's work, not the writer's: outside the timing
      return micros / n;
    };
    for (const kind of LOG_ROW_KINDS) await insert(kind, Math.ceil(opts.preload / LOG_ROW_KINDS.length));
    const perRecord = Object.fromEntries(LOG_ROW_KINDS.map((k) => [k, [] as number[]])) as unknown as Record<LogRowKind, number[]>;
    const codecPerRecord: number[] = [];
    for (let round = 0; round < opts.rounds; round++) {
      const order = LOG_ROW_KINDS.map((_, i) => LOG_ROW_KINDS[(i + round) % LOG_ROW_KINDS.length] as LogRowKind);
      for (const kind of order) perRecord[kind].push(await insert(kind, opts.records));
      let micros = 0;
      for (let at = 0; at < opts.records; at += opts.flush) {
        const text = encodeRecordBatch(make(LOG_ROW_KINDS[0], Math.min(opts.flush, opts.records - at)));
        const start = process.cpuUsage();
        decodeRecordBatch(text);
        const used = process.cpuUsage(start);
        micros += used.user + used.system;
      }
      codecPerRecord.push(micros / opts.records);
    }
    const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    const rows = { requests: count('SELECT count(*) AS n FROM cdn_requests'), downloadEvents: count("SELECT count(*) AS n FROM usage_events WHERE event_type = 'download'") };
    db.close();
    const report = renderLogRowsReport({ perRecord, codecPerRecord }, opts);
    await writeFile(opts.out, report);
    return { perRecord, codecPerRecord, rows, report };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface Db {
  pragma(source: string): unknown;
  prepare(source: string): { run(...params: unknown[]): unknown; get(...params: unknown[]): unknown };
  close(): void;
}

function recordOf(kind: LogRowKind, owner: string, time: number): Record<string, unknown> {
  const common = { time, status: 200, clientIp: '127.0.0.1', country: '', userAgent: 'wrk', durationMs: 0.05, method: 'GET' };
  if (kind === 'proxied request (row)') {
    return { ...common, surface: 'proxy', path: '/4k', bytesIn: 0, decision: 'allowed', host: 'bench.example.com', assetId: null, bucket: null, key: null, ownerId: owner, bytesSent: 4096, cacheStatus: null };
  }
  const asset = { path: `/${'a'.repeat(32)}/cdn-4kib.bin`, host: 'cdn.localhost', assetId: 'a'.repeat(32), bucket: null, key: null, ownerId: owner };
  if (kind === 'CDN request, no body (row)') return { ...common, ...asset, status: 304, bytesSent: 0, cacheStatus: 'HIT' };
  return { ...common, ...asset, bytesSent: 4096, cacheStatus: 'HIT', downloadKey: 'cdn-4kib.bin' };
}

export function renderLogRowsReport(result: Pick<LogRowsResult, 'perRecord' | 'codecPerRecord'>, opts: Pick<LogRowsOptions, 'rounds' | 'records' | 'flush' | 'preload' | 'command'>): string {
  const fmt = (xs: readonly number[]) => `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)})`;
  const lines = [
    '# The request log\'s rows: CPU per request on SQLite',
    '',
    `Command: \`${opts.command}\` (run on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; ${cpus().length} cores, load ${loadavg().map((l) => l.toFixed(2)).join(' ')} at the end).`,
    '',
    `The server's CdnLogRepo.insertBatch on a fresh metadata database (every migration), the writer thread's PRAGMAs, flushes of ${opts.flush} records`,
    `(one transaction each, statements of 32 rows), each encoded as it crosses to the thread; ${opts.preload} records inserted first, then`,
    `${opts.rounds} rounds of ${opts.records} records per kind, the kinds rotating. Timed: what the writer thread does with a flush, its decode and`,
    'its inserts (µs of CPU of the process per record; median of the rounds, min-max). The records and their encoding (the event loop\'s) and the',
    'WAL checkpoints (the checkpointer thread\'s) are outside the timing.',
    '',
    '| record | µs per request |',
    '|---|---:|',
    ...LOG_ROW_KINDS.map((k) => `| ${k} | ${fmt(result.perRecord[k])} |`),
    `| of which the flush's decode (JSON.parse and the records made; no SQLite), CDN hits | ${fmt(result.codecPerRecord)} |`,
    '',
  ];
  return `${lines.join('\n')}\n`;
}
