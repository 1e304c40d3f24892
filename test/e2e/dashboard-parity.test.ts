// The dashboard does what the API does (issue 34, item 2), in a real browser (Debian's chromium,
// headless) against the real server, each outcome read back through the API, the proxy or the CDN:
// - the rule builder writes the rules the API takes, the proxy enforces them, an unchanged save keeps
//   them, a bad entry is refused with the server's words;
// - a project's deployments are added and listed; a project is deleted;
// - an upload takes its kind, project and deployment;
// - a bucket is made public (the CDN serves its objects) and private again;
// - a purge (per asset, per hostname, everything) drops cached copies: the next CDN GET is a MISS.
// Screenshots go to test-artifacts/dashboard-parity.
import t from 'tap';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startServer } from '../helpers/server.js';
import { ResponseRecorder } from '../helpers/api.js';
import { CdnClient } from '../helpers/cdn.js';
import { RawS3 } from '../helpers/s3-client.js';
import { artifactsDir, launchBrowser, setPassword, signedInPage } from '../helpers/browser.js';
import { describeFindings, seriousA11yViolations } from '../helpers/axe.js';

const PASSWORD = 'parity test passphrase';
const origin = createServer((_req, res) => res.end('origin\n'));
await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => origin.close(() => resolve())));

const server = await startServer({ env: { S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true' } });
t.teardown(() => server.stop());
await server.admin(['users', 'create', 'dana']);
await setPassword(server, 'dana', PASSWORD);
await server.admin(['buckets', 'create', 'dana-pics', '--user', 'dana']);
await server.admin(['projects', 'create', 'shop', '--user', 'dana']);
await server.admin(['hostnames', 'add', 'shop.example.org', '--user', 'dana', '--project', 'shop']);
await server.admin(['hostnames', 'set-origin', 'shop.example.org', '--url', `http://127.0.0.1:${(origin.address() as AddressInfo).port}`]);
await server.admin(['hostnames', 'verify', 'shop.example.org', '--operator']);

const shots = artifactsDir('dashboard-parity');
const browser = await launchBrowser();
t.teardown(() => browser.close());
const { page, problems, goTo, api: apiInPage } = await signedInPage(browser, server, 'dana', PASSWORD);



interface HostnameJson { id: string; hostname: string; rules: Record<string, unknown> }
async function projectAndHostname(): Promise<{ projectId: string; hostname: HostnameJson }> {
  const projects = (await apiInPage('GET', '/api/v3/projects')).body['projects'] as { id: string; name: string }[];
  const projectId = projects.find((p) => p.name === 'shop')?.id ?? '';
  const list = (await apiInPage('GET', `/api/v3/projects/${projectId}/hostnames`)).body['hostnames'] as HostnameJson[];
  return { projectId, hostname: list.find((h) => h.hostname === 'shop.example.org') as HostnameJson };
}

/** One request to the proxy for shop.example.org; its status. */
function proxied(method: string): Promise<number> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, method, path: '/', headers: { host: 'shop.example.org' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('the rule builder writes the rules the API takes, and the proxy enforces them', async (t) => {
  t.equal(await proxied('POST'), 200, 'before: a POST reaches the origin');
  await goTo('projects');
  const row = page.locator('tr', { has: page.getByTestId('hostname').filter({ hasText: 'shop.example.org' }) });
  await row.getByRole('button', { name: 'Rules' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('Blocked IPs and CIDRs').fill('203.0.113.7\n198.51.100.0/24');
  await dialog.getByLabel('Blocked countries').fill('cn, ru');
  await dialog.getByRole('checkbox', { name: 'GET' }).check();
  await dialog.getByRole('checkbox', { name: 'HEAD' }).check();
  await dialog.getByLabel('Largest request body').fill('2');
  await dialog.getByLabel('Unit').selectOption('MB');
  await dialog.getByRole('checkbox', { name: 'Limit the requests of each client' }).check();
  await dialog.getByLabel('Requests per second').fill('5');
  await dialog.getByLabel('Burst').fill('10');
  await dialog.getByLabel('Ban after refusals (0: never)').fill('3');
  await dialog.getByLabel('Ban for (seconds)').fill('120');
  await page.screenshot({ path: join(shots, 'rules-builder.png') });
  const findings = await seriousA11yViolations(page);
  t.same(findings, [], `the rule builder: no serious accessibility violation ${describeFindings(findings)}`);
  await dialog.getByRole('button', { name: 'Save rules' }).click();
  await dialog.waitFor({ state: 'hidden' });
  const expected = {
    allowIps: [],
    blockIps: ['203.0.113.7', '198.51.100.0/24'],
    blockCountries: ['CN', 'RU'],
    allowedMethods: ['GET', 'HEAD'],
    maxBodyBytes: 2_000_000,
    rateLimit: { requestsPerSecond: 5, burst: 10, banAfter: 3, banWindowSeconds: 60, banSeconds: 120, maxBanSeconds: 3600 },
  };
  t.same((await projectAndHostname()).hostname.rules, expected, 'stored as the API stores them');
  t.match(await row.textContent(), /2 blocked IP ranges.*countries blocked: CN, RU.*methods: GET, HEAD.*bodies up to 2\.00 MB.*5\/s per client/, 'summarised in the list');
  t.equal(await proxied('POST'), 405, 'the proxy now refuses a POST');
  t.equal(await proxied('GET'), 200, 'and serves a GET');

  await row.getByRole('button', { name: 'Rules' }).click();
  t.equal(await dialog.getByLabel('Blocked IPs and CIDRs').inputValue(), '203.0.113.7\n198.51.100.0/24', 'the form opens filled');
  t.equal(await dialog.getByLabel('Ban for (seconds)').inputValue(), '120');
  await dialog.getByRole('button', { name: 'Save rules' }).click();
  await dialog.waitFor({ state: 'hidden' });
  t.same((await projectAndHostname()).hostname.rules, expected, 'an unchanged save keeps every rule');

  await row.getByRole('button', { name: 'Rules' }).click();
  await dialog.getByLabel('Blocked IPs and CIDRs').fill('203.0.113.7\nnot-an-ip');
  await dialog.getByRole('button', { name: 'Save rules' }).click();
  await t.resolves(dialog.getByRole('alert').filter({ hasText: 'rules.blockIps[1]' }).waitFor(), "a bad entry: the server's words, naming it");
  t.same((await projectAndHostname()).hostname.rules, expected, 'and nothing changed');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
});

t.test('deployments are added and listed; a project is deleted', async (t) => {
  await goTo('projects');
  const shop = page.locator('.card', { has: page.getByRole('heading', { name: 'Project shop' }) });
  await shop.getByLabel('New deployment').fill('v1.0.0');
  await shop.getByRole('button', { name: 'Add deployment' }).click();
  await shop.getByTestId('deployments').getByText('v1.0.0').waitFor();
  const { projectId } = await projectAndHostname();
  const deployments = (await apiInPage('GET', `/api/v3/projects/${projectId}/deployments`)).body['deployments'] as { name: string }[];
  t.same(deployments.map((d) => d.name), ['v1.0.0'], 'the API lists it');

  await page.getByLabel('New project').fill('scratch');
  await page.getByRole('button', { name: 'Create project' }).click();
  const scratch = page.locator('.card', { has: page.getByRole('heading', { name: 'Project scratch' }) });
  await scratch.waitFor();
  await scratch.getByRole('button', { name: 'Delete project' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete project' }).click();
  await scratch.waitFor({ state: 'detached' });
  const names = ((await apiInPage('GET', '/api/v3/projects')).body['projects'] as { name: string }[]).map((p) => p.name);
  t.same(names, ['shop'], 'the API no longer has it');
  await page.screenshot({ path: join(shots, 'projects.png'), fullPage: true });
});

t.test('an upload takes its kind, project and deployment', async (t) => {
  await goTo('assets');
  await page.getByLabel('Upload as').selectOption('artifact');
  await page.getByLabel('Project', { exact: true }).selectOption({ label: 'shop' });
  await page.getByLabel('Deployment').locator('option', { hasText: 'v1.0.0' }).waitFor({ state: 'attached' });
  await page.getByLabel('Deployment').selectOption({ label: 'v1.0.0' });
  await page.getByTestId('file-input').setInputFiles({ name: 'build.tar', mimeType: 'application/x-tar', buffer: Buffer.alloc(512, 7) });
  await page.getByTestId('upload-row').filter({ hasText: 'build.tar' }).getByTestId('upload-state').filter({ hasText: 'Uploaded' }).waitFor();
  // The summary's recent uploads carry the whole asset (the list leaves project and deployment out).
  const recent = ((await apiInPage('GET', '/api/v3/cdn/summary')).body['data'] as { recentAssets: Record<string, unknown>[] }).recentAssets;
  const asset = recent.find((a) => a['fileName'] === 'build.tar') ?? {};
  const { projectId } = await projectAndHostname();
  const deployments = (await apiInPage('GET', `/api/v3/projects/${projectId}/deployments`)).body['deployments'] as { id: string }[];
  t.same([asset['kind'], asset['projectId'], asset['deploymentId']], ['artifact', projectId, deployments[0]?.id], 'stored with them');
  t.match(await page.locator('tr', { hasText: 'build.tar' }).textContent(), /artifact/, 'listed as an artifact');
});

t.test('purges drop cached copies: per asset, per hostname, everything', async (t) => {
  await goTo('assets');
  await page.getByLabel('Upload as').selectOption('file');
  await page.getByTestId('file-input').setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: Buffer.from('89504e470d0a1a0a0000', 'hex') });
  await page.getByTestId('upload-row').filter({ hasText: 'logo.png' }).getByTestId('upload-state').filter({ hasText: 'Uploaded' }).waitFor();
  const asset = ((await apiInPage('GET', '/api/v3/cdn/assets?search=logo.png')).body['assets'] as { publicUrl: string }[])[0];
  const cdn = new CdnClient(server, new ResponseRecorder());
  const target = cdn.targetOf(asset?.publicUrl ?? '');
  const cacheOf = async () => (await cdn.request(target)).headers['x-cache'];
  await cacheOf();
  t.equal(await cacheOf(), 'HIT', 'cached once fetched');
  await page.locator('tr', { hasText: 'logo.png' }).getByRole('button', { name: 'Purge' }).click();
  await t.resolves(page.locator('tr', { hasText: 'logo.png' }).getByRole('status').filter({ hasText: '1 cached copy dropped' }).waitFor(), 'the row says what it dropped');
  t.equal(await cacheOf(), 'MISS', 'the next GET is a MISS');
  t.equal(await cacheOf(), 'HIT');
  await page.getByRole('button', { name: 'Purge all cached copies' }).click();
  await t.resolves(page.getByText(/cached cop(y|ies) dropped/).first().waitFor(), 'purge everything answers');
  t.equal(await cacheOf(), 'MISS', 'everything went');

  await goTo('projects');
  const row = page.locator('tr', { has: page.getByTestId('hostname').filter({ hasText: 'shop.example.org' }) });
  await row.getByRole('button', { name: 'Purge cache' }).click();
  await t.resolves(row.getByRole('status').filter({ hasText: /cached cop(y|ies) dropped/ }).waitFor(), 'a hostname purge answers');
});

t.test('a bucket made public is served on the CDN, and private again is not', async (t) => {
  // An object put with an access key the page's own session creates.
  const made = await apiInPage('POST', '/storage/buckets/dana-pics/access-keys', { name: 'test', permission: 'read_write' });
  const key = made.body['accessKey'] as { accessKeyId: string; secretAccessKey: string };
  const s3 = new RawS3({ url: server.url }, { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey });
  t.equal((await s3.putObject('dana-pics', 'cat.txt', Buffer.from('meow'))).status, 200, 'an object in the bucket');
  const cdn = new CdnClient(server, new ResponseRecorder());
  t.not((await cdn.request('/b/dana-pics/cat.txt')).status, 200, 'private: not on the CDN');

  await goTo('storage');
  const card = page.locator('.card', { has: page.getByRole('heading', { name: 'Bucket dana-pics' }) });
  await card.getByRole('button', { name: 'Make public' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Make public' }).click();
  await card.getByTestId('bucket-visibility').filter({ hasText: 'public on the CDN' }).waitFor();
  const served = await cdn.request('/b/dana-pics/cat.txt');
  t.same([served.status, served.text], [200, 'meow'], 'public: the CDN serves it');
  await page.screenshot({ path: join(shots, 'bucket-public.png'), fullPage: true });
  await card.getByRole('button', { name: 'Make private' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Make private' }).click();
  // Not hasText 'private': the public state's "Make private" button has it too.
  await card.getByTestId('bucket-visibility').filter({ hasText: 'read only with an access key' }).waitFor();
  t.not((await cdn.request('/b/dana-pics/cat.txt')).status, 200, 'private again: refused');
});

t.test('nothing went wrong in the page', async (t) => {
  t.same(problems, [], `no console errors: ${problems.join(' | ')}`);
});
