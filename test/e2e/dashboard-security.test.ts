// The security events page in a real browser (Debian's chromium, headless) against the real server,
// with traffic sent through the edge proxy to a loopback origin of the test's own: client addresses
// from X-Forwarded-For and countries from a header (the test is the server's trusted proxy). The
// request log and its filters, pages through it, percentages and reasons in words, chart points that
// fit the window, an anomaly's detail with its source, and one-click blocks of an IP and a country
// that the proxy then enforces, each undone. Screenshots go to test-artifacts/dashboard-security.
import t from 'tap';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startServer } from '../helpers/server.js';
import { artifactsDir, launchBrowser, setPassword, signedInPage } from '../helpers/browser.js';
import { describeFindings, seriousA11yViolations } from '../helpers/axe.js';

const PASSWORD = 'security test passphrase';
const HOST = 'shop.example.com';
const BUCKET_SECONDS = 10;
const BURST_IP = '192.0.2.50';

const origin = createServer((_req, res) => res.end('hello from the origin\n'));
await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => origin.close(() => resolve())));

const server = await startServer({
  env: {
    S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true',
    S3EDGE_CDN_TRUSTED_PROXIES: '127.0.0.1',
    S3EDGE_CDN_COUNTRY_HEADER: 'x-test-country',
    S3EDGE_CDN_LOG_FLUSH_INTERVAL_MS: '50',
    S3EDGE_EDGE_ANOMALIES_BUCKET_SECONDS: String(BUCKET_SECONDS),
    S3EDGE_EDGE_ANOMALIES_MIN_REQUESTS: '20',
  },
});
t.teardown(() => server.stop());
await server.admin(['users', 'create', 'dana']);
await setPassword(server, 'dana', PASSWORD);
await server.admin(['users', 'create', 'eve']);
await server.admin(['projects', 'create', 'shop', '--user', 'dana']);
await server.admin(['hostnames', 'add', HOST, '--user', 'dana', '--project', 'shop']);
await server.admin(['hostnames', 'set-origin', HOST, '--url', `http://127.0.0.1:${(origin.address() as AddressInfo).port}`]);
await server.admin(['hostnames', 'set-rules', HOST, '--rules', '{"allowedMethods":["GET","HEAD"]}']);
await server.admin(['hostnames', 'verify', HOST, '--operator']);

/** One request through the proxy from `ip` in `country`; its status. */
function send(ip: string, country: string, path = '/', method = 'GET'): Promise<number> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, method, path, headers: { host: HOST, 'x-forwarded-for': ip, 'x-test-country': country } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

// The route table picks the CLI's changes up within 250 ms.
for (let i = 0; i < 40 && (await send('198.51.100.9', 'DE')) !== 200; i++) await new Promise((r) => setTimeout(r, 100));
// The burst first, at the start of a bucket, so that its bucket closes while the page is tested.
const untilBucket = BUCKET_SECONDS * 1000 - (Date.now() % (BUCKET_SECONDS * 1000));
if (untilBucket < 3000) await new Promise((r) => setTimeout(r, untilBucket + 50));
for (let i = 0; i < 60; i++) await send(BURST_IP, 'FR', '/login');
const SOURCES = [
  ['198.51.100.1', 'DE'],
  ['198.51.100.2', 'NG'],
  ['198.51.100.3', 'US'],
] as const;
const PATHS = ['/', '/api/items', '/img/a.png'];
const statuses: number[] = [];
for (let i = 0; i < 30; i++) {
  const [ip, country] = SOURCES[i % 3]!;
  statuses.push(await send(ip, country, PATHS[Math.floor(i / 3) % 3]));
}
for (let i = 0; i < 5; i++) statuses.push(await send('203.0.113.9', 'CN', '/api/items', 'POST'));
// 1 request before the burst + 60 + 30 + 5.
const TOTAL = 96;

const shots = artifactsDir('dashboard-security');
const browser = await launchBrowser();
t.teardown(() => browser.close());
const session = await signedInPage(browser, server, 'dana', PASSWORD);
const { page, problems } = session;

/** A GET of the API through the page's session. */
const apiInPage = (path: string) => session.api('GET', path);

async function rules(): Promise<{ blockIps: string[]; blockCountries: string[]; allowedMethods: string[] }> {
  const projects = (await apiInPage('/api/v3/projects')).body['projects'] as { id: string }[];
  const listed = (await apiInPage(`/api/v3/projects/${projects[0]!.id}/hostnames`)).body['hostnames'] as { hostname: string; rules: { blockIps: string[]; blockCountries: string[]; allowedMethods: string[] } }[];
  return listed.find((h) => h.hostname === HOST)!.rules;
}

const logRows = page.getByRole('table', { name: 'Request log' }).locator('tbody tr');
/** The log's row count once it is `n` (the list renders after its answer), or what it is after 10 s. */
async function rowsOnceThere(n: number): Promise<number> {
  await page.locator('[data-testid="log"][aria-busy="false"]').waitFor();
  for (let i = 0; i < 100; i++) {
    if ((await logRows.count()) === n) return n;
    await new Promise((r) => setTimeout(r, 100));
  }
  return logRows.count();
}

t.test('the page: totals, percentages and reasons in words, points that fit the window', async (t) => {
  t.same(statuses, [...Array<number>(30).fill(200), ...Array<number>(5).fill(405)], 'GETs served, POSTs refused by the method rule');
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Security events' }).click();
  await page.getByTestId('blocked-by').waitFor();
  t.match(await page.getByTestId('blocked-by').textContent(), /Method not allowed:\s*5 requests, 5\.\d% of all/, 'blocked by rule, in words and as a share');
  t.match(await page.locator('.stats').textContent(), new RegExp(`${TOTAL}Requests`), 'every request counted');
  t.match(await page.getByTestId('risk-signals').textContent(), /5\.\d% of requests were blocked: 2 of its 35 points/, 'the risk in words');
  t.match(await page.getByTestId('countries').textContent(), /France:\s*6\d% of requests \(60\)/, 'countries with their share');
  const text = (await page.locator('main').textContent()) ?? '';
  t.notMatch(text, /blocked-share|-concentration|method-not-allowed|\d \/ \d/, 'no machine names or raw ratios');
  await page.screenshot({ path: join(shots, 'fitted-window.png'), fullPage: true });
  await page.getByLabel('Busiest by').selectOption('bytes');
  const byBytes = page.getByRole('table', { name: 'Top client IPs by bytes sent' });
  await byBytes.waitFor();
  t.match(await byBytes.locator('tbody tr').first().textContent(), /192\.0\.2\.50/, 'top sources by bytes sent too');
  await page.getByLabel('Busiest by').selectOption('requests');
  const day = await apiInPage(`/api/v3/cdn/proxy-logs?hostname=${HOST}&hours=24`);
  const hour = await apiInPage(`/api/v3/cdn/proxy-logs?hostname=${HOST}&hours=1`);
  const series = (r: typeof day) => (r.body['data'] as { series: { bucketSeconds: number; points: unknown[] } }).series;
  t.same([series(hour).bucketSeconds, series(hour).points.length], [60, 61], 'an hour: a point a minute');
  t.same([series(day).bucketSeconds, series(day).points.length], [300, 289], 'a day: a point for 5 minutes');
  t.match(await page.getByTestId('window-fitted').textContent(), /All the traffic of the last 24 hours is in the last hour/, 'the window fits the traffic');
  t.equal(await page.getByLabel('Window', { exact: true }).inputValue(), '1');
  await page.getByRole('img', { name: 'Allowed and blocked requests, a point for a minute' }).waitFor();
  t.pass('the chart names its points');
  await page.getByLabel('Window', { exact: true }).selectOption('24');
  await page.getByRole('img', { name: 'Allowed and blocked requests, a point for 5 minutes' }).waitFor();
  t.equal(await page.getByTestId('window-fitted').count(), 0, 'a window chosen is kept');
  await page.getByLabel('Window', { exact: true }).selectOption('1');
});

t.test('the request log: every request once over its pages; filters by decision, IP, country, path; bad input in words', async (t) => {
  await logRows.first().waitFor();
  t.equal(await logRows.count(), 25, '25 to a page at first');
  await page.getByLabel('Per page').selectOption('50');
  await logRows.nth(49).waitFor();
  const perPage: number[] = [];
  const older = page.getByRole('button', { name: 'Older' });
  for (let p = 1; ; p++) {
    // The page's own rows: the list says which page it shows once its answer is in.
    await page.locator('[data-testid="log"][aria-busy="false"]').waitFor();
    if (p > 1) await page.getByTestId('log-range').filter({ hasText: `(page ${p})` }).waitFor();
    perPage.push(await logRows.count());
    if (await older.isDisabled()) break;
    await older.click();
  }
  t.same(perPage, [50, TOTAL - 50], 'two pages: 50, then the rest');
  await page.getByRole('button', { name: 'Newer' }).click();
  await page.getByTestId('log-range').filter({ hasNotText: 'page' }).waitFor();

  const filterBy = async (fill: () => Promise<void>) => {
    await page.getByRole('button', { name: 'Clear' }).click();
    await fill();
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForLoadState('networkidle');
  };
  await filterBy(() => page.getByLabel('Decision').selectOption('method-not-allowed').then(() => undefined));
  t.equal(await rowsOnceThere(5), 5, 'the five refused POSTs');
  t.ok((await logRows.allTextContents()).every((r) => /POST \/api\/items405Method not allowed203\.0\.113\.9China/.test(r)), 'each with its method, path, status, decision in words, IP and country');
  await page.screenshot({ path: join(shots, 'log-blocked.png'), fullPage: true });

  await filterBy(() => page.getByLabel('Client IP', { exact: true }).fill('198.51.100.2'));
  t.equal(await rowsOnceThere(10), 10, 'the requests of one IP');
  t.ok((await logRows.allTextContents()).every((r) => r.includes('198.51.100.2') && r.includes('Nigeria')), 'only that IP');
  await filterBy(() => page.getByLabel('Country', { exact: true }).fill('us'));
  await logRows.filter({ hasText: 'United States' }).first().waitFor();
  t.equal(await rowsOnceThere(10), 10, 'a country, in any case');
  t.ok((await logRows.allTextContents()).every((r) => r.includes('United States')), 'only that country');
  await filterBy(() => page.getByLabel('Path starts with').fill('/api/'));
  t.equal(await rowsOnceThere(14), 14, 'the /api/ requests: 9 GETs and 5 POSTs');

  await filterBy(() => page.getByLabel('Country', { exact: true }).fill('Germany'));
  await page.getByText('country must be a two-letter ISO 3166 code').waitFor();
  t.pass('a country by name: the API says how to write it');
  await page.getByRole('button', { name: 'Clear' }).click();
  await logRows.nth(49).waitFor();
  await page.getByLabel('Per page').selectOption('25');
  await logRows.nth(24).waitFor();
});

t.test('one click blocks an IP; the proxy refuses it; undo lets it in again', async (t) => {
  const before = await rules();
  const row = logRows.filter({ hasText: '198.51.100.1' }).first();
  await row.getByRole('button', { name: `Block IP 198.51.100.1 on ${HOST}` }).click();
  await page.getByTestId('block-status').filter({ hasText: `Blocked 198.51.100.1 on ${HOST}.` }).waitFor();
  t.same((await rules()).blockIps, ['198.51.100.1'], 'written to the hostname rules');
  t.same((await rules()).allowedMethods, before.allowedMethods, 'the other rules kept');
  let status = 0;
  for (let i = 0; i < 40 && status !== 403; i++) {
    status = await send('198.51.100.1', 'DE');
    if (status !== 403) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(status, 403, 'the proxy refuses it');
  await page.screenshot({ path: join(shots, 'blocked-ip.png') });
  await page.getByTestId('block-status').getByRole('button', { name: 'Undo' }).click();
  await page.getByTestId('block-status').filter({ hasText: 'Undone' }).waitFor();
  t.same(await rules(), before, 'undo: the rules as they were');
  for (let i = 0; i < 40 && status !== 200; i++) {
    status = await send('198.51.100.1', 'DE');
    if (status !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(status, 200, 'let in again');
});

t.test('one click blocks a country of the hostname; undo', async (t) => {
  await page.getByLabel('Hostname', { exact: true }).selectOption(HOST);
  await page.getByRole('button', { name: `Block country Nigeria on ${HOST}` }).first().click();
  await page.getByTestId('block-status').filter({ hasText: `Blocked Nigeria on ${HOST}.` }).waitFor();
  t.same((await rules()).blockCountries, ['NG']);
  let status = 0;
  for (let i = 0; i < 40 && status !== 403; i++) {
    status = await send('198.51.100.77', 'NG');
    if (status !== 403) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(status, 403, 'a request from Nigeria is refused');
  await page.getByTestId('block-status').getByRole('button', { name: 'Undo' }).click();
  await page.getByTestId('block-status').filter({ hasText: 'Undone' }).waitFor();
  t.same((await rules()).blockCountries, [], 'undone');
});

t.test('an anomaly: in words, and its detail names the source, which one click blocks', async (t) => {
  // The burst's bucket closes BUCKET_SECONDS after it began; a report evaluates closed buckets.
  let anomalies: { id: string; kind: string }[] = [];
  for (let i = 0; i < 60 && anomalies.length === 0; i++) {
    anomalies = ((await apiInPage('/api/v3/cdn/anomalies?state=all')).body['anomalies'] as typeof anomalies).filter((a) => a.kind === 'source-dominance');
    if (anomalies.length === 0) await new Promise((r) => setTimeout(r, 500));
  }
  t.equal(anomalies.length, 1, 'the burst is a source-dominance event');
  await page.getByRole('button', { name: 'Refresh' }).click();
  const events = page.getByRole('table', { name: 'Anomaly events' });
  await events.waitFor();
  t.match(await events.textContent(), new RegExp(`One source sent \\d+% of the requests \\(${BURST_IP.replace(/\./g, '\\.')}\\)`), 'what happened, in words');
  await events.getByRole('button', { name: /Details of the anomaly/ }).click();
  const detail = page.getByTestId('anomaly-detail');
  await detail.waitFor();
  t.match(await page.getByRole('table', { name: 'Sources of the anomaly' }).textContent(), new RegExp(`${BURST_IP.replace(/\./g, '\\.')}60`), 'its source and its requests');
  t.match(await page.getByRole('table', { name: 'Countries of the anomaly' }).textContent(), /France60/, 'its country');
  const findings = await seriousA11yViolations(page);
  t.same(findings, [], `the detail: no serious accessibility violation ${describeFindings(findings)}`);
  await page.screenshot({ path: join(shots, 'anomaly-detail.png') });
  await detail.getByRole('button', { name: `Block IP ${BURST_IP} on ${HOST}` }).click();
  await detail.getByTestId('block-status').filter({ hasText: `Blocked ${BURST_IP}` }).waitFor();
  t.same((await rules()).blockIps, [BURST_IP], 'blocked from the detail');
  await detail.getByTestId('block-status').getByRole('button', { name: 'Undo' }).click();
  await detail.getByTestId('block-status').filter({ hasText: 'Undone' }).waitFor();
  t.same((await rules()).blockIps, [], 'and undone');
  await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();
});

t.test('dragging across the chart lists the requests of that time', async (t) => {
  const over = page.locator('.chart .u-over').first();
  await over.scrollIntoViewIfNeeded();
  const box = await over.boundingBox();
  if (!box) throw new Error('no chart');
  await page.mouse.move(box.x + 2, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  await page.getByText('Requests between').waitFor();
  await logRows.first().waitFor();
  t.ok((await logRows.count()) > 0, 'the span has its requests');
  await page.getByRole('button', { name: 'Show the whole window' }).click();
  await page.getByText('Requests between').waitFor({ state: 'detached' });
});

t.test('light and dark, desktop and phone: screenshots and an accessibility check', async (t) => {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width > 600 ? 900 : 844 });
      await page.reload();
      await page.getByTestId('blocked-by').waitFor();
      await page.waitForLoadState('networkidle');
      await page.screenshot({ path: join(shots, `security-${scheme}-${width}.png`), fullPage: true });
      const findings = await seriousA11yViolations(page);
      t.same(findings, [], `${scheme}, ${width} px: no serious accessibility violation ${describeFindings(findings)}`);
    }
  }
});

t.test('the API: its filters are checked, and only the caller’s traffic is theirs', async (t) => {
  const bad = async (q: string) => (await apiInPage(`/api/v3/cdn/proxy-logs/requests?${q}`)).status;
  t.equal(await bad('decision=maybe'), 400, 'an unknown decision');
  t.equal(await bad('ip=not-an-ip'), 400, 'an IP that is none');
  t.equal(await bad('path=api'), 400, 'a path without /');
  t.equal(await bad('from=yesterday'), 400, 'a time that is not ISO 8601');
  t.equal(await bad('from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z'), 400, 'from after to');
  t.equal(await bad('cursor=abc'), 400, 'a cursor not given by the API');
  t.equal(await bad('hostname=theirs.example.com'), 404, 'a hostname not of the caller');
  const ok = await apiInPage(`/api/v3/cdn/proxy-logs/requests?hostname=${HOST}&decision=blocked&limit=2`);
  const data = ok.body['data'] as { requests: { decision: string }[]; nextCursor: string | null };
  t.equal(data.requests.length, 2);
  t.ok(data.nextCursor, 'a cursor to the next page');
  const nextPage = await apiInPage(`/api/v3/cdn/proxy-logs/requests?hostname=${HOST}&decision=blocked&limit=2&cursor=${encodeURIComponent(String(data.nextCursor))}`);
  t.equal(nextPage.status, 200, 'which the API takes');
  const anomalies = (await apiInPage('/api/v3/cdn/anomalies?state=all')).body['anomalies'] as { id: string }[];
  const eve = { token: String((await server.admin(['api-keys', 'create', '--user', 'eve', '--scopes', 'usage:read']))['token']) };
  const other = await fetch(`${server.url}/api/v3/cdn/anomalies/${anomalies[0]!.id}`, { headers: { authorization: `Bearer ${eve.token}` } });
  t.equal(other.status, 404, "another user's anomaly is not found");
  const theirs = await fetch(`${server.url}/api/v3/cdn/proxy-logs/requests`, { headers: { authorization: `Bearer ${eve.token}` } });
  t.same(((await theirs.json()) as { data: { requests: unknown[] } }).data.requests, [], 'and their log has none of it');
});

t.test('nothing went wrong in the page', async (t) => {
  t.same(problems, [], 'no console errors');
});
