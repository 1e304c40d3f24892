// Dense tables in a real browser (Debian's chromium, headless) against the real server: the asset list
// sorted by the server across pages, thumbnails of images (a preview that is no download), long names
// cut short with the whole name on hover and focus, bulk delete; the usage page's daily chart and
// totals, its usage events and credit ledger a page at a time by the API's cursor and filtered by
// dates; sortable headers announced with aria-sort. Screenshots go to test-artifacts/dashboard-tables.
import t from 'tap';
import { join } from 'node:path';
import { startServer } from '../helpers/server.js';
import { apiClient } from '../helpers/api.js';
import { artifactsDir, launchBrowser, setPassword, signedInPage } from '../helpers/browser.js';
import { describeFindings, seriousA11yViolations } from '../helpers/axe.js';

const PASSWORD = 'tables test passphrase';
// A 1x1 PNG.
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000' + '1f15c4890000000d49444154789c6360f8cfc0f01f0005000201' + 'e1b1e9f80000000049454e44ae426082', 'hex');
const LONG_NAME = `${'a-very-long-file-name-'.repeat(9)}end.txt`;

const server = await startServer({
  env: {
    S3EDGE_CREDITS_ENABLED: 'true',
    S3EDGE_CREDITS_FREE_MONTHLY_CREDITS: '1000',
    S3EDGE_CREDITS_UPLOAD_CREDIT_UNIT_BYTES: '1000000',
    S3EDGE_CREDITS_UPLOAD_CREDITS_PER_UNIT: '1',
  },
});
t.teardown(() => server.stop());
await server.admin(['users', 'create', 'tess']);
await setPassword(server, 'tess', PASSWORD);
const key = await server.admin(['api-keys', 'create', '--user', 'tess', '--scopes', 'assets:read,assets:write,usage:read']);
const api = apiClient(server, String(key['token']));
await server.admin(['users', 'create', 'uma']);
const uma = apiClient(server, String((await server.admin(['api-keys', 'create', '--user', 'uma', '--scopes', 'assets:read,assets:write']))['token']));

// 24 texts of distinct sizes, one long name, then 5 images (the newest, so on the first page).
const notes: string[] = [];
for (let i = 0; i < 24; i++) {
  const name = `note-${String(i).padStart(2, '0')}.txt`;
  notes.push(name);
  await api.upload({ file: Buffer.alloc(100 + i * 37, 'x'), fileName: name, contentType: 'text/plain' });
}
const long = await api.upload({ file: Buffer.from('long'), fileName: LONG_NAME, contentType: 'text/plain' });
const pics: { id: string }[] = [];
for (let i = 0; i < 5; i++) pics.push(await api.upload({ file: PNG, fileName: `pic-${i}.png`, contentType: 'image/png', visibility: i % 2 ? 'private' : 'public' }));
for (let i = 0; i < 3; i++) await api.download(long.id);
const umasAsset = await uma.upload({ file: PNG, fileName: 'uma.png', contentType: 'image/png' });
const UPLOADS = 30;

const shots = artifactsDir('dashboard-tables');
const browser = await launchBrowser();
t.teardown(() => browser.close());
const { page, problems, goTo } = await signedInPage(browser, server, 'tess', PASSWORD);

const names = () => page.getByTestId('asset-name').allTextContents();
/** The first row's name once it is `name` (the list renders after its answer). */
async function firstNameBecomes(name: string): Promise<string> {
  await page.getByTestId('asset-name').first().filter({ hasText: name }).waitFor({ timeout: 10_000 }).catch(() => undefined);
  return (await names())[0] ?? '';
}

t.test('thumbnails of images, which are not downloads; the preview route serves images only, and only the owner', async (t) => {
  const before = (await api.usageEvents({ type: 'download', limit: 500 })).events.length;
  await goTo('assets');
  await page.getByTestId('asset-name').first().waitFor();
  const thumbs = page.locator('img.thumb');
  t.equal(await thumbs.count(), 5, 'the five images have one');
  await page.waitForFunction(() => [...document.querySelectorAll<HTMLImageElement>('img.thumb')].every((i) => i.complete && i.naturalWidth === 1));
  t.pass('each loaded, private ones too');
  t.equal((await api.usageEvents({ type: 'download', limit: 500 })).events.length, before, 'no download recorded for them');
  const status = (path: string) => page.evaluate(async (p) => (await fetch(p)).status, path);
  t.equal(await status(`/api/v3/cdn/assets/${long.id}/preview`), 415, 'a text has no preview');
  t.equal(await status(`/api/v3/cdn/assets/${umasAsset.id}/preview`), 404, "another user's image is not found");
  t.equal(await status(`/api/v3/cdn/assets/${pics[0]!.id}/preview`), 200);
  await page.screenshot({ path: join(shots, 'assets.png'), fullPage: true });
});

t.test('a long name is cut short, with the whole name on hover and on focus', async (t) => {
  const cell = page.getByTestId('asset-name').filter({ hasText: 'end.txt' });
  t.equal(await cell.getAttribute('title'), LONG_NAME, 'the whole name as its title');
  t.ok(await cell.evaluate((e) => e.scrollWidth > e.clientWidth), 'cut short in the row');
  await cell.focus();
  t.ok(await cell.evaluate((e) => e.scrollWidth <= e.clientWidth + 1), 'shown whole when focused');
});

t.test('sorted by the server, across pages: name, size, upload time; the header says which way', async (t) => {
  const header = (label: string) => page.getByRole('columnheader', { name: new RegExp(`^${label}`) });
  await header('Name').getByRole('button').click();
  t.equal(await firstNameBecomes(LONG_NAME), LONG_NAME, 'A to Z over all 30, not just this page');
  t.equal(await header('Name').getAttribute('aria-sort'), 'ascending');
  await header('Name').getByRole('button').click();
  t.equal(await firstNameBecomes('pic-4.png'), 'pic-4.png', 'Z to A');
  t.equal(await header('Name').getAttribute('aria-sort'), 'descending');
  await header('Size').getByRole('button').click();
  t.equal(await firstNameBecomes(LONG_NAME), LONG_NAME, 'smallest first: its 4 bytes');
  const api1 = await api.listAssets({ sort: 'size', order: 'asc', limit: 3 });
  t.same(api1.assets.map((a) => a.size), [...api1.assets.map((a) => a.size)].sort((a, b) => a - b), 'the API sorts by size');
  await header('Uploaded').getByRole('button').click();
  t.equal(await header('Uploaded').getAttribute('aria-sort'), 'descending', 'newest first');
  t.equal(await firstNameBecomes('pic-4.png'), 'pic-4.png');
  await page.getByRole('button', { name: 'Next' }).click();
  await page.getByTestId('asset-name').first().filter({ hasText: 'note-' }).waitFor();
  t.pass('the order holds on the next page');
  await page.getByRole('button', { name: 'Previous' }).click();
  await firstNameBecomes('pic-4.png');
});

t.test('bulk delete: the rows chosen, after a confirmation', async (t) => {
  for (const n of ['pic-4.png', 'pic-3.png', 'pic-2.png']) await page.getByRole('checkbox', { name: `Choose ${n}` }).check();
  await page.getByRole('button', { name: 'Delete 3 chosen' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByTestId('asset-name').filter({ hasText: 'pic-4.png' }).waitFor({ state: 'detached' });
  const left = (await api.listAssets({ limit: 200 })).assets.map((a) => a.fileName);
  t.equal(left.length, UPLOADS - 3, 'three fewer');
  t.notOk(left.some((n) => ['pic-4.png', 'pic-3.png', 'pic-2.png'].includes(n)), 'the chosen ones gone');
  t.ok(left.includes('pic-1.png'), 'the others kept');
  await page.getByLabel('All on this page').check();
  t.equal(await page.getByRole('button', { name: /^Delete \d+ chosen$/ }).textContent(), 'Delete 20 chosen', 'all on the page');
  await page.getByLabel('All on this page').uncheck();
});

t.test('usage: the days, their totals and chart; events and the ledger a page at a time, by dates', async (t) => {
  await goTo('usage');
  const totals = page.getByTestId('usage-totals');
  await totals.waitFor();
  t.match(await totals.textContent(), new RegExp(`${UPLOADS}Uploads.*3Downloads.*3Deletes`), 'this month in figures');
  await page.getByRole('img', { name: 'Bytes uploaded and downloaded per day, last 30 days' }).waitFor();
  const days = await api.usageDaily(7);
  t.equal(days.length, 7, 'seven days');
  t.match(days.at(-1), { date: new Date().toISOString().slice(0, 10), uploads: UPLOADS, downloads: 3, deletes: 3, creditsCharged: UPLOADS, creditsAdded: 1000 }, 'today');

  const events = page.getByRole('table', { name: 'Usage events' }).locator('tbody tr');
  await events.nth(24).waitFor();
  t.equal(await events.count(), 25, '25 to a page');
  await page.getByRole('navigation', { name: 'Usage event pages' }).getByRole('button', { name: 'Older' }).click();
  await page.getByRole('navigation', { name: 'Usage event pages' }).getByText('Page 2').waitFor();
  // The pager's label moves before the page's rows arrive: wait until the first page's rows are gone.
  await events.nth(UPLOADS + 3 + 3 - 25).waitFor({ state: 'detached' });
  await events.first().waitFor();
  t.equal(await events.count(), UPLOADS + 3 + 3 - 25, 'the rest on the second');
  await page.getByLabel('Event', { exact: true }).selectOption('download');
  await page.getByRole('form', { name: 'Dates' }).first().getByRole('button', { name: 'Apply' }).click();
  await page.getByRole('navigation', { name: 'Usage event pages' }).getByText('Page 1').waitFor();
  await events.filter({ hasText: 'Download' }).first().waitFor();
  t.equal(await events.count(), 3, 'downloads only');
  const tomorrow = new Date(Date.now() + 86_400_000);
  const day = `${tomorrow.getFullYear()}-${String(tomorrow.getMonth() + 1).padStart(2, '0')}-${String(tomorrow.getDate()).padStart(2, '0')}`;
  await page.locator('#events-from').fill(day);
  await page.getByRole('form', { name: 'Dates' }).first().getByRole('button', { name: 'Apply' }).click();
  await page.getByText('No usage in these dates.').waitFor();
  t.pass('from tomorrow: none');

  const ledger = page.getByRole('table', { name: 'Credit ledger' }).locator('tbody tr');
  await ledger.nth(24).waitFor();
  await page.getByRole('navigation', { name: 'Ledger pages' }).getByRole('button', { name: 'Older' }).click();
  await page.getByRole('navigation', { name: 'Ledger pages' }).getByText('Page 2').waitFor();
  await ledger.nth(UPLOADS + 1 - 25).waitFor({ state: 'detached' });
  await ledger.first().waitFor();
  t.equal(await ledger.count(), UPLOADS + 1 - 25, 'the uploads and the monthly grant over two pages');
  await page.screenshot({ path: join(shots, 'usage.png'), fullPage: true });
});

t.test('the usage API: cursors, windows and strict filters', async (t) => {
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let i = 0; i < 10; i++) {
    const p = await api.usageEvents({ limit: 7, ...(cursor ? { cursor } : {}) });
    for (const e of p.events) seen.add(e.id);
    if (!p.nextCursor) break;
    cursor = p.nextCursor;
  }
  t.equal(seen.size, UPLOADS + 6, 'every event once, in pages of 7');
  const ledger = await api.usageLedger({ limit: 100 });
  t.equal(ledger.entries.length, UPLOADS + 1);
  t.equal(ledger.nextCursor, null);
  t.same((await api.usageEvents({ to: '2020-01-01T00:00:00Z' })).events, [], 'nothing before 2020');
  const status = async (q: string) => (await fetch(`${server.url}/api/v3/cdn/usage/events?${q}`, { headers: { authorization: `Bearer ${String(key['token'])}` } })).status;
  t.equal(await status('type=view'), 400, 'an unknown type');
  t.equal(await status('from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z'), 400, 'from after to');
  t.equal(await status('from=last-week'), 400, 'a time that is not ISO 8601');
  t.equal(await status('cursor=nope'), 400, 'a cursor the API did not give');
});

t.test('light and dark, desktop and phone: screenshots and an accessibility check', async (t) => {
  for (const p of ['assets', 'usage']) {
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const width of [1280, 390]) {
        await page.setViewportSize({ width, height: width > 600 ? 900 : 844 });
        await goTo(p);
        await page.waitForLoadState('networkidle');
        await page.screenshot({ path: join(shots, `${p}-${scheme}-${width}.png`), fullPage: true });
        const findings = await seriousA11yViolations(page);
        t.same(findings, [], `${p}, ${scheme}, ${width} px: no serious accessibility violation ${describeFindings(findings)}`);
      }
    }
  }
});

t.test('nothing went wrong in the page', async (t) => {
  t.same(problems, [], 'no console errors');
});
