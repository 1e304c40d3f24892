// --busy-lock: does a locked meta.db stall the server? One s3edge (`serve --workers 1`, SQLite), small
// GETs at a fixed rate (each latency counted from when it was due, so a stalled event loop counts in
// full): first on an idle server, then while another connection holds `BEGIN EXCLUSIVE` on meta.db for
// `lockMs` (a backup tool, `sqlite3` by hand) and PUTs keep waiting for the lock (one started at the
// lock, another each time one is answered). Reported: the GETs' p50/p99/max idle and during the lock,
// and what the PUTs got (503 SlowDown after the serving wait, docs/ARCHITECTURE.md "A busy database").
// Writes bench/RESULTS-busy-lock.md unless told where.
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { S3HttpClient } from './client.js';
import { pacedGets, type LatencyStats } from './hashing.js';
import { sleep } from './proc.js';
import { EMPTY_SHA256 } from './sigv4.js';
import { repoRoot, startS3edge } from './targets.js';
import { Bodies } from './workloads.js';

export interface BusyLockOptions {
  /** How long the other connection holds the lock. */
  lockMs: number;
  idleMs: number;
  /** GETs sent per second, whatever the answers do. */
  getRate: number;
  out: string;
  command: string;
}

export interface BusyLockResult {
  idle: LatencyStats;
  locked: LatencyStats;
  /** Each PUT sent during the lock: its status, S3 error code and ms to its answer. */
  puts: { status: number; code: string; ms: number }[];
  report: string;
}

export function busyLockResultsFile(): string {
  return join(repoRoot(), 'bench', 'RESULTS-busy-lock.md');
}

interface LockHolder {
  exec(sql: string): void;
  close(): void;
}

export async function runBusyLockBench(o: BusyLockOptions): Promise<BusyLockResult> {
  const { openSqlite } = (await import(pathToFileURL(join(repoRoot(), 'dist', 'src', 'db', 'sqlite', 'index.js')).href)) as { openSqlite: (file: string) => LockHolder };
  const target = await startS3edge();
  const client = new S3HttpClient(target.url, target.credentials, 8);
  const writer = new S3HttpClient(target.url, target.credentials, 1);
  try {
    const small = new Bodies().get(4096);
    const made = await client.send('PUT', { path: '/busy', payloadHash: EMPTY_SHA256 });
    const put = await client.send('PUT', { path: '/busy/small', body: small.buf, payloadHash: small.sha256 });
    if (made.status !== 200 || put.status !== 200) throw new Error(`busy-lock bench: setup answered ${made.status} / ${put.status}`);
    await pacedGets(client, o.getRate, sleep(1000), '/busy/small'); // warm-up
    const idle = await pacedGets(client, o.getRate, sleep(o.idleMs), '/busy/small');

    const holder = openSqlite(join(target.dataDir as string, 'meta.db'));
    const puts: BusyLockResult['puts'] = [];
    let lockedStats: LatencyStats;
    try {
      holder.exec('BEGIN EXCLUSIVE');
      const lockEnds = sleep(o.lockMs);
      let holding = true;
      void lockEnds.then(() => (holding = false));
      // PUTs waiting for the lock the whole time: the next is sent as soon as one is answered.
      const writes = (async () => {
        for (let i = 0; holding; i++) {
          const started = performance.now();
          const r = await writer.send('PUT', { path: `/busy/during-${i}`, body: small.buf, payloadHash: small.sha256 });
          const code = /<Code>([^<]+)<\/Code>/.exec(r.body?.toString('utf8') ?? '')?.[1] ?? '';
          puts.push({ status: r.status, code, ms: performance.now() - started });
        }
      })();
      lockedStats = await pacedGets(client, o.getRate, lockEnds, '/busy/small');
      holder.exec('ROLLBACK');
      await writes;
    } finally {
      holder.close();
    }
    const report = renderBusyLockReport({ idle, locked: lockedStats, puts }, o);
    await writeFile(o.out, report);
    return { idle, locked: lockedStats, puts, report };
  } finally {
    await Promise.all([client.pool.close(), writer.pool.close()]);
    await target.stop();
  }
}

export function renderBusyLockReport(r: Omit<BusyLockResult, 'report'>, o: Pick<BusyLockOptions, 'lockMs' | 'idleMs' | 'getRate' | 'command'>): string {
  const row = (name: string, s: LatencyStats) => `| ${name} | ${s.count} | ${s.errors} | ${s.p50Ms.toFixed(2)} | ${s.p99Ms.toFixed(2)} | ${s.maxMs.toFixed(2)} |`;
  const answered = r.puts.map((p) => `${p.status}${p.code ? ` ${p.code}` : ''} after ${(p.ms / 1000).toFixed(2)} s`);
  return [
    '# A locked meta.db: small GETs of the same worker while writes wait for the lock',
    '',
    `Command: \`${o.command}\` (run on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; ${cpus().length} cores, load ${loadavg().map((l) => l.toFixed(2)).join(' ')} at the end).`,
    '',
    `\`serve --workers 1\` on SQLite. 4 KiB GETs of one object at ${o.getRate}/s (latency from when each was due): ${o.idleMs / 1000} s on an idle server, then`,
    `${o.lockMs / 1000} s while another connection holds \`BEGIN EXCLUSIVE\` on meta.db and PUTs wait for the lock (the next sent when one is answered).`,
    '',
    '| GETs | count | errors | p50 ms | p99 ms | max ms |',
    '|---|---:|---:|---:|---:|---:|',
    row('idle', r.idle),
    row('during the lock', r.locked),
    '',
    `PUTs during the lock: ${answered.join('; ') || 'none'}.`,
    '',
  ].join('\n');
}

