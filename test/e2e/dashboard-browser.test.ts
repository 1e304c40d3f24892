// The account dashboard in a real browser (Debian's chromium, headless, driven by playwright-core)
// against the real server: sign in; upload 20 MB and watch the progress bar reach 100%; the asset's
// public URL serves it from the CDN; an API key created in the page works with curl and is shown once;
// a storage access key created in the page works with aws cli; both deleted in the page stop working;
// a hostile file name is shown as text; a call without the CSRF token is refused; another user's
// asset is not found. Every page is screenshotted (light, dark, phone) into test-artifacts/dashboard.
import t from 'tap';
import { execFile } from 'node:child_process';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startServer } from '../helpers/server.js';
import { apiUser, ResponseRecorder } from '../helpers/api.js';
import { CdnClient } from '../helpers/cdn.js';
import { artifactsDir, launchBrowser, setPassword } from '../helpers/browser.js';
import { describeFindings, seriousA11yViolations } from '../helpers/axe.js';
import { tempDir } from '../helpers/temp-data.js';
import { bootstrapJson, startRdapFixture } from '../helpers/rdap-fixture.js';

const run = promisify(execFile);
const PASSWORD = 'browser test passphrase';
const HOSTILE = '<img src=x onerror=alert(1)>.png';
const PAGES = ['overview', 'assets', 'api-keys', 'storage', 'objects', 'usage', 'projects', 'security', 'domains', 'api'] as const;

// alice's site behind the edge proxy: a loopback origin (hence allowPrivateOrigins), GET only.
const origin = createServer((_req, res) => res.end('hello from the origin\n'));
await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => origin.close(() => resolve())));
// The registries of the domain search: a loopback RDAP server of the test's own for every popular TLD.
const rdap = await startRdapFixture({ defaultBehaviour: { kind: 'registered' } });
t.teardown(() => rdap.close());
const RDAP_TLDS = ['com', 'net', 'org', 'io', 'ai', 'app', 'dev', 'co', 'xyz', 'ng', 'cv', 'uk', 'de', 'me', 'online', 'store', 'tech', 'info'];
rdap.serve('/bootstrap.json', 200, JSON.stringify(bootstrapJson(RDAP_TLDS, rdap.baseUrl)), 'application/json');
rdap.set('dashboard-shop.com', { kind: 'available' });
const server = await startServer({ env: { S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true', S3EDGE_DOMAINS_RDAP_ALLOW_PRIVATE_ADDRESSES: 'true' } });
t.teardown(() => server.stop());
await server.admin(['rdap-bootstrap', 'refresh', '--url', `${rdap.origin}/bootstrap.json`]);
await server.admin(['promotions', 'create', 'com', '--bonus-usd', '2.50', '--ends', '2099-12-31']);
await server.admin(['users', 'create', 'alice']);
await setPassword(server, 'alice', PASSWORD);
await server.admin(['buckets', 'create', 'alice-photos', '--user', 'alice']);
await server.admin(['projects', 'create', 'website', '--user', 'alice']);
await server.admin(['hostnames', 'add', 'www.example.com', '--user', 'alice', '--project', 'website']);
await server.admin(['hostnames', 'add', 'shop.example.com', '--user', 'alice', '--project', 'website']);
await server.admin(['hostnames', 'set-origin', 'shop.example.com', '--url', `http://127.0.0.1:${(origin.address() as AddressInfo).port}`]);
await server.admin(['hostnames', 'set-rules', 'shop.example.com', '--rules', '{"allowedMethods":["GET"]}']);
await server.admin(['hostnames', 'verify', 'shop.example.com', '--operator']);

/** One request to the proxy for shop.example.com; its status. */
function proxied(method: string): Promise<number> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, method, path: '/', headers: { host: 'shop.example.com' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}
const bob = await apiUser(server, ['assets:read', 'assets:write'], { name: 'bob' });
const bobsAsset = await bob.client.upload({ file: Buffer.from('bob only'), fileName: 'bob-secret.txt', contentType: 'text/plain' });

const shots = artifactsDir('dashboard');
const work = tempDir(t);
const browser = await launchBrowser();
t.teardown(() => browser.close());
const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
const page = await context.newPage();
const base = `${server.url}/dashboard/`;

// Everything the page reports: a CSP violation, a script error or a dialog (alert) is a finding.
const consoleProblems: string[] = [];
const dialogs: string[] = [];
page.on('console', (m) => {
  // Answers of 4xx are the browser's "Failed to load resource" lines: the tests cause some on purpose
  // (and check each). Anything else an error (a CSP violation, a script error) is a finding.
  if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) consoleProblems.push(m.text());
});
page.on('pageerror', (e) => consoleProblems.push(`page error: ${e.message}`));
page.on('dialog', (d) => {
  dialogs.push(d.message());
  void d.dismiss();
});

async function goTo(p: (typeof PAGES)[number]): Promise<void> {
  await page.goto(`${base}#/${p}`);
  await page.locator('#page-title').waitFor();
}

/** In the page, with its cookie: the API's status and JSON. */
function fetchInPage(path: string, init: { method?: string; body?: string; csrf?: boolean } = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  return page.evaluate(async ({ path, init }) => {
    const headers: Record<string, string> = init.body === undefined ? {} : { 'content-type': 'application/json' };
    if (init.csrf) headers['x-csrf-token'] = (window as unknown as { __csrf?: string }).__csrf ?? '';
    const res = await fetch(path, { method: init.method ?? 'GET', headers, body: init.body });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }, { path, init });
}

t.test('sign in', async (t) => {
  await page.goto(base);
  await page.getByLabel('User name').waitFor();
  await page.screenshot({ path: join(shots, 'sign-in.png') });
  const findings = await seriousA11yViolations(page);
  t.same(findings, [], `the sign-in page: no serious accessibility violation ${describeFindings(findings)}`);
  await page.getByLabel('User name').fill('alice');
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await t.resolves(page.getByText('Wrong user name or password').waitFor(), 'a wrong password is refused with a message');
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('user-name').waitFor();
  t.equal(await page.getByTestId('user-name').textContent(), 'alice', 'signed in as alice');
  const cookie = (await context.cookies()).find((c) => c.name === 's3edge_session');
  t.ok(cookie, 'a session cookie');
  t.equal(cookie?.httpOnly, true, 'HttpOnly');
  t.equal(cookie?.sameSite, 'Strict', 'SameSite=Strict');
  t.equal(await page.evaluate(() => document.cookie), '', 'scripts cannot read it');
});

t.test('upload 20 MB: the progress bar moves to 100%, the asset is listed and its public URL serves it from the CDN', async (t) => {
  await goTo('assets');
  const file = join(work, 'big-upload.bin');
  const bytes = randomBytes(20 * 1024 * 1024);
  writeFileSync(file, bytes);
  // Record every value the progress bar shows while the upload runs.
  await page.evaluate(() => {
    const seen: number[] = [];
    (window as unknown as { __progress: number[] }).__progress = seen;
    new MutationObserver(() => {
      const bar = document.querySelector<HTMLProgressElement>('[data-testid=upload-progress]');
      if (bar && seen.at(-1) !== bar.value) seen.push(bar.value);
    }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['value'] });
  });
  // Loopback sends 20 MB faster than the page paints: the browser's own network emulation paces the
  // upload at 16 MB/s, as a fast uplink would, so the bar has steps to show.
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 16 * 1024 * 1024 });
  await page.getByTestId('file-input').setInputFiles(file);
  await page.getByTestId('upload-state').filter({ hasText: 'Uploaded' }).waitFor({ timeout: 60_000 });
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  await cdp.detach();
  const seen = await page.evaluate(() => (window as unknown as { __progress: number[] }).__progress);
  t.equal(seen.at(-1), 100, `the bar ends at 100% (values seen: ${seen.join(', ')})`);
  t.ok(seen.every((v, i) => i === 0 || v >= (seen[i - 1] as number)), 'it only moves forward');
  t.ok(seen.some((v) => v > 0 && v < 100), 'it moved: it showed values between 0 and 100% on the way');
  await page.screenshot({ path: join(shots, 'assets-uploaded.png'), fullPage: true });

  const row = page.locator('tr', { has: page.getByTestId('asset-name').filter({ hasText: 'big-upload.bin' }) });
  await row.waitFor();
  t.equal(await row.count(), 1, 'the asset is in the list');
  const list = await fetchInPage('/api/v3/cdn/assets?search=big-upload');
  const asset = (list.body['assets'] as { publicUrl: string; size: number }[])[0];
  t.equal(asset?.size, bytes.length, 'stored whole');
  const cdn = new CdnClient(server, new ResponseRecorder());
  const res = await cdn.request(cdn.targetOf(asset?.publicUrl ?? ''));
  t.equal(res.status, 200, 'the public URL answers on the CDN');
  t.equal(createHash('sha256').update(res.body).digest('hex'), createHash('sha256').update(bytes).digest('hex'), 'with the uploaded bytes');
});

t.test('a hostile file name is shown as text and runs nothing', async (t) => {
  await goTo('assets');
  await page.getByTestId('file-input').setInputFiles({ name: HOSTILE, mimeType: 'image/png', buffer: Buffer.from('89504e470d0a1a0a', 'hex') });
  await page.getByTestId('asset-name').filter({ hasText: HOSTILE }).waitFor();
  t.equal(await page.getByTestId('asset-name').filter({ hasText: HOSTILE }).textContent(), HOSTILE, 'the name, as text');
  t.equal(await page.locator('img[src=x]').count(), 0, 'no img element was made of it');
  // Its 8 bytes are a PNG signature and nothing more: the thumbnail fails to decode and is hidden, no broken-image box.
  const thumb = page.locator('tr', { has: page.getByTestId('asset-name').filter({ hasText: HOSTILE }) }).locator('img.thumb');
  await thumb.waitFor({ state: 'hidden' });
  t.equal(await thumb.evaluate((i) => (i as HTMLImageElement).hidden), true, 'a thumbnail that does not decode is hidden');
  await goTo('overview');
  await page.getByText(HOSTILE).first().waitFor();
  t.equal(await page.locator('img').count(), 0, 'none on the overview either');
  t.same(dialogs, [], 'no script ran (no alert)');
});

t.test('assets: search, the forced-private notice, a signed link, a download, a delete after confirming', async (t) => {
  await goTo('assets');
  await page.getByTestId('file-input').setInputFiles({ name: 'page.html', mimeType: 'text/html', buffer: Buffer.from('<!doctype html><script>alert(2)</script>') });
  await t.resolves(page.getByText('page.html can run as a web page or script in a browser, so it was stored as private').waitFor(), 'active content: the forced-private notice');
  const htmlRow = page.locator('tr', { has: page.getByTestId('asset-name').filter({ hasText: 'page.html' }) });
  await htmlRow.waitFor();
  t.match(await htmlRow.textContent(), /private/, 'listed as private');
  await htmlRow.getByRole('button', { name: 'Signed link' }).click();
  await t.resolves(htmlRow.getByRole('button', { name: 'Copy signed link (1 h)' }).waitFor(), 'a signed link for a private asset');

  const [download] = await Promise.all([page.waitForEvent('download'), htmlRow.getByRole('link', { name: 'Download' }).click()]);
  t.equal(download.suggestedFilename(), 'page.html', 'the download keeps its name');
  const saved = join(work, 'downloaded.html');
  await download.saveAs(saved);
  t.equal(readFileSync(saved, 'utf8'), '<!doctype html><script>alert(2)</script>', 'and its bytes, as a file (never run)');

  await page.getByLabel('Search').fill('big-up');
  await page.getByTestId('asset-name').filter({ hasText: 'page.html' }).waitFor({ state: 'detached' });
  t.same(await page.getByTestId('asset-name').allTextContents(), ['big-upload.bin'], 'search narrows the list');
  await page.getByLabel('Search').fill('');
  await htmlRow.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
  t.equal(await htmlRow.count(), 1, 'cancel keeps it');
  await htmlRow.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await htmlRow.waitFor({ state: 'detached' });
  t.same((await fetchInPage('/api/v3/cdn/assets?search=page.html')).body['assets'], [], 'deleted');
  t.same(dialogs, [], 'nothing ran');
});

t.test('an API key: created with scopes, the token shown once, used with curl, deleted', async (t) => {
  await goTo('api-keys');
  await page.getByRole('button', { name: 'New API key' }).click();
  await page.getByLabel('Name', { exact: true }).fill('ci uploads');
  await page.screenshot({ path: join(shots, 'api-keys-new.png') });
  await page.getByRole('button', { name: 'Create key' }).click();
  const token = (await page.getByTestId('api-key-token').textContent()) ?? '';
  t.match(token, /^s3e_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/, 'a bearer token');
  await page.screenshot({ path: join(shots, 'api-keys-created.png') });
  const curl = await run('curl', ['-sS', '-H', `Authorization: Bearer ${token}`, `${server.url}/api/v3/cdn/assets?search=big-upload`]);
  const listed = JSON.parse(curl.stdout) as { success: boolean; assets: { fileName: string }[] };
  t.equal(listed.success, true, 'curl with the token lists the assets');
  t.same(listed.assets.map((a) => a.fileName), ['big-upload.bin'], "alice's assets");
  await page.getByRole('button', { name: 'Done' }).click();
  await page.getByTestId('api-key-name').filter({ hasText: 'ci uploads' }).waitFor();
  t.notOk((await page.content()).includes(token), 'the token is not shown again');

  const row = page.locator('tr', { has: page.getByTestId('api-key-name').filter({ hasText: 'ci uploads' }) });
  await row.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByTestId('api-key-name').filter({ hasText: 'ci uploads' }).waitFor({ state: 'detached' });
  const after = await run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-H', `Authorization: Bearer ${token}`, `${server.url}/api/v3/cdn/assets`]);
  t.equal(after.stdout, '401', 'the deleted key is refused');
});

t.test('a storage access key: created for a bucket, used with aws cli, deleted', async (t) => {
  await goTo('storage');
  await page.getByRole('button', { name: 'New access key' }).click();
  await page.getByLabel('Name', { exact: true }).fill('laptop');
  await page.getByLabel('read_write').check();
  await page.getByRole('button', { name: 'Create key' }).click();
  const id = (await page.getByTestId('storage-key-id').textContent()) ?? '';
  const secret = (await page.getByTestId('storage-key-secret').textContent()) ?? '';
  const endpoint = (await page.getByTestId('storage-endpoint').textContent()) ?? '';
  t.equal(endpoint, server.url, 'the S3 endpoint');
  t.match(await page.getByTestId('storage-snippet').textContent(), `aws --endpoint-url ${server.url} s3 ls s3://alice-photos/`, 'an aws cli snippet');
  await page.getByRole('tab', { name: 'rclone' }).click();
  t.match(await page.getByTestId('storage-snippet').textContent(), 'force_path_style=true', 'an rclone snippet');
  await page.getByRole('tab', { name: 'boto3' }).click();
  t.match(await page.getByTestId('storage-snippet').textContent(), 'addressing_style', 'a boto3 snippet');
  await page.screenshot({ path: join(shots, 'storage-key-created.png') });

  const env = { ...process.env, AWS_ACCESS_KEY_ID: id, AWS_SECRET_ACCESS_KEY: secret, AWS_DEFAULT_REGION: 'us-east-1', AWS_EC2_METADATA_DISABLED: 'true' };
  const local = join(work, 'hello.txt');
  writeFileSync(local, 'hello from the dashboard\n');
  await run('aws', ['--endpoint-url', server.url, 's3', 'cp', local, 's3://alice-photos/hello.txt'], { env });
  const ls = await run('aws', ['--endpoint-url', server.url, 's3', 'ls', 's3://alice-photos/'], { env });
  t.match(ls.stdout, /hello\.txt/, 'aws cli writes and lists with the new key');
  await page.getByRole('button', { name: 'Done' }).click();

  const row = page.locator('tr', { has: page.getByTestId('storage-key-row-id').filter({ hasText: id }) });
  await row.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await row.waitFor({ state: 'detached' });
  const refused = await run('aws', ['--endpoint-url', server.url, 's3', 'ls', 's3://alice-photos/'], { env }).then(
    () => 'listed',
    (err: { stderr?: string }) => err.stderr ?? 'failed',
  );
  t.match(refused, /InvalidAccessKeyId/, 'the deleted key is refused');
});

t.test('a state change without the CSRF token is refused', async (t) => {
  const before = await fetchInPage('/api/v3/api-keys');
  const forged = await fetchInPage('/api/v3/api-keys', { method: 'POST', body: JSON.stringify({ name: 'forged', scopes: ['assets:read'] }) });
  t.equal(forged.status, 403, '403');
  t.equal(forged.body['code'], 'csrf_failed', 'csrf_failed');
  const after = await fetchInPage('/api/v3/api-keys');
  t.same(after.body['apiKeys'], before.body['apiKeys'], 'no key was created');
  const deleted = await fetchInPage(`/api/v3/cdn/assets/${encodeURIComponent('x')}`, { method: 'DELETE' });
  t.equal(deleted.status, 403, 'a DELETE without it too');
});

t.test("another user's asset id is not found", async (t) => {
  const path = `/api/v3/cdn/assets/${bobsAsset.id}`;
  const download = await page.evaluate(async (p) => (await fetch(`${p}/download`)).status, path);
  t.equal(download, 404, "bob's asset: download is 404");
  const csrf = await page.evaluate(async () => ((await (await fetch('/dashboard/session')).json()) as { csrfToken: string }).csrfToken);
  await page.evaluate((token) => ((window as unknown as { __csrf: string }).__csrf = token), csrf);
  const del = await fetchInPage(path, { method: 'DELETE', csrf: true });
  t.equal(del.status, 404, 'delete (with the CSRF token) is 404 too');
  t.equal(del.body['code'], 'not_found', 'not_found');
  const list = await fetchInPage('/api/v3/cdn/assets?search=bob');
  t.same(list.body['assets'], [], "not in alice's list");
  t.equal((await bob.client.listAssets({})).assets.length, 1, "bob's asset is still there");
});

t.test('the projects page shows a project hostname, and security events its traffic', async (t) => {
  // The route table picks the CLI's changes up within 250 ms: retry the first request until it is proxied.
  let first = 0;
  for (let i = 0; i < 40 && first !== 200; i++) {
    first = await proxied('GET');
    if (first !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(first, 200, 'the hostname is proxied');
  t.equal(await proxied('GET'), 200, 'a GET reaches the origin');
  t.equal(await proxied('POST'), 405, 'a POST is refused by the rule');
  await goTo('projects');
  await page.getByTestId('hostname').filter({ hasText: 'shop.example.com' }).waitFor();
  t.match(await page.locator('tr', { has: page.getByTestId('hostname').filter({ hasText: 'shop.example.com' }) }).textContent(), /verified \(operator\).*127\.0\.0\.1.*methods: GET/, 'its verification, origin and rules');
  t.match(await page.locator('tr', { has: page.getByTestId('hostname').filter({ hasText: 'www.example.com' }) }).textContent(), /not verified.*_s3edge-challenge\.www\.example\.com/, 'the TXT record to publish for the other');
  await goTo('security');
  const sources = page.getByRole('table', { name: 'Top client IPs by requests' });
  await sources.waitFor();
  t.match(await sources.textContent(), /127\.0\.0\.1/, 'the top sources list the client');
  t.match(await page.getByTestId('blocked-by').textContent(), /Method not allowed: 1 request/, 'blocked by rule: the method rule, in words');
  await page.screenshot({ path: join(shots, 'projects-traffic.png'), fullPage: true });
});

t.test('domains: a search shows availability, prices and the promotion; the TLD table', async (t) => {
  await goTo('domains');
  await page.getByLabel('Domain or name').fill('dashboard-shop');
  await page.getByRole('button', { name: 'Search' }).click();
  const results = page.getByRole('table', { name: 'Results for dashboard-shop' });
  await results.waitFor();
  const row = (domain: string) => results.locator('tr').filter({ has: page.getByText(domain, { exact: true }) });
  const com = row('dashboard-shop.com');
  t.match(await com.textContent(), /available.*\$10\.98.*Bonus \$2\.50 until 2099-12-31/, '.com: available, its price and its promotion');
  t.match(await com.textContent(), /₦[0-9,]+/, 'naira with its own sign (₦17,019, not NGN 17,019)');
  t.notMatch(await com.textContent(), /NGN/, 'no currency code beside it');
  t.match(await row('dashboard-shop.net').textContent(), /taken/, '.net: taken');
  t.match(await page.getByRole('table', { name: 'TLD prices' }).textContent(), /\.com.*popular/, 'the TLD price table');
  await page.screenshot({ path: join(shots, 'domains-search.png'), fullPage: true });
});

t.test('API reference: the OpenAPI document by tag, an operation opens on its scope, parameters and answers', async (t) => {
  await goTo('api');
  const operation = page.locator('details.operation').filter({ hasText: 'GET /api/v3/cdn/assets' }).first();
  await operation.locator('summary').click();
  t.match(await operation.textContent(), /Scope: assets:read/, 'its scope');
  t.ok(await operation.getByRole('table', { name: 'Parameters of listAssets' }).isVisible(), 'its parameters');
  t.match(await operation.textContent(), /200.*AssetListItem/s, 'its answer, the shared schema by name');
  t.equal(await page.getByRole('link', { name: 'the document' }).getAttribute('href'), '/api/v3/openapi.json');
  await operation.locator('summary').click();
});

t.test('every page, light and dark, desktop and phone: screenshots and an accessibility check', async (t) => {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width > 600 ? 900 : 844 });
      for (const p of PAGES) {
        await goTo(p);
        await page.waitForLoadState('networkidle');
        await page.screenshot({ path: join(shots, `${p}-${scheme}-${width}.png`), fullPage: true });
        const findings = await seriousA11yViolations(page);
        t.same(findings, [], `${p}, ${scheme}, ${width} px: no serious or critical accessibility violation (axe-core)${findings.length ? `: ${describeFindings(findings)}` : ''}`);
      }
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 900 });
  t.same(consoleProblems, [], 'no script errors and no Content-Security-Policy violations on any page');
});

t.test('at phone width the navigation folds into a menu', async (t) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await goTo('overview');
  const assets = page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Assets' });
  t.notOk(await assets.isVisible(), 'the sections are folded away');
  await page.getByRole('button', { name: 'Menu' }).click();
  await assets.click();
  await page.getByRole('heading', { name: 'Assets' }).waitFor();
  t.notOk(await assets.isVisible(), 'choosing a section folds the menu again');
  await page.setViewportSize({ width: 1280, height: 900 });
});

t.test('the keyboard reaches the navigation and the forms', async (t) => {
  await goTo('overview');
  await page.locator('body').focus();
  const reached: string[] = [];
  for (let i = 0; i < 16; i++) {
    await page.keyboard.press('Tab');
    reached.push(await page.evaluate(() => document.activeElement?.textContent?.trim() ?? ''));
  }
  t.ok(reached.includes('Assets') && reached.includes('Domains'), `Tab reaches the sections (${reached.join(' | ')})`);
});

t.test('sign out ends the session', async (t) => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('User name').waitFor();
  t.equal((await fetchInPage('/api/v3/cdn/summary')).status, 401, 'the API no longer answers the old cookie');
});
