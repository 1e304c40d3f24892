// The upload budget (limits.uploadBufferBytes, src/storage/upload-budget.ts) against real servers:
//  - 100 concurrent boto3 multipart uploads on the upstream backend (moto), parts longer than the
//    upstream part buffer so each is an upstream multipart upload of its own: every object complete
//    and intact (SHA-256 read back), the budget's high-water mark (s3edge_upload_buffer_peak_bytes)
//    within the cap, nothing reserved afterwards; the server's peak RSS (VmHWM) is printed;
//  - many concurrent small inline PUTs on the disk backend under a tiny cap: all stored, in line;
//  - a spent budget: a PUT that cannot get room within limits.uploadBufferWaitMs is 503 SlowDown and
//    stores nothing, an asset upload 503 slow_down; a waiting client that leaves gives up its place;
//    a copy waits its turn; a client that goes away mid-body gives its reservation back and leaves
//    no temp file.
// S3EDGE_TEST_UPLOAD_CAP=<bytes> (0: no cap) reruns the first case with another cap, by hand, to
// compare peak RSS; its assertion on the cap is then skipped.
import t from 'tap';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { apiUser } from '../helpers/api.js';
import { isolatedAwsEnv, writeAwsConfig } from '../helpers/aws-cli.js';
import { errorCode, RawS3, randomData } from '../helpers/s3-client.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { UNSIGNED_PAYLOAD } from '../helpers/signer.js';

const MiB = 1024 * 1024;
const SCRIPT = fileURLToPath(new URL('../../../test/python/upload_buffer_cap.py', import.meta.url));

/** One sample of the gateway's /metrics. */
async function metric(server: RunningServer, name: string): Promise<number> {
  const res = await request(`${server.url}/metrics`);
  const text = await res.body.text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`no ${name} in /metrics`);
  return Number(m[1]);
}

/** The server process's peak resident set (VmHWM), in MiB. */
function peakRssMiB(server: RunningServer): number {
  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
  const kb = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN);
  return Math.round(kb / 1024);
}

async function waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
  // A safety net, not a timing assertion.
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

interface PyResult {
  results: { key: string; ok: boolean; error?: string; sha256?: string; readSha256?: string; size?: number }[];
  slowDownRetries: number;
  uploadSeconds: number;
  verifySeconds: number;
}

t.test('100 concurrent multipart uploads on the upstream backend stay within the upload budget', async (t) => {
  const override = process.env.S3EDGE_TEST_UPLOAD_CAP;
  const cap = override !== undefined ? Number(override) : 64 * MiB;
  const server = await startServer({
    upstream: true,
    env: {
      S3EDGE_LIMITS_UPLOAD_BUFFER_BYTES: String(cap),
      // Back-pressure only: no upload should wait this long here.
      S3EDGE_LIMITS_UPLOAD_BUFFER_WAIT_MS: '5m',
      S3EDGE_STORAGE_S3_PART_BYTES: '5MiB',
      S3EDGE_LOG_LEVEL: 'warn',
    },
  });
  t.teardown(() => server.stop());
  const s3 = new RawS3({ url: server.url }, server.rootKey);
  t.equal((await s3.createBucket('cap')).status, 200);
  const awsFiles = await writeAwsConfig(server.tmpRoot);
  const rssAtStart = peakRssMiB(server);

  const uploads = 100;
  // Part 1 is longer than the upstream part buffer (an upstream multipart upload of 5 MiB + 512 KiB),
  // the last part short.
  const partSizes = [5 * MiB + 512 * 1024, 256 * 1024];
  const started = Date.now();
  const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'python3',
      [SCRIPT, '--endpoint', server.url, '--bucket', 'cap', '--uploads', String(uploads), '--part-sizes', partSizes.join(',')],
      { env: isolatedAwsEnv(awsFiles, server.rootKey), maxBuffer: 16 * MiB, timeout: 600_000 },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
  t.equal(run.code, 0, run.code === 0 ? 'the boto3 driver ran' : `the boto3 driver failed: ${run.stderr.slice(-3000)}`);
  if (run.code !== 0) return;
  const out = JSON.parse(run.stdout) as PyResult;
  const failed = out.results.filter((r) => !r.ok);
  t.same(failed, [], 'every upload completed');
  t.equal(out.results.length, uploads);
  const total = partSizes.reduce((a, b) => a + b, 0);
  const intact = out.results.filter((r) => r.ok && r.readSha256 === r.sha256 && r.size === total);
  t.equal(intact.length, uploads, 'every object reads back byte for byte');

  const peak = await metric(server, 's3edge_upload_buffer_peak_bytes');
  const refusals = await metric(server, 's3edge_upload_buffer_refusals_total');
  const waits = await metric(server, 's3edge_upload_buffer_waits_total');
  t.equal(await metric(server, 's3edge_upload_buffer_capacity_bytes'), cap);
  if (cap > 0) {
    t.ok(peak <= cap, `the budget's high-water mark (${(peak / MiB).toFixed(1)} MiB) stayed within the cap (${cap / MiB} MiB)`);
    t.ok(waits > 0, `uploads waited for room (${waits} waits): the cap was reached`);
  }
  t.equal(await metric(server, 's3edge_upload_buffer_bytes'), 0, 'nothing stays reserved');
  t.equal(await metric(server, 's3edge_upload_buffer_waiting'), 0, 'nobody waits');
  t.equal(refusals, 0, 'back-pressure, no SlowDown');
  t.equal(out.slowDownRetries, 0);
  t.comment(
    `upload budget ${cap > 0 ? `${cap / MiB} MiB` : 'off'}: ${uploads} concurrent multipart uploads of ${(total / MiB).toFixed(2)} MiB ` +
      `(parts ${partSizes.map((s) => (s / MiB).toFixed(2)).join(' + ')} MiB, upstream part buffer 5 MiB): ` +
      `server peak RSS ${peakRssMiB(server)} MiB (${rssAtStart} MiB after start), budget high-water mark ${(peak / MiB).toFixed(1)} MiB, ` +
      `${waits} waits, ${refusals} refusals; uploads ${out.uploadSeconds} s, read-back ${out.verifySeconds} s, case ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
});

t.test('many concurrent small inline PUTs on the disk backend wait in line under a tiny cap', async (t) => {
  // Room for two bodies at once: any three PUTs whose bodies overlap make one wait. (With 1 MiB, room for
  // 17, a fast server sometimes never had 18 bodies in flight, and nobody waited.)
  const cap = 128 * 1024;
  const server = await startServer({
    upstream: false,
    env: { S3EDGE_LIMITS_UPLOAD_BUFFER_BYTES: String(cap), S3EDGE_LIMITS_UPLOAD_BUFFER_WAIT_MS: '2m', S3EDGE_LOG_LEVEL: 'warn' },
  });
  t.teardown(() => server.stop());
  const s3 = new RawS3({ url: server.url }, server.rootKey);
  t.equal((await s3.createBucket('small')).status, 200);
  // 60 KiB: under inlineObjectMaxBytes (64 KiB), read whole into memory for the metadata database.
  const bodies = Array.from({ length: 200 }, () => randomData(60 * 1024));
  const puts = await Promise.all(bodies.map((b, i) => s3.putObject('small', `o/${i}`, b)));
  t.same(puts.filter((r) => r.status !== 200).map((r) => r.text), [], 'every PUT stored');
  const gets = await Promise.all(bodies.map((_, i) => s3.send({ method: 'GET', bucket: 'small', key: `o/${i}` })));
  t.equal(gets.filter((r, i) => r.status === 200 && sha256(r.body) === sha256(bodies[i] as Buffer)).length, bodies.length, 'every object intact');
  const peak = await metric(server, 's3edge_upload_buffer_peak_bytes');
  t.ok(peak <= cap, `high-water mark ${peak} within ${cap}`);
  t.ok((await metric(server, 's3edge_upload_buffer_waits_total')) > 0, 'some waited');
  t.equal(await metric(server, 's3edge_upload_buffer_bytes'), 0, 'nothing stays reserved');
  t.equal(await metric(server, 's3edge_upload_buffer_refusals_total'), 0);
  t.same(readdirSync(join(server.dataDir, 'storage', 'tmp')), [], 'no temp file: inline bodies never touch the disk');
});

t.test('a spent budget: SlowDown after the wait, nothing stored; leaving clients give their bytes back', async (t) => {
  // A 5 MiB PUT on disk holds the hashing ring (4 MiB), the pipes (2 MiB) and a write batch (2 MiB):
  // 8 MiB, all of this budget.
  const cap = 8 * MiB;
  const server = await startServer({
    upstream: false,
    env: { S3EDGE_LIMITS_UPLOAD_BUFFER_BYTES: String(cap), S3EDGE_LIMITS_UPLOAD_BUFFER_WAIT_MS: '2s', S3EDGE_LOG_LEVEL: 'warn' },
  });
  t.teardown(() => server.stop());
  const s3 = new RawS3({ url: server.url }, server.rootKey);
  t.equal((await s3.createBucket('full')).status, 200);
  const { port } = new URL(server.url);
  const user = await apiUser(server, ['assets:write']);

  const putHead = async (key: string, length: number, extra: string[] = []): Promise<string> => {
    const signed = await s3.sign({ method: 'PUT', bucket: 'full', key, payloadHash: UNSIGNED_PAYLOAD });
    const lines = [`PUT ${signed.target} HTTP/1.1`, ...signed.headers.map(([k, v]) => `${k}: ${v}`), `content-length: ${length}`, ...extra];
    return `${lines.join('\r\n')}\r\n\r\n`;
  };
  const open = (): Socket => {
    const sock = connect(Number(port), '127.0.0.1');
    sock.on('error', () => undefined);
    return sock;
  };

  const source = randomData(2 * MiB);
  t.equal((await s3.putObject('full', 'source', source)).status, 200);

  // A client that sends 1 MiB of its 5 MiB and stalls: it holds the whole budget.
  const staller = open();
  staller.write(await putHead('stalled', 5 * MiB));
  staller.write(randomData(MiB));
  await waitFor('the stalled PUT to hold the budget', async () => (await metric(server, 's3edge_upload_buffer_bytes')) === cap);

  const refused = await s3.putObject('full', 'refused', randomData(3 * MiB));
  t.equal(refused.status, 503);
  t.equal(errorCode(refused), 'SlowDown');
  t.match(refused.text, /Please reduce your request rate\./);
  t.equal(refused.headers['retry-after'], '1');
  t.equal((await s3.send({ method: 'HEAD', bucket: 'full', key: 'refused' })).status, 404, 'nothing stored');
  t.equal(await metric(server, 's3edge_upload_buffer_refusals_total'), 1);

  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(randomData(2 * MiB))]), 'big.bin');
  const asset = await fetch(`${server.url}/api/v3/cdn/assets`, { method: 'POST', headers: { authorization: `Bearer ${user.token}` }, body: form });
  t.equal(asset.status, 503, 'the management API too');
  t.equal(asset.headers.get('retry-after'), '1');
  t.match(await asset.json(), { success: false, code: 'slow_down' });

  // A client waiting for "100 Continue" that leaves: its place in line goes at once, not at the deadline.
  const waiter = open();
  waiter.write(await putHead('waiter', 2 * MiB, ['expect: 100-continue']));
  await waitFor('the second PUT to wait', async () => (await metric(server, 's3edge_upload_buffer_waiting')) === 1);
  waiter.destroy();
  await waitFor('the waiter to leave the line', async () => (await metric(server, 's3edge_upload_buffer_waiting')) === 0);
  t.equal(await metric(server, 's3edge_upload_buffer_refusals_total'), 2, 'only the asset upload was refused besides');

  // A copy waits for the budget too, then looks its source up again; the staller goes away
  // mid-body meanwhile: its reservation comes back (to the copy) and its temp file goes.
  const copying = s3.send({ method: 'PUT', bucket: 'full', key: 'copy', headers: { 'x-amz-copy-source': '/full/source' } });
  await waitFor('the copy to wait', async () => (await metric(server, 's3edge_upload_buffer_waiting')) === 1);
  staller.destroy();
  const copied = await copying;
  t.equal(copied.status, 200, copied.status === 200 ? 'the copy went on once the budget was free' : copied.text);
  t.equal(sha256((await s3.send({ method: 'GET', bucket: 'full', key: 'copy' })).body), sha256(source), 'the copy is intact');
  await waitFor('the reservation to come back', async () => (await metric(server, 's3edge_upload_buffer_bytes')) === 0);
  await waitFor('the temp file to go', async () => readdirSync(join(server.dataDir, 'storage', 'tmp')).length === 0);
  t.pass('released on abort, no temp file left');

  const body = randomData(5 * MiB);
  t.equal((await s3.putObject('full', 'after', body)).status, 200, 'uploads go on once the budget is free');
  const got = await s3.send({ method: 'GET', bucket: 'full', key: 'after' });
  t.equal(sha256(got.body), sha256(body));
  t.equal(await metric(server, 's3edge_upload_buffer_bytes'), 0);
  t.equal(await metric(server, 's3edge_upload_buffer_peak_bytes'), cap);
});
