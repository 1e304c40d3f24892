// Metering against the real server (issue 37): 20 MB of CDN downloads of a 5 MB public asset become a
// transfer ledger entry after `s3edge credits settle`, with its period, bytes and rate, and the stored
// asset (with an S3 object beside it) a storage entry for the day's sampled hour; usedCredits moves by
// exactly that; a second settlement charges nothing more.
import t from 'tap';
import { apiUser, eventually, query, ResponseRecorder } from '../helpers/api.js';
import { join } from 'node:path';
import { artifactsDir, launchBrowser, setPassword, signedInPage } from '../helpers/browser.js';
import { CdnClient } from '../helpers/cdn.js';
import { RawS3 } from '../helpers/s3-client.js';
import { createAccountKey, startServer } from '../helpers/server.js';

const MB = 1_000_000;
const RATE = 1000; // credits per GB: 20 MB is 20 credits
const STORAGE_RATE = 2400; // credits per GB-day: 6 MB stored for an hour is 0.6 credits

t.test('transfer charged by s3edge credits settle', async (t) => {
  const server = await startServer({
    env: { S3EDGE_CREDITS_ENABLED: 'true', S3EDGE_CREDITS_FREE_MONTHLY_CREDITS: '100', S3EDGE_CREDITS_UPLOAD_CREDITS_PER_UNIT: '0', S3EDGE_CREDITS_TRANSFER_CREDITS_PER_GB: String(RATE), S3EDGE_CREDITS_STORAGE_CREDITS_PER_GB_DAY: String(STORAGE_RATE) },
  });
  t.teardown(() => server.stop());
  const recorder = new ResponseRecorder();
  const { client } = await apiUser(server, ['assets:read', 'assets:write', 'usage:read'], { recorder, name: 'metered' });
  const asset = await client.upload({ file: Buffer.alloc(5 * MB, 7), fileName: 'five.bin', contentType: 'application/octet-stream' });
  const cdn = new CdnClient(server, recorder, 0);
  for (let i = 0; i < 4; i++) t.equal((await cdn.request(cdn.targetOf(asset.publicUrl))).status, 200, `CDN download ${i + 1}`);
  // The request log is written in batches: the four downloads are in it before they can be charged.
  await eventually(() => query<{ n: number }>(server, 'SELECT sum(bytes_sent) AS n FROM cdn_requests')[0]?.n === 20 * MB, 'the downloads in the request log');
  // An S3 object is stored too: 5 MB of asset and 1 MB of object, 6 MB in all.
  const s3 = new RawS3({ url: server.url }, await createAccountKey(server, 'metered'));
  t.equal((await s3.send({ method: 'PUT', bucket: 'metered-bucket' })).status, 200);
  t.equal((await s3.send({ method: 'PUT', bucket: 'metered-bucket', key: 'one.bin', body: Buffer.alloc(MB, 1) })).status, 200);
  const before = (await client.summary()).credits;
  t.equal(before.projectedDailyStorageCredits, 14.4, 'a day at 6 MB stored: 0.006 GB-days at 2400 credits');

  const settled = await server.admin(['credits', 'settle']);
  // The day's one sampled hour: 6 MB * 1 h / 24 = 250,000 byte-days, 0.6 credits.
  t.same(settled, { transfer: { entries: 1, bytes: 20 * MB, credits: 20 }, storage: { entries: 1, bytes: 250_000, credits: 0.6 } },
    'transfer: 20 MB at 1000 credits/GB; storage: the hour sampled so far');
  const after = (await client.summary()).credits;
  t.equal(Math.round((after.usedCredits - before.usedCredits) * 1000), 20_600, 'usedCredits moved by the two charges');
  const storage = (await client.usage(50)).creditLedger.find((e) => e.eventType === 'storage');
  t.match(storage, { bytes: 250_000, credits: 0.6, rate: STORAGE_RATE, metadata: { hours: 1, period: /^\d{4}-\d\d-\d\dT00:00:00\.000Z\/\d{4}-\d\d-\d\dT00:00:00\.000Z$/ } },
    'the storage entry: byte-days, credits, rate, its day and hours');
  const entry = (await client.usage(50)).creditLedger.find((e) => e.eventType === 'transfer');
  t.ok(entry, 'the ledger shows it');
  t.match(entry, { bytes: 20 * MB, credits: 20, rate: RATE, metadata: { period: /^\d{4}-\d\d-\d\dT\d\d:00:00\.000Z\/\d{4}-\d\d-\d\dT\d\d:00:00\.000Z$/ } }, 'its bytes, credits, rate and hour');
  const stored = query<{ metadata: string; rate_milli: number }>(server, "SELECT metadata, rate_milli FROM credit_ledger WHERE event_type = 'transfer'");
  t.equal(stored.length, 1);
  t.equal(stored[0]?.rate_milli, RATE * 1000, 'the rate kept with it');
  t.match(JSON.parse(stored[0]?.metadata ?? '{}'), { period: /^\d{4}-\d\d-\d\dT\d\d:00:00\.000Z\/\d{4}-\d\d-\d\dT\d\d:00:00\.000Z$/ }, 'the hour it is for');

  t.same(await server.admin(['credits', 'settle']), { transfer: { entries: 0, bytes: 0, credits: 0 }, storage: { entries: 0, bytes: 0, credits: 0 } }, 'settled again: nothing more');
  t.equal((await client.summary()).credits.usedCredits, after.usedCredits);

  // The usage page shows the entry: its hour and rate, bytes and credits.
  await setPassword(server, 'metered', 'a-long-enough-password');
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const { page, problems, goTo } = await signedInPage(browser, server, 'metered', 'a-long-enough-password');
  await goTo('usage');
  const row = page.getByRole('table', { name: 'Credit ledger' }).locator('tbody tr', { hasText: 'Transfer' });
  await row.waitFor();
  t.match(await row.textContent(), /\d{4}-\d\d-\d\d \d\d:00–\d\d:00 UTC at 1,000 \/ GB\s*20\.0\s*MB\s*−20/, 'Transfer, the hour, the rate, 20 MB, −20 credits');
  const storageRow = page.getByRole('table', { name: 'Credit ledger' }).locator('tbody tr', { hasText: 'Storage' });
  t.match(await storageRow.textContent(), /\d{4}-\d\d-\d\d UTC, 1 h sampled at 2,400 \/ GB-day\s*250(\.0)?\s*KB-days\s*−0\.6/, 'Storage, the day, hours, rate, byte-days, credits');
  await page.screenshot({ path: join(artifactsDir('metering'), 'usage-transfer.png'), fullPage: true });
  t.same(problems, [], 'no script error');
});
