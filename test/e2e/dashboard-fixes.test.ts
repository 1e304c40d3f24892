// The dashboard's details a review found wrong, each checked in a real browser (Debian's chromium,
// headless) against the real server, each failing before its fix:
// - saving a hostname's origin unchanged keeps every field (error document, index, preserve host);
// - a confirmation opened from a table row is centred;
// - after a navigation the new page's title has the focus;
// - copy buttons copy on plain HTTP under a name that is not localhost (no secure context);
// - an upload row shows the file's size; a 402 names what the upload needs against the balance, links
//   to the credits and leaves no half-filled progress bar;
// - the ledger shows a grant as + and with no bytes; a day of storing a little is not "0";
// - shipped light: the overview loads only its own modules (≤ 120 kB compressed, brotli), and asks for
//   the session and its figures at once.
// Screenshots go to test-artifacts/dashboard-fixes.
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { startServer } from '../helpers/server.js';
import { artifactsDir, launchBrowser, setPassword } from '../helpers/browser.js';
import { describeFindings, seriousA11yViolations } from '../helpers/axe.js';

const PASSWORD = 'fixes test passphrase';
// A name that is neither localhost nor an IP literal: plain HTTP to it is not a secure context.
const LAN_NAME = 's3edge.lan.example';

const origin = createServer((_req, res) => res.end('origin\n'));
await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => origin.close(() => resolve())));
const originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;

const server = await startServer({
  env: {
    S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true',
    S3EDGE_CREDITS_ENABLED: 'true',
    S3EDGE_CREDITS_FREE_MONTHLY_CREDITS: '5',
    S3EDGE_CREDITS_UPLOAD_CREDIT_UNIT_BYTES: '1000000',
    S3EDGE_CREDITS_UPLOAD_CREDITS_PER_UNIT: '1',
    S3EDGE_CREDITS_STORAGE_CREDITS_PER_GB_DAY: '1',
  },
});
t.teardown(() => server.stop());
await server.admin(['users', 'create', 'carol']);
await setPassword(server, 'carol', PASSWORD);
await server.admin(['buckets', 'create', 'carol-site', '--user', 'carol']);
await server.admin(['buckets', 'create', 'carol-other', '--user', 'carol']);
await server.admin(['projects', 'create', 'web', '--user', 'carol']);
await server.admin(['hostnames', 'add', 'static.example.com', '--user', 'carol', '--project', 'web']);
await server.admin(['hostnames', 'set-origin', 'static.example.com', '--bucket', 'carol-site', '--index', 'home.html', '--error-document', '404.html']);
await server.admin(['hostnames', 'add', 'app.example.com', '--user', 'carol', '--project', 'web']);
await server.admin(['hostnames', 'set-origin', 'app.example.com', '--url', originUrl, '--preserve-host']);

const shots = artifactsDir('dashboard-fixes');
const { port } = new URL(server.url);
const browser = await launchBrowser([`--host-resolver-rules=MAP ${LAN_NAME} 127.0.0.1`]);
t.teardown(() => browser.close());

const problems: string[] = [];
const alerts: string[] = [];
async function signedInPage(base: string, viewport = { width: 1280, height: 900 }): Promise<Page> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => {
    alerts.push(d.message());
    void d.dismiss();
  });
  await page.goto(`${base}/dashboard/`);
  await page.getByLabel('User name').fill('carol');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('user-name').waitFor();
  return page;
}

const page = await signedInPage(server.url);
async function goTo(p: string): Promise<void> {
  await page.goto(`${server.url}/dashboard/#/${p}`);
  await page.locator('#page-title').waitFor();
}

interface OriginJson { kind: string; bucket?: string; indexDocument?: string; errorDocument?: string | null; url?: string; preserveHost?: boolean }
async function originOf(hostname: string): Promise<OriginJson | undefined> {
  return page.evaluate(async (hostname) => {
    const projects = (await (await fetch('/api/v3/projects')).json()) as { projects: { id: string }[] };
    for (const p of projects.projects) {
      const list = (await (await fetch(`/api/v3/projects/${p.id}/hostnames`)).json()) as { hostnames: { hostname: string; origin: unknown }[] };
      const found = list.hostnames.find((h) => h.hostname === hostname);
      if (found) return found.origin as OriginJson;
    }
    return undefined;
  }, hostname);
}

t.test('saving an origin unchanged keeps its error document, index and preserve-host', async (t) => {
  await goTo('projects');
  const row = page.locator('tr', { has: page.getByTestId('hostname').filter({ hasText: 'static.example.com' }) });
  t.match(await row.textContent(), /error 404\.html/, 'the list shows the error document');
  await row.getByRole('button', { name: 'Origin' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Bucket', { exact: true }).waitFor();
  await dialog.locator('option', { hasText: 'carol-other' }).waitFor({ state: 'attached' });
  t.equal(await dialog.getByLabel('Bucket', { exact: true }).inputValue(), 'carol-site', "the bucket is chosen from the user's buckets, the current one selected");
  t.same(await dialog.getByLabel('Bucket', { exact: true }).locator('option:not([disabled])').allTextContents(), ['carol-other', 'carol-site'], 'a list, not free text');
  t.equal(await dialog.getByLabel('Index document').inputValue(), 'home.html');
  t.equal(await dialog.getByLabel('Error document (optional)').inputValue(), '404.html');
  await page.screenshot({ path: join(shots, 'origin-bucket.png') });
  const findings = await seriousA11yViolations(page);
  t.same(findings, [], `the origin dialog: no serious accessibility violation ${describeFindings(findings)}`);
  await dialog.getByRole('button', { name: 'Save origin' }).click();
  await dialog.waitFor({ state: 'hidden' });
  t.same(await originOf('static.example.com'), { kind: 'bucket', bucket: 'carol-site', indexDocument: 'home.html', errorDocument: '404.html' }, 'nothing erased');

  const app = page.locator('tr', { has: page.getByTestId('hostname').filter({ hasText: 'app.example.com' }) });
  await app.getByRole('button', { name: 'Origin' }).click();
  await dialog.getByLabel('Origin URL', { exact: true }).waitFor();
  t.equal(await dialog.getByRole('checkbox').isChecked(), true, 'preserve host shown as set');
  await dialog.getByRole('button', { name: 'Save origin' }).click();
  await dialog.waitFor({ state: 'hidden' });
  t.same(await originOf('app.example.com'), { kind: 'url', url: originUrl, preserveHost: true }, 'preserveHost kept');

  // And the fields do change what they name.
  await row.getByRole('button', { name: 'Origin' }).click();
  await dialog.getByLabel('Error document (optional)').fill('');
  await dialog.getByLabel('Bucket', { exact: true }).selectOption('carol-other');
  await dialog.getByRole('button', { name: 'Save origin' }).click();
  await dialog.waitFor({ state: 'hidden' });
  t.same(await originOf('static.example.com'), { kind: 'bucket', bucket: 'carol-other', indexDocument: 'home.html', errorDocument: null }, 'an emptied error document is none');
});

/** The dialog's centre against the viewport's, in CSS pixels. */
async function dialogOffset(p: Page): Promise<{ dx: number; dy: number }> {
  return p.evaluate(() => {
    const d = document.querySelector('dialog[open]');
    if (!d) return { dx: Infinity, dy: Infinity };
    const r = d.getBoundingClientRect();
    return { dx: Math.abs(r.left + r.width / 2 - innerWidth / 2), dy: Math.abs(r.top + r.height / 2 - innerHeight / 2) };
  });
}

t.test('a confirmation opened from a table row is centred', async (t) => {
  await goTo('projects');
  const row = page.locator('tr', { has: page.getByTestId('hostname').filter({ hasText: 'app.example.com' }) });
  await row.getByRole('button', { name: 'Remove' }).click();
  await page.getByRole('dialog').waitFor();
  const { dx, dy } = await dialogOffset(page);
  await page.screenshot({ path: join(shots, 'confirm-centred.png') });
  const findings = await seriousA11yViolations(page);
  t.same(findings, [], `the confirmation: no serious accessibility violation ${describeFindings(findings)}`);
  t.ok(dx <= 2 && dy <= 2, `centred (off by ${dx}, ${dy} px)`);
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
  t.equal(await row.count(), 1, 'cancel kept it');
});

t.test('after a navigation the new page title has the focus', async (t) => {
  await goTo('overview');
  for (const [link, title] of [['Assets', 'Assets'], ['Usage & credits', 'Usage and credits'], ['Projects & proxy', 'Projects and edge proxy']] as const) {
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: link }).click();
    await page.locator('#page-title', { hasText: title }).waitFor();
    await page.waitForFunction((title) => document.activeElement?.id === 'page-title' && document.activeElement.textContent === title, title, { timeout: 5000 }).catch(() => undefined);
    t.same(await page.evaluate(() => [document.activeElement?.id, document.activeElement?.textContent]), ['page-title', title], `${link}: focus on its title`);
  }
});

t.test('copy buttons copy on plain HTTP under a LAN name (no secure context)', async (t) => {
  const lan = await signedInPage(`http://${LAN_NAME}:${port}`);
  t.equal(await lan.evaluate(() => window.isSecureContext), false, 'the page is not a secure context');
  // What the page copies, as the copy event sees it (the clipboard itself is the browser's).
  await lan.evaluate(() => {
    const w = window as unknown as { __copied: string[] };
    w.__copied = [];
    document.addEventListener('copy', () => w.__copied.push(String(document.getSelection())), true);
  });
  await lan.goto(`http://${LAN_NAME}:${port}/dashboard/#/api-keys`);
  await lan.locator('#page-title').waitFor();
  await lan.getByRole('button', { name: 'New API key' }).click();
  await lan.getByRole('dialog').getByLabel('Name', { exact: true }).fill('laptop');
  await lan.getByRole('dialog').getByRole('checkbox').first().check();
  await lan.getByRole('button', { name: 'Create key' }).click();
  const token = await lan.getByTestId('api-key-token').textContent();
  t.match(token, /^\S{20,}$/, 'the shown-once token');
  await lan.getByRole('dialog').getByRole('button', { name: 'Copy' }).first().click();
  await t.resolves(lan.getByRole('dialog').getByRole('button', { name: 'Copied' }).waitFor({ timeout: 5000 }), 'the button says it copied');
  t.same(await lan.evaluate(() => (window as unknown as { __copied: string[] }).__copied), [token], 'the token was copied');
  await lan.screenshot({ path: join(shots, 'copy-lan.png') });
  await lan.context().close();
});

t.test('uploads: the file size, and a 402 that says what it needs and leaves no progress bar', async (t) => {
  await goTo('assets');
  await page.getByTestId('file-input').setInputFiles({ name: 'small.txt', mimeType: 'text/plain', buffer: Buffer.alloc(200, 'a') });
  const small = page.getByTestId('upload-row').filter({ hasText: 'small.txt' });
  await small.getByTestId('upload-state').filter({ hasText: 'Uploaded' }).waitFor();
  t.equal(await small.getByTestId('upload-size').textContent(), '200 B', "the file's size, not the request's");

  await page.getByTestId('file-input').setInputFiles({ name: 'store.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(100_000, 1) });
  await page.getByTestId('upload-row').filter({ hasText: 'store.bin' }).getByTestId('upload-state').filter({ hasText: 'Uploaded' }).waitFor();
  // Balance 5 - 1 - 1 = 3; six million bytes need 6 credits.
  await page.getByTestId('file-input').setInputFiles({ name: 'big.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(6_000_000, 2) });
  const big = page.getByTestId('upload-row').filter({ hasText: 'big.bin' });
  await big.getByTestId('upload-state').filter({ hasText: 'Failed' }).waitFor({ timeout: 30_000 });
  t.equal(await big.getByRole('alert').textContent(), 'Not enough credits for this upload: it needs 6 credits and your balance is 3. See your credits and usage.', 'required vs balance');
  t.equal(await big.getByRole('link', { name: 'See your credits and usage' }).getAttribute('href'), '#/usage', 'and where to look');
  t.equal(await big.getByTestId('upload-progress').count(), 0, 'no part-filled bar after the failure');
  await page.screenshot({ path: join(shots, 'upload-402.png') });
});

t.test('the ledger: a grant is +, with no bytes; a day of storing 100 kB is not 0', async (t) => {
  await goTo('usage');
  const grant = page.locator('tr', { hasText: 'Free monthly credits' });
  await grant.waitFor();
  t.equal(await grant.getByTestId('ledger-credits').textContent(), '+5', 'the free grant adds 5');
  t.equal(await grant.locator('td[data-label=Bytes]').textContent(), '–', 'and moves no bytes');
  const upload = page.locator('tr', { hasText: 'small.txt' }).filter({ has: page.getByTestId('ledger-credits') });
  t.equal(await upload.first().getByTestId('ledger-credits').textContent(), '−1', 'an upload takes 1');
  await page.screenshot({ path: join(shots, 'usage-ledger.png'), fullPage: true });

  await goTo('overview');
  const daily = page.getByTestId('daily-storage');
  await daily.waitFor();
  // 100,200 bytes at 1 credit per GB-day: 0.0001 a day, which the API's thousandths round to 0.
  t.equal(await daily.textContent(), '0.0001', 'the projection shows its digits');
});

t.test('shipped light: the overview loads its own code only, compressed, and asks for the session and its figures at once', async (t) => {
  const fresh = await browser.newContext();
  await fresh.addCookies(await page.context().cookies());
  const p = await fresh.newPage();
  const requests: { url: string; start: number; end: number; encoding: string | undefined }[] = [];
  p.on('requestfinished', (r) => {
    const timing = r.timing();
    // A request that finishes as the context closes (after the checks below) has no response left to
    // read: its rejection is not a failure of the page, and unhandled it would end the test process.
    void r.response().then(
      (res) => requests.push({ url: new URL(r.url()).pathname, start: timing.startTime + Math.max(0, timing.requestStart), end: timing.startTime + timing.responseEnd, encoding: res?.headers()['content-encoding'] }),
      () => undefined,
    );
  });
  await p.goto(`${server.url}/dashboard/#/overview`);
  await p.getByTestId('daily-storage').waitFor();
  const js = await p.evaluate(() => performance.getEntriesByType('resource')
    .filter((r) => new URL(r.name).pathname.endsWith('.js'))
    .map((r) => ({ name: new URL(r.name).pathname, bytes: (r as PerformanceResourceTiming).encodedBodySize })));
  const total = js.reduce((n, r) => n + r.bytes, 0);
  t.ok(total > 0 && total <= 120_000, `the overview's JavaScript is ${total} bytes compressed (at most 120 kB)`);
  t.ok(js.some((r) => /page-overview-/.test(r.name)), 'the overview page module is loaded');
  t.same(js.filter((r) => /page-(assets|api-keys|storage|usage|projects|domains)-/.test(r.name)), [], 'no other page module is');
  t.ok(requests.filter((r) => r.url.endsWith('.js')).every((r) => r.encoding === 'br'), 'every script came brotli-compressed');
  const session = requests.find((r) => r.url === '/dashboard/session');
  const summary = requests.find((r) => r.url === '/api/v3/cdn/summary');
  t.ok(session && summary && summary.start < session.end, 'the summary was asked for before the session check answered');
  await p.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Assets' }).click();
  await p.locator('#page-title', { hasText: 'Assets' }).waitFor();
  t.ok(await p.evaluate(() => performance.getEntriesByType('resource').some((r) => /page-assets-/.test(r.name))), 'the assets page module came when the page was opened');
  await fresh.close();
});

t.test('nothing went wrong in the page', async (t) => {
  t.same(problems, [], `no console errors: ${problems.join(' | ')}`);
  t.same(alerts, [], 'no alerts');
});
