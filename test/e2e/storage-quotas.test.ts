// Storage quotas (issue 37) against the real server of two workers: `s3edge users set-quota` and
// `s3edge buckets set-quota` (sizes, none, bad input), aws cli refused with QuotaExceeded (403, not
// retried) on PutObject, `aws s3 cp`, an overwrite, UploadPart, UploadPartCopy, CopyObject and a
// completion over quota, a browser-style POST form and an asset upload (JSON quota_exceeded); nothing
// stored after a refusal; a quota removed lets the upload through; a quota set reaches both workers
// within a second; 24 parallel PUTs through both workers against a quota for 10 store exactly 10; the
// API's and the dashboard's view of it (screenshots in test-artifacts/storage-quotas/).
import t from 'tap';
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ApiClientError } from '../../src/client/index.js';
import { apiUser, query } from '../helpers/api.js';
import { isolatedAwsEnv, runAws, writeAwsConfig, type AwsResult } from '../helpers/aws-cli.js';
import { artifactsDir, launchBrowser, setPassword, signedInPage } from '../helpers/browser.js';
import { describeFindings, seriousA11yViolations } from '../helpers/axe.js';
import { RawS3, errorCode } from '../helpers/s3-client.js';
import { createAccountKey, startServer } from '../helpers/server.js';
import { runS3edge } from '../helpers/cli.js';
import { deriveSigningKey, type Credentials } from '../helpers/signer.js';
import { xmlText } from '../helpers/xml.js';

const KIB = 1024;
const USER = 'quota-ana';
const PHOTOS = 'quota-photos';
const LOGS = 'quota-logs';
const RACE = 'quota-race';
const PASSWORD = 'a-long-enough-password';
/** How long a quota change may take to reach every worker (credits/quotas.ts: held a second). */
const SPREAD_MS = 1100;

const server = await startServer({ workers: 2 });
t.teardown(() => server.stop());
await server.admin(['users', 'create', USER]);
for (const b of [PHOTOS, LOGS, RACE]) await server.admin(['buckets', 'create', b, '--user', USER]);
// Set before any request reads the bucket: no worker holds "no quota" for it yet.
await server.admin(['buckets', 'set-quota', PHOTOS, '--storage', '100KiB']);
await server.admin(['buckets', 'set-quota', RACE, '--storage', '160KiB']);
const key = await createAccountKey(server, USER);
const s3 = new RawS3({ url: server.url }, key);
const { client } = await apiUser(server, ['assets:write', 'assets:read', 'usage:read'], { name: USER });
const awsFiles = await writeAwsConfig(server.tmpRoot);

function aws(args: string[], credentials: Credentials = key): Promise<AwsResult> {
  return runAws({ endpoint: server.url, credentials, files: awsFiles }, args, server.tmpRoot);
}

/** aws with its own retry settings (the helper's config allows one attempt). */
function awsRetrying(args: string[]): Promise<AwsResult> {
  const env = isolatedAwsEnv(awsFiles, key, { AWS_MAX_ATTEMPTS: '5', AWS_RETRY_MODE: 'standard' });
  return new Promise((resolve) => {
    execFile('aws', ['--endpoint-url', server.url, ...args], { env, cwd: server.tmpRoot, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

async function file(name: string, size: number): Promise<string> {
  const path = join(server.tmpRoot, name);
  await writeFile(path, Buffer.alloc(size, name.charCodeAt(0)));
  return path;
}

/** The S3 request lines the workers logged so far (pid, operation, key, status, errorCode). */
async function s3Lines(): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of (await server.loggedOutput()).split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const rec = JSON.parse(line) as Record<string, unknown>;
      if (rec['msg'] === 's3 request') out.push(rec);
    } catch {
      // not a log line
    }
  }
  return out;
}

function objectRows(bucket: string, key: string): number {
  return query<{ n: number }>(server, 'SELECT count(*) AS n FROM objects o JOIN buckets b ON b.id = o.bucket_id WHERE b.name = ? AND o.key = ?', bucket, key)[0]?.n ?? -1;
}

function bucketBytes(bucket: string): number {
  return query<{ bytes: number }>(server, 'SELECT u.bytes FROM bucket_usage u JOIN buckets b ON b.id = u.bucket_id WHERE b.name = ?', bucket)[0]?.bytes ?? -1;
}

/** Reservations still held (every upload gives its reservation back once it is answered). */
function reservationRows(): number {
  return query<{ n: number }>(server, 'SELECT count(*) AS n FROM storage_reservations')[0]?.n ?? -1;
}

function stagedFiles(): string[] {
  return readdirSync(join(server.dataDir, 'storage', 'tmp'));
}

/** A browser's POST form upload, signed as an application's server signs its policy (SigV4). */
async function postForm(bucket: string, objectKey: string, body: Buffer): Promise<Response> {
  const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
  const day = amzDate.slice(0, 8);
  const credential = `${key.accessKeyId}/${day}/us-east-1/s3/aws4_request`;
  const policy = Buffer.from(JSON.stringify({
    expiration: new Date(Date.now() + 600_000).toISOString(),
    conditions: [{ bucket }, { key: objectKey }, { 'x-amz-algorithm': 'AWS4-HMAC-SHA256' }, { 'x-amz-credential': credential }, { 'x-amz-date': amzDate }],
  })).toString('base64');
  const form = new FormData();
  form.set('key', objectKey);
  form.set('x-amz-algorithm', 'AWS4-HMAC-SHA256');
  form.set('x-amz-credential', credential);
  form.set('x-amz-date', amzDate);
  form.set('policy', policy);
  form.set('x-amz-signature', createHmac('sha256', deriveSigningKey(key.secretAccessKey, day, 'us-east-1')).update(policy).digest('hex'));
  form.set('file', new Blob([new Uint8Array(body)]), 'photo.bin');
  return fetch(`${server.url}/${bucket}`, { method: 'POST', body: form });
}

t.test('set-quota: decimal and binary units, none, one-line refusals of bad input; the lists show stored bytes and quotas', async (t) => {
  t.match(await server.admin(['buckets', 'set-quota', LOGS, '--storage', '1.5MB']), { name: LOGS, quotaBytes: 1_500_000, quota: '1.43 MiB', storedBytes: 0 });
  t.match(await server.admin(['buckets', 'set-quota', LOGS, '--storage', '2KiB']), { quotaBytes: 2048, quota: '2 KiB' });
  t.match(await server.admin(['users', 'set-quota', USER, '--storage', '10GB']), { name: USER, quotaBytes: 10_000_000_000, quota: '9.31 GiB' });
  t.match(await server.admin(['users', 'set-quota', USER, '--storage', '1048576']), { quotaBytes: 1_048_576, quota: '1 MiB' }, 'a bare number is bytes');
  const users = (await server.cli(['users', 'list'])).json as Array<Record<string, unknown>>;
  t.match(users.find((u) => u['name'] === USER), { storedBytes: 0, quotaBytes: 1_048_576 }, 'users list: stored bytes and quota');
  const buckets = (await server.cli(['buckets', 'list', '--user', USER])).json as Array<Record<string, unknown>>;
  t.match(buckets.find((b) => b['name'] === LOGS), { storedBytes: 0, quotaBytes: 2048 }, 'buckets list too');
  t.match(buckets.find((b) => b['name'] === PHOTOS), { quotaBytes: 102_400 });
  t.match(await server.admin(['users', 'set-quota', USER, '--storage', 'none']), { quotaBytes: null, quota: 'none' });
  t.match(await server.admin(['buckets', 'set-quota', LOGS, '--storage', 'NONE']), { quotaBytes: null, quota: 'none' });

  for (const bad of ['10 gigs', '-5', '1.5', '10GiB!', '']) {
    const r = await server.cli(['buckets', 'set-quota', LOGS, '--storage', bad]);
    if (bad === '') {
      t.equal(r.code, 2, 'an empty --storage: a usage error');
      continue;
    }
    t.equal(r.code, 1, `--storage '${bad}': refused`);
    t.equal(r.stderr.trim().split('\n').length, 1, 'one line');
    t.match(r.stderr, `s3edge: --storage must be a size like 10GiB, 500MB or 1048576 (bytes; units B, KB, MB, GB, TB = 1000-based, KiB, MiB, GiB, TiB = 1024-based), or 'none' to remove the quota (got '${bad}')`);
    t.match(r.json, { error: { code: 'InvalidSize' } });
  }
  t.match((await server.cli(['users', 'set-quota', 'nobody', '--storage', '1GiB'])).json, { error: { code: 'NoSuchUser' } });
  t.match((await server.cli(['buckets', 'set-quota', 'no-such-bucket', '--storage', '1GiB'])).json, { error: { code: 'NoSuchBucket' } });
  const missing = await server.cli(['buckets', 'set-quota', LOGS]);
  t.equal(missing.code, 2);
  t.match(missing.stderr, "'buckets set-quota' requires --storage");
  const help = await runS3edge(['users', 'set-quota', '--help']);
  t.match(help.stdout, 's3edge users set-quota alice --storage 10GiB', 'the help has the example');
  const buckets2 = (await server.cli(['buckets', 'list'])).json as Array<Record<string, unknown>>;
  t.match(buckets2.find((b) => b['name'] === LOGS), { quotaBytes: null });
});

t.test('a bucket quota refuses an S3 PUT that would exceed it: QuotaExceeded 403, not retried, nothing stored; without the quota it goes through', async (t) => {
  const sixty = await file('p60.bin', 60 * KIB);
  const first = await aws(['s3api', 'put-object', '--bucket', PHOTOS, '--key', 'a.bin', '--body', sixty]);
  t.equal(first.code, 0, `60 KiB into 100 KiB: ${first.stderr}`);

  const refused = await aws(['s3api', 'put-object', '--bucket', PHOTOS, '--key', 'b.bin', '--body', sixty]);
  t.not(refused.code, 0, 'another 60 KiB: refused');
  t.match(refused.stderr, /An error occurred \(QuotaExceeded\) when calling the PutObject operation: Storage quota exceeded: the bucket 'quota-photos' may store 100 KiB \(102400 bytes\) and stores 60 KiB \(61440 bytes\); this upload needs 60 KiB \(61440 bytes\)\. Delete objects from it .*s3edge buckets set-quota quota-photos --storage SIZE\./, 'which quota, its size, what is stored, how to fix it');

  const cp = await aws(['s3', 'cp', sixty, `s3://${PHOTOS}/c.bin`]);
  t.not(cp.code, 0, 'aws s3 cp: refused');
  t.match(cp.stderr, /QuotaExceeded/);
  const overwrite = await aws(['s3api', 'put-object', '--bucket', PHOTOS, '--key', 'a.bin', '--body', sixty]);
  t.match(overwrite.stderr, /QuotaExceeded/, 'an overwrite counts its new bytes in full (as MinIO\'s hard quota)');

  const retried = await awsRetrying(['s3api', 'put-object', '--bucket', PHOTOS, '--key', 'retry-probe.bin', '--body', sixty]);
  t.match(retried.stderr, /QuotaExceeded/);
  t.equal((await s3Lines()).filter((l) => l['key'] === 'retry-probe.bin').length, 1, 'aws cli with 5 attempts allowed sent it once: not retryable');

  const raw = await s3.putObject(PHOTOS, 'd.bin', Buffer.alloc(60 * KIB));
  t.equal(raw.status, 403);
  t.equal(errorCode(raw), 'QuotaExceeded');
  t.same(['Quota', 'BucketName', 'QuotaBytes', 'StoredBytes', 'ReservedBytes', 'RequiredBytes'].map((e) => xmlText(raw.text, e)), ['bucket', PHOTOS, '102400', '61440', '0', '61440'], 'the figures as elements of the error');
  const small = await s3.putObject(PHOTOS, 'small.bin', Buffer.alloc(40 * KIB));
  t.equal(small.status, 200, 'what fits goes in: 100 KiB exactly');
  t.equal((await s3.putObject(PHOTOS, 'one-more.bin', Buffer.alloc(1))).status, 403, 'and not a byte more');

  for (const k of ['b.bin', 'c.bin', 'd.bin', 'retry-probe.bin', 'one-more.bin']) t.equal(objectRows(PHOTOS, k), 0, `${k}: no object`);
  t.equal((await s3.headObject(PHOTOS, 'b.bin')).status, 404);
  t.equal(bucketBytes(PHOTOS), 100 * KIB, 'the bucket stores what was accepted, no byte more');
  t.same(stagedFiles(), [], 'no staged bytes left behind');
  t.equal(reservationRows(), 0, 'every reservation given back');

  await server.admin(['buckets', 'set-quota', PHOTOS, '--storage', 'none']);
  const through = await aws(['s3api', 'put-object', '--bucket', PHOTOS, '--key', 'b.bin', '--body', sixty]);
  t.equal(through.code, 0, `quota removed: the same upload goes through at once, on either worker: ${through.stderr}`);
  t.equal(bucketBytes(PHOTOS), 160 * KIB);
});

t.test('a quota set reaches both workers within a second', async (t) => {
  const spread = async (n: number, prefix: string): Promise<{ statuses: number[]; pids: Set<unknown> }> => {
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) {
      // Each on a connection of its own (the helper's): the workers take turns.
      statuses.push((await s3.putObject(LOGS, `${prefix}-${i}`, Buffer.alloc(512))).status);
    }
    const pids = new Set((await s3Lines()).filter((l) => typeof l['key'] === 'string' && (l['key'] as string).startsWith(`${prefix}-`)).map((l) => l['pid']));
    return { statuses, pids };
  };
  const before = await spread(6, 'warm');
  t.same([...new Set(before.statuses)], [200], 'no quota yet');
  t.equal(before.pids.size, 2, 'both workers took uploads (and hold "no quota" for the bucket)');
  await server.admin(['buckets', 'set-quota', LOGS, '--storage', '3KiB']);
  await delay(SPREAD_MS);
  const after = await spread(6, 'late');
  t.same([...new Set(after.statuses)], [403], 'a second later every upload is refused (3 KiB stored)');
  t.equal(after.pids.size, 2, 'by both workers');
  for (let i = 0; i < 6; i++) await s3.deleteObject(LOGS, `warm-${i}`);
  await server.admin(['buckets', 'set-quota', LOGS, '--storage', 'none']);
});

t.test("the user's quota counts buckets and assets together: PUT, asset upload, UploadPart, UploadPartCopy, CopyObject, POST, a completion over quota", async (t) => {
  const stored = (await client.storageQuota()).user.storedBytes;
  t.equal(stored, 160 * KIB, 'the API: what the account stores');
  await server.admin(['users', 'set-quota', USER, '--storage', String(stored + 30 * KIB)]);
  await delay(SPREAD_MS);

  const forty = await file('u40.bin', 40 * KIB);
  const refused = await aws(['s3api', 'put-object', '--bucket', LOGS, '--key', 'u1.bin', '--body', forty]);
  t.match(refused.stderr, /\(QuotaExceeded\) .*the account 'quota-ana' \(its buckets and assets together\) may store 190 KiB \(194560 bytes\) and stores 160 KiB \(163840 bytes\).*s3edge users set-quota quota-ana --storage SIZE\./, "a bucket without a quota of its own: the user's refuses");
  t.equal((await aws(['s3api', 'put-object', '--bucket', LOGS, '--key', 'u2.bin', '--body', await file('u20.bin', 20 * KIB)])).code, 0, '20 KiB fits');

  // 10 KiB left.
  const big = await client.upload({ file: Buffer.alloc(20 * KIB, 1), fileName: 'big.bin', contentType: 'application/octet-stream' }).catch((err: unknown) => err);
  t.ok(big instanceof ApiClientError, 'an asset of 20 KiB: refused');
  t.match((big as ApiClientError).status, 403);
  t.match((big as ApiClientError).body, { success: false, code: 'quota_exceeded', quota: 'user', quotaBytes: 190 * KIB, storedBytes: 180 * KIB, reservedBytes: 0, message: /^Storage quota exceeded: the account 'quota-ana'/ }, 'the JSON envelope with the figures');
  t.equal((await client.listAssets()).pagination.total, 0, 'no asset stored');
  t.ok(await client.upload({ file: Buffer.alloc(4 * KIB, 2), fileName: 'small.bin' }), 'an asset of 4 KiB fits');

  // 6 KiB left: multipart parts count as they are uploaded.
  const created = await aws(['s3api', 'create-multipart-upload', '--bucket', LOGS, '--key', 'mp.bin']);
  const uploadId = (created.json as { UploadId: string }).UploadId;
  const part = await aws(['s3api', 'upload-part', '--bucket', LOGS, '--key', 'mp.bin', '--upload-id', uploadId, '--part-number', '1', '--body', await file('part8.bin', 8 * KIB)]);
  t.match(part.stderr, /\(QuotaExceeded\) when calling the UploadPart operation/, 'a part of 8 KiB: refused');
  const ok = await aws(['s3api', 'upload-part', '--bucket', LOGS, '--key', 'mp.bin', '--upload-id', uploadId, '--part-number', '1', '--body', await file('part2.bin', 2 * KIB)]);
  t.equal(ok.code, 0, `a part of 2 KiB fits: ${ok.stderr}`);
  const partCopy = await aws(['s3api', 'upload-part-copy', '--bucket', LOGS, '--key', 'mp.bin', '--upload-id', uploadId, '--part-number', '2', '--copy-source', `${PHOTOS}/a.bin`]);
  t.match(partCopy.stderr, /\(QuotaExceeded\) when calling the UploadPartCopy operation/, 'a part copied from 60 KiB: refused');
  const copy = await aws(['s3api', 'copy-object', '--bucket', LOGS, '--key', 'copy.bin', '--copy-source', `${PHOTOS}/a.bin`]);
  t.match(copy.stderr, /\(QuotaExceeded\) when calling the CopyObject operation: .*this upload needs 60 KiB \(61440 bytes\)/, 'a copy of 60 KiB: refused by its source size');
  const posted = await postForm(LOGS, 'posted.bin', Buffer.alloc(8 * KIB, 3));
  const postedText = await posted.text();
  t.equal(posted.status, 403, 'a POST form of 8 KiB: refused');
  t.equal(xmlText(postedText, 'Code'), 'QuotaExceeded');
  t.equal((await postForm(LOGS, 'posted-small.bin', Buffer.alloc(KIB, 3))).status, 204, 'one of 1 KiB fits');
  for (const k of ['u1.bin', 'copy.bin', 'posted.bin']) t.equal(objectRows(LOGS, k), 0, `${k}: no object`);
  t.equal(query<{ n: number }>(server, 'SELECT count(*) AS n FROM multipart_parts')[0]?.n, 1, 'one part: the refused ones left nothing');

  // The quota lowered below what is stored: a completion (which adds nothing) is refused too.
  await server.admin(['users', 'set-quota', USER, '--storage', '100KiB']);
  const parts = JSON.stringify({ Parts: [{ PartNumber: 1, ETag: (ok.json as { ETag: string }).ETag }] });
  const complete = await aws(['s3api', 'complete-multipart-upload', '--bucket', LOGS, '--key', 'mp.bin', '--upload-id', uploadId, '--multipart-upload', parts]);
  t.match(complete.stderr, /\(QuotaExceeded\) when calling the CompleteMultipartUpload operation: .*it is over its quota \(lowered below what it stores\)/, 'a completion while over quota: refused');
  await server.admin(['users', 'set-quota', USER, '--storage', 'none']);
  const done = await aws(['s3api', 'complete-multipart-upload', '--bucket', LOGS, '--key', 'mp.bin', '--upload-id', uploadId, '--multipart-upload', parts]);
  t.equal(done.code, 0, `without the quota it completes: ${done.stderr}`);
  t.equal(reservationRows(), 0, 'every reservation given back');
  t.same(stagedFiles(), [], 'no staged bytes left behind');

  const report = await client.storageQuota();
  t.same(report.user, { storedBytes: 160 * KIB + 20 * KIB + 4 * KIB + KIB + 2 * KIB, assetBytes: 4 * KIB, quotaBytes: null }, 'the API: everything accepted, nothing refused');
  t.match(report.buckets, [{ name: LOGS, storedBytes: 23 * KIB, quotaBytes: null }, { name: PHOTOS, storedBytes: 160 * KIB, quotaBytes: null }, { name: RACE, storedBytes: 0, quotaBytes: 160 * KIB }]);
});

t.test('24 parallel PUTs through both workers against a quota for 10: never past the quota, and filled to it', async (t) => {
  const body = Buffer.alloc(16 * KIB, 9);
  const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => s3.putObject(RACE, `r-${i}`, body)));
  const statuses = answers.map((a) => a.status);
  const stored = statuses.filter((s) => s === 200).length;
  // A reservation is given back just after its commit, so for that moment an upload counts twice: a
  // burst may store fewer than fit (a refusal a retry overcomes), never more.
  t.ok(stored >= 1 && stored <= 10, `at most 10 stored at once (${stored})`);
  t.equal(statuses.filter((s) => s === 403).length, 24 - stored, 'the others refused');
  t.same([...new Set(answers.filter((a) => a.status === 403).map(errorCode))], ['QuotaExceeded']);
  t.equal(bucketBytes(RACE), stored * 16 * KIB, 'what was stored, never past the quota');
  // The refused ones again, one at a time: the quota fills exactly, the rest are refused.
  for (const [i, a] of answers.entries()) {
    if (a.status === 200) continue;
    const again = await s3.putObject(RACE, `r-${i}`, body);
    if (bucketBytes(RACE) <= 160 * KIB && again.status === 200) continue;
    t.equal(errorCode(again), 'QuotaExceeded', 'refused once the quota is full');
  }
  t.equal(bucketBytes(RACE), 160 * KIB, 'the quota exactly');
  t.equal(query<{ n: number }>(server, "SELECT count(*) AS n FROM objects o JOIN buckets b ON b.id = o.bucket_id WHERE b.name = ?", RACE)[0]?.n, 10);
  const pids = new Set((await s3Lines()).filter((l) => typeof l['key'] === 'string' && (l['key'] as string).startsWith('r-')).map((l) => l['pid']));
  t.equal(pids.size, 2, 'both workers took part');
  t.equal(reservationRows(), 0);
});

t.test('the dashboard: stored of quota for the account and each bucket, on a phone in the dark too', async (t) => {
  await server.admin(['users', 'set-quota', USER, '--storage', '1GiB']);
  await server.admin(['buckets', 'set-quota', PHOTOS, '--storage', '200KiB']);
  await setPassword(server, USER, PASSWORD);
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const dir = artifactsDir('storage-quotas');
  const { page, problems, goTo } = await signedInPage(browser, server, USER, PASSWORD);
  await goTo('usage');
  const account = page.getByTestId('account-quota');
  await account.waitFor();
  t.match(await account.textContent(), /^\s*Stored 347 KiB of 1 GiB quota \(0\.0%\)\s*$/, 'the account: stored of its quota');
  const photos = page.locator('.quota-buckets li', { hasText: PHOTOS });
  t.match(await photos.textContent(), /quota-photos\s*Stored 160 KiB of 200 KiB quota \(80%\)/, 'a bucket with a quota');
  t.match(await page.locator('.quota-buckets li', { hasText: LOGS }).textContent(), /Stored 23 KiB \(no quota\)/, 'a bucket without one');
  t.match(await page.locator('.quota-buckets li', { hasText: RACE }).textContent(), /Stored 160 KiB of 160 KiB quota \(100%\)\s*Full: uploads are refused/, 'a full one says so');
  await page.screenshot({ path: join(dir, 'usage.png'), fullPage: true });

  await goTo('storage');
  const card = page.getByTestId('bucket-storage').first();
  await card.waitFor();
  t.match(await page.locator('.card', { hasText: `Bucket ${PHOTOS}` }).getByTestId('bucket-storage').textContent(), /Stored 160 KiB of 200 KiB quota \(80%\)/, 'the storage page: per bucket');
  await page.screenshot({ path: join(dir, 'storage.png'), fullPage: true });

  // A phone, in the dark: the usage page without sideways scroll, and no serious accessibility finding.
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.setViewportSize({ width: 390, height: 844 });
  await goTo('usage');
  await page.getByTestId('account-quota').waitFor();
  await page.waitForLoadState('networkidle');
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  t.ok(width <= 390, `no sideways scroll on a phone (${width}px)`);
  await page.screenshot({ path: join(dir, 'usage-phone-dark.png'), fullPage: true });
  const findings = await seriousA11yViolations(page);
  t.same(findings, [], `usage, dark, 390 px: no serious or critical accessibility violation${findings.length ? `: ${describeFindings(findings)}` : ''}`);
  t.same(problems, [], 'no script error');
});
