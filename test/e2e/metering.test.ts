// Metering against the real server (issue 37): 20 MB of CDN downloads of a 5 MB public asset become a
// transfer ledger entry after `s3edge credits settle`, with its period, bytes and rate; usedCredits
// moves by exactly that; a second settlement charges nothing more.
import t from 'tap';
import { apiUser, eventually, query, ResponseRecorder } from '../helpers/api.js';
import { join } from 'node:path';
import { artifactsDir, launchBrowser, setPassword, signedInPage } from '../helpers/browser.js';
import { CdnClient } from '../helpers/cdn.js';
import { startServer } from '../helpers/server.js';

const MB = 1_000_000;
const RATE = 1000; // credits per GB: 20 MB is 20 credits

t.test('transfer charged by s3edge credits settle', async (t) => {
  const server = await startServer({
    env: { S3EDGE_CREDITS_ENABLED: 'true', S3EDGE_CREDITS_FREE_MONTHLY_CREDITS: '100', S3EDGE_CREDITS_UPLOAD_CREDITS_PER_UNIT: '0', S3EDGE_CREDITS_TRANSFER_CREDITS_PER_GB: String(RATE) },
  });
  t.teardown(() => server.stop());
  const recorder = new ResponseRecorder();
  const { client } = await apiUser(server, ['assets:read', 'assets:write', 'usage:read'], { recorder, name: 'metered' });
  const asset = await client.upload({ file: Buffer.alloc(5 * MB, 7), fileName: 'five.bin', contentType: 'application/octet-stream' });
  const cdn = new CdnClient(server, recorder, 0);
  for (let i = 0; i < 4; i++) t.equal((await cdn.request(cdn.targetOf(asset.publicUrl))).status, 200, `CDN download ${i + 1}`);
  // The request log is written in batches: the four downloads are in it before they can be charged.
  await eventually(() => query<{ n: number }>(server, 'SELECT sum(bytes_sent) AS n FROM cdn_requests')[0]?.n === 20 * MB, 'the downloads in the request log');
  const before = (await client.summary()).credits.usedCredits;

  const settled = await server.admin(['credits', 'settle']);
  t.same(settled, { transfer: { entries: 1, bytes: 20 * MB, credits: 20 } }, 'one entry: 20 MB at 1000 credits/GB');
  const after = (await client.summary()).credits;
  t.equal(after.usedCredits - before, 20, 'usedCredits moved by the charge');
  const entry = (await client.usage(50)).creditLedger.find((e) => e.eventType === 'transfer');
  t.ok(entry, 'the ledger shows it');
  t.match(entry, { bytes: 20 * MB, credits: 20, rate: RATE, metadata: { period: /^\d{4}-\d\d-\d\dT\d\d:00:00\.000Z\/\d{4}-\d\d-\d\dT\d\d:00:00\.000Z$/ } }, 'its bytes, credits, rate and hour');
  const stored = query<{ metadata: string; rate_milli: number }>(server, "SELECT metadata, rate_milli FROM credit_ledger WHERE event_type = 'transfer'");
  t.equal(stored.length, 1);
  t.equal(stored[0]?.rate_milli, RATE * 1000, 'the rate kept with it');
  t.match(JSON.parse(stored[0]?.metadata ?? '{}'), { period: /^\d{4}-\d\d-\d\dT\d\d:00:00\.000Z\/\d{4}-\d\d-\d\dT\d\d:00:00\.000Z$/ }, 'the hour it is for');

  t.same(await server.admin(['credits', 'settle']), { transfer: { entries: 0, bytes: 0, credits: 0 } }, 'settled again: nothing more');
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
  await page.screenshot({ path: join(artifactsDir('metering'), 'usage-transfer.png'), fullPage: true });
  t.same(problems, [], 'no script error');
});
