// What happens at zero credits (issue 37), against the real server. With credits.atZero
// 'suspend-delivery' and no grace: a user's transfer, charged by `s3edge credits settle`, takes the balance
// below zero; within about a second the CDN (a public asset, a signed link, a public bucket's object) and
// the edge proxy (a project hostname with a URL origin, one with a bucket origin, a WebSocket upgrade)
// answer 402 with one line saying why, the origin is not asked, and the request log keeps every refusal;
// the owner's S3 GET and DELETE and API download go on, uploads are 402 insufficient_credits; the summary
// says since when and that delivery stopped, the dashboard's banner says so (role alert, screenshots);
// `s3edge credits grant` brings delivery back within about a second, and the banner turns to the low
// balance (role status). With 'refuse-uploads' (the default), a balance below zero stops uploads only.
import t from 'tap';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { join } from 'node:path';
import { apiUser, eventually, query, ResponseRecorder } from '../helpers/api.js';
import { describeFindings, seriousA11yViolations } from '../helpers/axe.js';
import { artifactsDir, launchBrowser, setPassword, signedInPage } from '../helpers/browser.js';
import { CdnClient } from '../helpers/cdn.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { ApiClientError } from '../../src/client/index.js';

const REFUSAL = "Payment Required: the credits of this content's owner have run out, so it is not served. It is served again once the owner adds credits.\n";
const PASSWORD = 'a-long-enough-password';

/** A loopback origin that counts what it is asked. */
async function startOrigin(): Promise<{ server: Server; url: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    seen.push(`${req.method ?? ''} ${req.url ?? ''}`);
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('hello from the origin\n');
  });
  server.on('upgrade', (req: IncomingMessage, socket) => {
    seen.push(`UPGRADE ${req.url ?? ''}`);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/** A request to a project hostname on the main listener. */
function site(server: RunningServer, host: string, target = '/', method = 'GET'): Promise<RawResponse> {
  return rawRequest({ url: server.url }, { method, target, headers: [['Host', host]] });
}

/** A raw WebSocket handshake for `host`; resolves with all the server wrote once it closed. */
function upgrade(server: RunningServer, host: string): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(Number(new URL(server.url).port), '127.0.0.1');
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString('latin1')));
    s.on('close', () => resolve(got));
    s.on('error', () => undefined);
    s.write(`GET /chat HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
  });
}

/** How long until `status` answers `expected` four times running (every serving process, with S3EDGE_TEST_WORKERS=2), polling. */
async function timeUntil(status: () => Promise<number>, expected: number, what: string): Promise<number> {
  const start = performance.now();
  await eventually(async () => {
    for (let i = 0; i < 4; i++) if ((await status()) !== expected) return false;
    return true;
  }, what, 10_000);
  return performance.now() - start;
}

const CREDITS_ENV = {
  S3EDGE_CREDITS_ENABLED: 'true',
  S3EDGE_CREDITS_FREE_MONTHLY_CREDITS: '1',
  S3EDGE_CREDITS_LOW_CREDIT_THRESHOLD: '100',
  // An upload costs a thousandth of a credit: charged, and refused below zero.
  S3EDGE_CREDITS_UPLOAD_CREDITS_PER_UNIT: '0.001',
  S3EDGE_CREDITS_UPLOAD_CREDIT_UNIT_BYTES: '1000000',
  // A milli-credit a byte: a 3000-byte download is 3 credits.
  S3EDGE_CREDITS_TRANSFER_CREDITS_PER_GB: '1000000',
  S3EDGE_CDN_LOG_FLUSH_INTERVAL_MS: '50',
};

t.test("suspend-delivery: the CDN and the proxy answer 402 once the balance is gone; the owner's access goes on; a grant restores delivery", async (t) => {
  const origin = await startOrigin();
  t.teardown(() => new Promise<void>((resolve) => origin.server.close(() => resolve())));
  const server = await startServer({
    env: { ...CREDITS_ENV, S3EDGE_CREDITS_AT_ZERO: 'suspend-delivery', S3EDGE_CREDITS_DELIVERY_GRACE_HOURS: '0', S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true' },
  });
  t.teardown(() => server.stop());
  const recorder = new ResponseRecorder();
  const cdn = new CdnClient(server, recorder);

  // ana: a public and a private asset, a public bucket, a project with a URL origin and a bucket origin.
  const { client, name } = await apiUser(server, ['assets:read', 'assets:write', 'usage:read'], { recorder, name: 'ana' });
  const start = (await client.summary()).credits;
  t.match(start, { balance: 1, low: true, atZero: 'suspend-delivery', deliveryGraceHours: 0, depletedAt: null, deliverySuspendsAt: null, deliverySuspended: false }, 'the free credit: low, nothing stopped');
  const asset = await client.upload({ file: Buffer.alloc(3000, 1), fileName: 'photo.bin', contentType: 'application/octet-stream' });
  const secret = await client.upload({ file: Buffer.alloc(10, 2), fileName: 'secret.bin', contentType: 'application/octet-stream', visibility: 'private' });
  const keys = await server.admin(['account-keys', 'create', '--user', name]);
  const s3 = new RawS3({ url: server.url }, { accessKeyId: keys['accessKeyId'] as string, secretAccessKey: keys['secretAccessKey'] as string });
  t.equal((await s3.createBucket('ana-pics')).status, 200);
  t.equal((await s3.putObject('ana-pics', 'index.html', Buffer.from('<h1>pics</h1>'), { 'content-type': 'text/html' })).status, 200);
  t.equal((await s3.putObject('ana-pics', 'spare.txt', Buffer.from('spare'))).status, 200);
  await server.admin(['buckets', 'public', 'ana-pics']);
  await server.admin(['projects', 'create', 'web', '--user', name]);
  for (const host of ['www.ana-shop.com', 'pics.ana-shop.com']) {
    await server.admin(['hostnames', 'add', host, '--user', name, '--project', 'web']);
    await server.admin(['hostnames', 'verify', host, '--operator']);
  }
  await server.admin(['hostnames', 'set-origin', 'www.ana-shop.com', '--url', origin.url]);
  await server.admin(['hostnames', 'set-origin', 'pics.ana-shop.com', '--bucket', 'ana-pics', '--index', 'index.html']);

  const assetTarget = cdn.targetOf(asset.publicUrl);
  const signed = cdn.targetOf((await client.signedUrl(secret.id)).url);
  const deliveries = async (): Promise<number[]> => [
    (await cdn.request(assetTarget)).status,
    (await cdn.request(signed)).status,
    (await cdn.request('/b/ana-pics/index.html')).status,
    (await site(server, 'www.ana-shop.com')).status,
    (await site(server, 'pics.ana-shop.com')).status,
  ];
  await eventually(async () => (await site(server, 'pics.ana-shop.com')).status === 200, 'the hostnames routed');
  t.same(await deliveries(), [200, 200, 200, 200, 200], 'everything served while credits last');

  // The transfer (3000 bytes and more: over 3 credits) charged: the balance goes below zero.
  const owner = (query<{ id: string }>(server, 'SELECT id FROM users WHERE name = ?', name)[0] as { id: string }).id;
  const served = (): { n: number; bytes: number } => query<{ n: number; bytes: number }>(server, 'SELECT count(*) AS n, sum(bytes_sent) AS bytes FROM cdn_requests WHERE owner_id = ?', owner)[0] ?? { n: 0, bytes: 0 };
  await eventually(() => served().n >= 6 && served().bytes > 3000, 'the deliveries in the request log');
  const settled = await server.admin(['credits', 'settle']);
  t.equal((settled['transfer'] as { entries: number }).entries, 1, 'one transfer entry');
  const depleted = (await client.summary()).credits;
  t.ok(depleted.balance < 0, `below zero (${depleted.balance})`);
  t.ok(depleted.depletedAt !== null && Math.abs(Date.parse(depleted.depletedAt) - Date.now()) < 60_000, 'depletedAt: just now');
  t.match(depleted, { low: true, deliverySuspendsAt: depleted.depletedAt, deliverySuspended: true }, 'no grace: delivery stops at once');
  const [row] = query<{ depleted_at: number; created_at: number }>(
    server,
    "SELECT a.depleted_at, l.created_at FROM credit_accounts a JOIN credit_ledger l ON l.user_id = a.user_id AND l.event_type = 'transfer' WHERE a.user_id = ?",
    owner,
  );
  t.equal(row?.depleted_at, row?.created_at, 'depleted_at is the time of the transfer entry that took the balance there');

  // Within about a second (each process reads the suspended owners at most once a second).
  const stopped = await timeUntil(async () => (await cdn.request(assetTarget)).status, 402, 'the CDN refuses');
  t.ok(stopped < 2000, `the CDN stopped ${Math.round(stopped)} ms after the settlement returned`);
  const refused = await cdn.request(assetTarget);
  t.equal(refused.text, REFUSAL, 'one line saying why, and what brings it back');
  t.match(refused.headers, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  t.equal(refused.headers['x-cache'], undefined, 'not from the cache');
  const head = await cdn.request(assetTarget, { method: 'HEAD' });
  t.same([head.status, head.text], [402, ''], 'HEAD: the status, no body');
  const seenBefore = origin.seen.length;
  t.same(await deliveries(), [402, 402, 402, 402, 402], 'public asset, signed link, public bucket object, URL origin, bucket origin: all 402');
  const proxied = await site(server, 'www.ana-shop.com', '/page');
  t.equal(proxied.text, REFUSAL);
  t.match(proxied.headers['x-request-id'], /^[0-9a-f-]{36}$/, 'the proxy names its request id');
  t.match(await upgrade(server, 'www.ana-shop.com'), /^HTTP\/1\.1 402 Payment Required\r\n[^]*\r\n\r\nPayment Required: the credits/, 'a WebSocket upgrade: 402 too');
  t.equal(origin.seen.length, seenBefore, 'the origin was never asked');
  t.equal((await cdn.request('/b/ana-pics/nothing-here')).status, 404, 'what does not exist is still a bare 404');
  t.equal((await cdn.request(`/${'0'.repeat(24)}/nothing.bin`)).status, 404);

  // The owner: S3 and the API go on (take data out, delete it); uploads are refused.
  const own = await s3.getObject('ana-pics', 'index.html');
  t.same([own.status, own.text], [200, '<h1>pics</h1>'], "the owner's S3 GET");
  t.equal((await s3.deleteObject('ana-pics', 'spare.txt')).status, 204, "the owner's S3 DELETE");
  const download = await client.download(asset.id);
  t.same([download.status, download.body.length], [200, 3000], "the owner's API download");
  const upload = await client.upload({ file: Buffer.alloc(10), fileName: 'more.bin' }).then(() => undefined, (err: unknown) => err);
  t.ok(upload instanceof ApiClientError && upload.status === 402 && upload.body['code'] === 'insufficient_credits', 'an upload: 402 insufficient_credits');

  // The request log keeps every refusal: the CDN's as 402, the proxy's with their decision.
  // 4 proxied refusals (the URL origin twice, the bucket origin, the upgrade) and at least 9 of the CDN's.
  const logged = (): { surface: string; decision: string; n: number }[] =>
    query(server, 'SELECT surface, decision, count(*) AS n FROM cdn_requests WHERE status = 402 AND owner_id = ? GROUP BY 1, 2 ORDER BY 1', owner);
  await eventually(() => (logged()[0]?.n ?? 0) >= 9 && logged()[1]?.n === 4, 'every refusal in the request log');
  t.match(logged(), [{ surface: 'cdn', decision: 'allowed' }, { surface: 'proxy', decision: 'credits-depleted' }], 'CDN and proxy refusals logged, with their owner');
  const byDecision = (await client.proxyLogRequests({ decision: 'credits-depleted' })).requests;
  t.ok(byDecision.length >= 4 && byDecision.every((r) => r.surface === 'proxy' && r.status === 402), "the proxy logs list the proxy's by their decision");
  const cdnRefused = (await client.proxyLogRequests({ decision: 'refused' })).requests;
  t.ok(cdnRefused.some((r) => r.surface === 'cdn' && r.status === 402), "and the CDN's 402 among its refusals");

  // The dashboard: the banner says what stopped, since when, and how to get credits.
  await setPassword(server, name, PASSWORD);
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const { page, problems, goTo } = await signedInPage(browser, server, name, PASSWORD);
  await goTo('overview');
  const alert = page.getByTestId('credits-banner');
  await alert.waitFor();
  t.equal(await alert.getAttribute('role'), 'alert', 'at zero: an alert');
  const text = (await alert.textContent()) ?? '';
  t.match(text, /^Your credits have run out \(balance -\d/, 'the balance');
  t.match(text, /your public files, public buckets and project sites have not been served since \d{1,2} \w{3} \d{4}, \d\d:\d\d: visitors get “402 Payment Required”/, 'what stopped, and since when');
  t.match(text, /You can still download and delete your data\. To add credits, ask this gateway's administrator for a grant\. 1 free credit comes at the start of each month \(UTC\)\. Balance and charges$/, 'how to get credits, and where the balance is');
  t.same(await seriousA11yViolations(page).then((f) => describeFindings(f)), '', 'no serious accessibility finding');
  const dir = artifactsDir('credits-at-zero');
  await page.screenshot({ path: join(dir, 'overview-depleted-light-1280.png'), fullPage: true });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.setViewportSize({ width: 390, height: 844 });
  t.same(await seriousA11yViolations(page).then((f) => describeFindings(f)), '', 'dark, 390 px: no serious accessibility finding');
  t.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 390), 'nothing wider than the phone');
  await page.screenshot({ path: join(dir, 'overview-depleted-dark-390.png'), fullPage: true });
  await goTo('usage');
  await page.getByTestId('credits-banner').waitFor();
  t.match(await page.getByTestId('credits-banner').textContent(), /^Your credits have run out[^]*each month \(UTC\)\.$/, 'the usage page says it too (without a link to itself)');
  await page.screenshot({ path: join(dir, 'usage-depleted-dark-390.png'), fullPage: true });

  // A grant (another process, the admin CLI): delivery is back within about a second.
  const granted = await server.admin(['credits', 'grant', '--user', name, '--amount', '10']);
  t.ok((granted['balance'] as number) > 0, `above zero again (${String(granted['balance'])})`);
  const resumed = await timeUntil(async () => (await cdn.request(assetTarget)).status, 200, 'the CDN serves again');
  t.ok(resumed < 2000, `the CDN resumed ${Math.round(resumed)} ms after the grant returned`);
  t.same(await deliveries(), [200, 200, 200, 200, 200], 'everything served again');
  t.match((await client.summary()).credits, { low: true, depletedAt: null, deliverySuspendsAt: null, deliverySuspended: false }, 'cleared; still low');

  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 900 });
  await goTo('overview');
  const status = page.getByTestId('credits-banner');
  await status.waitFor();
  t.equal(await status.getAttribute('role'), 'status', 'low: a status, not an alert');
  t.match(await status.textContent(), /^Your credit balance is low: [\d.]+ left \(the warning starts below 100\)\. When it reaches zero, uploads are refused, and your public files, public buckets and project sites stop being served\./);
  await page.screenshot({ path: join(dir, 'overview-low-light-1280.png'), fullPage: true });
  t.same(problems, [], 'no script error');
  recorder.assertNoLeaks(t, ['127.0.0.1:' + new URL(origin.url).port, 'depleted_at', 'credit_accounts', 'meta.db']);
});

t.test('refuse-uploads (the default): below zero, uploads are refused and delivery goes on', async (t) => {
  const server = await startServer({ env: CREDITS_ENV });
  t.teardown(() => server.stop());
  const recorder = new ResponseRecorder();
  const cdn = new CdnClient(server, recorder);
  const { client } = await apiUser(server, ['assets:read', 'assets:write'], { recorder, name: 'bo' });
  t.equal((await client.summary()).credits.atZero, 'refuse-uploads');
  const asset = await client.upload({ file: Buffer.alloc(3000, 3), fileName: 'song.bin', contentType: 'application/octet-stream' });
  const target = cdn.targetOf(asset.publicUrl);
  t.equal((await cdn.request(target)).status, 200);
  await eventually(() => (query<{ n: number }>(server, 'SELECT sum(bytes_sent) AS n FROM cdn_requests')[0]?.n ?? 0) >= 3000, 'the download in the request log');
  await server.admin(['credits', 'settle']);
  const c = (await client.summary()).credits;
  t.ok(c.balance < 0, `below zero (${c.balance})`);
  t.match(c, { atZero: 'refuse-uploads', deliverySuspendsAt: null, deliverySuspended: false }, 'delivery never stops');
  t.ok(c.depletedAt !== null, 'depletedAt is kept all the same');
  // Longer than a suspension would take to be seen.
  const statuses = new Set<number>();
  for (const until = performance.now() + 1200; performance.now() < until; ) statuses.add((await cdn.request(target)).status);
  t.same([...statuses], [200], 'still served, for longer than a suspension takes to be seen');
  const upload = await client.upload({ file: Buffer.alloc(10), fileName: 'more.bin' }).then(() => undefined, (err: unknown) => err);
  t.ok(upload instanceof ApiClientError && upload.status === 402, 'uploads: 402');
});
