// The dashboard's object browser in a real browser (Debian's chromium, headless) against the real
// server, with objects put and read back by an S3 client of the test's own: folders by the "/"
// delimiter, paging through 10,000 keys by continuation tokens, an image and a text previewed, a
// presigned link that works from outside the browser, an upload with its bytes intact, a delete and a
// bulk delete. The presign API itself: scopes, ownership, bad input. Screenshots go to
// test-artifacts/dashboard-objects.
import t from 'tap';
import { join } from 'node:path';
import { startServer } from '../helpers/server.js';
import { RawS3 } from '../helpers/s3-client.js';
import { apiUser } from '../helpers/api.js';
import { artifactsDir, launchBrowser, setPassword, signedInPage } from '../helpers/browser.js';
import { describeFindings, seriousA11yViolations } from '../helpers/axe.js';

const PASSWORD = 'objects test passphrase';
const KEYS = 10_000;
// A 1x1 PNG.
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000' + '1f15c4890000000d49444154789c6360f8cfc0f01f0005000201' + 'e1b1e9f80000000049454e44ae426082', 'hex');

const server = await startServer();
t.teardown(() => server.stop());
await server.admin(['users', 'create', 'erin']);
await setPassword(server, 'erin', PASSWORD);
await server.admin(['buckets', 'create', 'erin-files', '--user', 'erin']);

const shots = artifactsDir('dashboard-objects');
const browser = await launchBrowser();
t.teardown(() => browser.close());
const { page, problems, api: apiInPage } = await signedInPage(browser, server, 'erin', PASSWORD, { acceptDownloads: true });


// The test's own S3 client, with a key the page's session makes.
const made = await apiInPage('POST', '/storage/buckets/erin-files/access-keys', { name: 'test', permission: 'read_write' });
const key = made.body['accessKey'] as { accessKeyId: string; secretAccessKey: string };
const s3 = new RawS3({ url: server.url }, { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey });
const name = (i: number) => `logs/2026/${String(i).padStart(5, '0')}.log`;
for (let next = 0; next < KEYS; ) {
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < KEYS) {
      const i = next++;
      const r = await s3.putObject('erin-files', name(i), Buffer.from(`line ${i}\n`));
      if (r.status !== 200) throw new Error(`put ${name(i)}: ${r.status}`);
    }
  }));
}
await s3.putObject('erin-files', 'photos/cat.png', PNG, { 'content-type': 'image/png' });
await s3.putObject('erin-files', 'notes/readme.txt', Buffer.from('hello from the notes folder\n'), { 'content-type': 'text/plain' });
await s3.putObject('erin-files', 'notes/old-1.txt', Buffer.from('old 1'));
await s3.putObject('erin-files', 'notes/old-2.txt', Buffer.from('old 2'));
await s3.putObject('erin-files', 'top.txt', Buffer.from('top'));

const names = () => page.getByTestId('object-name').allTextContents();

t.test('folders, and paging through 10,000 keys', async (t) => {
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Objects' }).click();
  await page.getByTestId('folder').first().waitFor();
  t.same(await page.getByTestId('folder').allTextContents(), ['logs/', 'notes/', 'photos/'], 'the top level: folders');
  t.same(await names(), ['top.txt'], 'and its one object');
  await page.screenshot({ path: join(shots, 'top.png'), fullPage: true });
  const findings = await seriousA11yViolations(page);
  t.same(findings, [], `no serious accessibility violation ${describeFindings(findings)}`);

  await page.getByTestId('folder').filter({ hasText: 'logs/' }).click();
  await page.getByTestId('folder').filter({ hasText: '2026/' }).click();
  await page.getByTestId('object-name').first().waitFor();
  t.equal((await names()).length, 100, 'a page of 100');
  t.equal((await names())[0], '00000.log');
  await page.getByLabel('Per page').selectOption('1000');
  await page.getByTestId('object-page').filter({ hasText: 'Page 1' }).waitFor();
  await page.getByTestId('object-name').nth(999).waitFor();
  const seen: string[] = [];
  // The pager's buttons looked up inside it: a button role looked up over the whole page computes the
  // accessible name of every row's buttons (3,000 of them) and took over a second a page.
  const pager = page.getByRole('navigation', { name: 'Pages' });
  for (let p = 1; ; p++) {
    await page.getByTestId('object-page').filter({ hasText: `Page ${p}` }).waitFor();
    // The page's own rows, not the previous page's still shown while the next one loads.
    await page.getByTestId('object-name').first().filter({ hasText: name((p - 1) * 1000).slice('logs/2026/'.length) }).waitFor();
    await page.getByTestId('object-name').nth(999).waitFor();
    seen.push(...(await names()));
    if (await pager.getByRole('button', { name: 'Next' }).isDisabled()) break;
    await pager.getByRole('button', { name: 'Next' }).click();
  }
  t.equal(seen.length, KEYS, 'every key, once, over the pages');
  t.same(seen, Array.from({ length: KEYS }, (_, i) => name(i).slice('logs/2026/'.length)), 'in order');
  t.equal(await page.getByTestId('object-page').textContent(), 'Page 10', 'in 10 pages of 1,000');
  await pager.getByRole('button', { name: 'Previous' }).click();
  await page.getByTestId('object-page').filter({ hasText: 'Page 9' }).waitFor();
  await page.getByTestId('object-name').first().filter({ hasText: '08000.log' }).waitFor();
  t.pass('Previous goes back a page');
  await page.getByRole('navigation', { name: 'Folder' }).getByRole('link', { name: 'erin-files' }).click();
  await page.getByTestId('folder').filter({ hasText: 'notes/' }).waitFor();
  t.pass('the breadcrumb goes back to the top');
});

t.test('an image and a text previewed; a presigned link that works outside the browser', async (t) => {
  await page.getByTestId('folder').filter({ hasText: 'photos/' }).click();
  await page.getByTestId('object-row').filter({ hasText: 'cat.png' }).getByRole('button', { name: 'Open' }).click();
  const image = page.getByTestId('preview-image');
  await image.waitFor();
  await page.waitForFunction(() => (document.querySelector('[data-testid=preview-image]') as HTMLImageElement | null)?.complete === true);
  t.equal(await image.evaluate((img: HTMLImageElement) => img.naturalWidth), 1, 'the image loaded (1 px wide)');
  await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();

  await page.goto(`${server.url}/dashboard/#/objects?bucket=erin-files&prefix=notes%2F`);
  await page.getByTestId('object-row').filter({ hasText: 'readme.txt' }).getByRole('button', { name: 'Open' }).click();
  await page.getByTestId('preview-text').waitFor();
  t.equal(await page.getByTestId('preview-text').textContent(), 'hello from the notes folder\n', 'the text, as text');
  await page.getByRole('dialog').getByLabel('Link good for').selectOption('86400');
  await page.getByRole('dialog').getByRole('button', { name: 'Make a presigned link' }).click();
  const link = (await page.getByTestId('presigned-link').textContent()) ?? '';
  await page.screenshot({ path: join(shots, 'preview-link.png') });
  t.match(link, /^http:\/\/127\.0\.0\.1:\d+\/erin-files\/notes\/readme\.txt\?.*X-Amz-Expires=86400.*X-Amz-Signature=/, 'a presigned S3 URL, a day long');
  const outside = await fetch(link);
  t.same([outside.status, await outside.text()], [200, 'hello from the notes folder\n'], 'fetched outside the browser, with no session');
  await page.getByRole('dialog').getByRole('button', { name: 'Close' }).click();
});

t.test('an upload keeps its bytes; a delete and a bulk delete remove the objects', async (t) => {
  const body = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
  await page.getByTestId('object-file-input').setInputFiles({ name: 'data.bin', mimeType: 'application/octet-stream', buffer: body });
  await page.getByTestId('object-upload-row').filter({ hasText: 'Uploaded' }).waitFor();
  await page.getByTestId('object-name').filter({ hasText: 'data.bin' }).waitFor();
  const got = await s3.getObject('erin-files', 'notes/data.bin');
  t.equal(got.status, 200, 'in the folder it was uploaded to');
  t.ok(got.body.equals(body), 'byte for byte');

  await page.getByTestId('object-row').filter({ hasText: 'readme.txt' }).getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByTestId('object-name').filter({ hasText: 'readme.txt' }).waitFor({ state: 'detached' });
  t.equal((await s3.headObject('erin-files', 'notes/readme.txt')).status, 404, 'deleted');

  await page.getByRole('checkbox', { name: 'Select old-1.txt' }).check();
  await page.getByRole('checkbox', { name: 'Select old-2.txt' }).check();
  await page.getByRole('button', { name: 'Delete selected' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByTestId('object-name').filter({ hasText: 'old-1.txt' }).waitFor({ state: 'detached' });
  t.same([(await s3.headObject('erin-files', 'notes/old-1.txt')).status, (await s3.headObject('erin-files', 'notes/old-2.txt')).status], [404, 404], 'both gone');
  t.same(await names(), ['data.bin'], 'the folder holds what is left');
});

t.test('the presign API: scopes, ownership, bad input', async (t) => {
  const reader = await apiUser(server, ['objects:read'], { name: 'frank' });
  const noScope = await apiUser(server, ['assets:read'], { name: 'gina' });
  await server.admin(['buckets', 'create', 'frank-stuff', '--user', 'frank']);
  const call = async (token: string, bucket: string, body: unknown) => {
    const res = await fetch(`${server.url}/api/v3/buckets/${bucket}/presign`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const list = await call(reader.token, 'frank-stuff', { operation: 'list' });
  t.equal(list.status, 200, 'objects:read may list');
  t.equal((await fetch(`${server.url}${String(list.body['url'])}`)).status, 200, 'and the URL lists');
  t.equal((await call(reader.token, 'frank-stuff', { operation: 'put', key: 'x' })).status, 403, 'but not put without objects:write');
  t.equal((await call(noScope.token, 'frank-stuff', { operation: 'list' })).status, 403, 'no objects scope: refused');
  t.equal((await call(reader.token, 'erin-files', { operation: 'list' })).status, 404, "another user's bucket is not found");
  const noKey = await call(reader.token, 'frank-stuff', { operation: 'get' });
  t.same([noKey.status, noKey.body['success']], [400, false], 'get without a key: 400');
  t.equal((await call(reader.token, 'frank-stuff', { operation: 'get', key: 'x', expiresIn: 604801 })).status, 400, 'a link longer than 7 days: 400');
  t.equal((await call(reader.token, 'frank-stuff', { operation: 'rename', key: 'x' })).status, 400, 'an unknown operation: 400');
});

t.test('nothing went wrong in the page', async (t) => {
  t.same(problems, [], `no console errors: ${problems.join(' | ')}`);
});
