// A hostname's HTTPS in the dashboard (issue 38), in a real browser (Debian's chromium, headless) against
// the real server, without ACME (acme.directory empty), each outcome read back through the API:
// - the HTTPS dialog of a verified hostname says automatic certificates are off, and offers no "request";
// - a chain made by openssl (a leaf and its test CA) is uploaded, its key read from a file picker: the
//   state is uploaded, its expiry shown in the reader's locale and time zone, the key nowhere afterwards;
// - a wrong key, and a certificate for a hostile name, are refused in the server's words, as text;
// - redirect on and HSTS 300 saved with one button, read back through the API, and the proxy redirects;
// - the certificate removed after a confirmation;
// - no serious accessibility violation in light and dark at 1280 and 390 px.
// Screenshots go to test-artifacts/dashboard-tls.
import t from 'tap';
import { request as httpRequest } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Locator } from 'playwright-core';
import { startServer } from '../helpers/server.js';
import { artifactsDir, launchBrowser, setPassword, signedInPage } from '../helpers/browser.js';
import { describeFindings, seriousA11yViolations } from '../helpers/axe.js';
import { makeKey, makeLeafCert, makeTestCa } from '../helpers/tls.js';

const PASSWORD = 'tls test passphrase';
const HOST = 'shop.example.org';
const HOSTILE = '<img src=x onerror=window.__pwned=1>.example';
const LOCALE = 'de-DE';
const TIME_ZONE = 'America/New_York';

const work = await mkdtemp(join(tmpdir(), 's3edge-dashboard-tls-'));
t.teardown(() => rm(work, { recursive: true, force: true }));

// A chain (the leaf, then the CA that signed it), a key of no certificate, and a self-signed leaf for a hostile name.
const ca = await makeTestCa(work);
const [good, strayKey, hostile] = await Promise.all([
  makeLeafCert(work, { dnsName: HOST, days: 30, ca }),
  makeKey(work, 'stray-key.pem'),
  makeLeafCert(work, { dnsName: HOSTILE, days: 30, prefix: 'hostile' }),
]);

// tls: an HTTPS listener, so the proxy has a port to redirect plain HTTP to.
const server = await startServer({ tls: true });
t.teardown(() => server.stop());
await server.admin(['users', 'create', 'dana']);
await setPassword(server, 'dana', PASSWORD);
await server.admin(['projects', 'create', 'shop', '--user', 'dana']);
await server.admin(['hostnames', 'add', HOST, '--user', 'dana', '--project', 'shop']);
await server.admin(['hostnames', 'verify', HOST, '--operator']);

const shots = artifactsDir('dashboard-tls');
const browser = await launchBrowser();
t.teardown(() => browser.close());
const { page, problems, goTo, api } = await signedInPage(browser, server, 'dana', PASSWORD, { locale: LOCALE, timezoneId: TIME_ZONE });

const projects = (await api('GET', '/api/v3/projects')).body['projects'] as { id: string; name: string }[];
const tlsPath = `/api/v3/projects/${projects.find((p) => p.name === 'shop')?.id ?? ''}/hostnames/${HOST}/tls`;
interface TlsJson { state: string; certificate: { notAfter: string; source: string } | null; settings: Record<string, unknown> }
const tlsNow = async (): Promise<TlsJson> => (await api('GET', tlsPath)).body['tls'] as TlsJson;

const dialog = page.getByRole('dialog', { name: `HTTPS of ${HOST}` });
const state = dialog.getByTestId('tls-state');
const uploadForm = dialog.getByRole('form', { name: 'Upload a certificate' });

async function openHttps(): Promise<void> {
  await goTo('projects');
  const row = page.locator('tr', { has: page.getByTestId('hostname').filter({ hasText: HOST }) });
  await row.getByRole('button', { name: 'HTTPS', exact: true }).click();
  await dialog.getByTestId('tls-summary').waitFor();
}

/** The dialog whole (it scrolls inside when taller than the window): its top, then its end. */
async function shoot(name: string): Promise<void> {
  await dialog.evaluate((d) => (d.scrollTop = 0));
  await page.screenshot({ path: join(shots, `${name}.png`) });
  if (await dialog.evaluate((d) => d.scrollHeight > d.clientHeight + 1)) {
    await dialog.evaluate((d) => (d.scrollTop = d.scrollHeight));
    await page.screenshot({ path: join(shots, `${name}-end.png`) });
    await dialog.evaluate((d) => (d.scrollTop = 0));
  }
}

async function upload(form: Locator, cert: string, key: string): Promise<void> {
  await form.getByLabel('Certificate chain (PEM)').fill(cert);
  await form.getByLabel('Private key (PEM)').fill(key);
  await form.getByRole('button', { name: 'Upload certificate' }).click();
}

t.test('without ACME the panel says so, and offers an upload instead of a request', async (t) => {
  await openHttps();
  t.equal(await state.textContent(), 'No certificate', 'the badge');
  t.match(await dialog.getByTestId('tls-summary').textContent(), /Automatic certificates are off on this server.*upload a certificate instead/, "the server's summary");
  t.equal(await dialog.getByRole('button', { name: 'Request certificate now' }).count(), 0, 'nothing to request');
  t.equal(await dialog.getByRole('button', { name: 'Remove certificate' }).count(), 0, 'nothing to remove');
  t.equal(await dialog.getByLabel('HSTS max-age in seconds (0: off)').inputValue(), '0', 'HSTS off by default');
  t.match(await dialog.getByTestId('hsts-words').textContent(), /^Off: no Strict-Transport-Security header/, 'and says so in words');
  await shoot('acme-off');
});

t.test('a wrong key and a hostile name are refused in the server’s words, as text', async (t) => {
  await upload(uploadForm, good.chain, strayKey.key);
  const alert = uploadForm.getByRole('alert');
  await t.resolves(alert.filter({ hasText: 'The private key does not belong to the certificate' }).waitFor(), 'the wrong key, inline under the form');
  await shoot('wrong-key');
  t.equal((await tlsNow()).state, 'acme-off', 'nothing stored');

  await upload(uploadForm, hostile.chain, hostile.key);
  await t.resolves(alert.filter({ hasText: `The certificate is for ${HOSTILE}, not ${HOST}` }).waitFor(), 'the hostile name shown as the text it is');
  t.equal(await dialog.locator('img').count(), 0, 'no element made of it');
  t.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined, 'and nothing ran');
  await shoot('hostile-name');
});

t.test('an uploaded certificate: state uploaded with its expiry in the reader’s locale; the key never shown back', async (t) => {
  await uploadForm.getByLabel('Certificate chain (PEM)').fill(good.chain);
  // The key from a file, as a user picks it; the field shows what was read.
  await uploadForm.getByLabel('Or read the key from a file').setInputFiles(good.keyFile);
  // The file is read asynchronously (File.text()).
  await page.waitForFunction((key) => (document.getElementById('tls-private-key') as HTMLTextAreaElement | null)?.value === key, good.key);
  t.equal(await uploadForm.getByLabel('Private key (PEM)').inputValue(), good.key, 'the picked file fills the field');
  await uploadForm.getByRole('button', { name: 'Upload certificate' }).click();
  await state.filter({ hasText: 'Uploaded' }).waitFor();
  const stored = await tlsNow();
  t.same([stored.state, stored.certificate?.source], ['uploaded', 'uploaded'], 'the API has it');
  const expires = new Date(stored.certificate?.notAfter ?? '').toLocaleString(LOCALE, { dateStyle: 'medium', timeStyle: 'short', timeZone: TIME_ZONE });
  t.match(await dialog.getByTestId('tls-expires').textContent(), `${expires} (in 30 days)`, `the expiry in ${LOCALE}, ${TIME_ZONE}, and how far`);
  t.match(await dialog.getByTestId('tls-summary').textContent(), `Served over HTTPS until ${expires}`, "the summary's time too");
  const replace = dialog.getByRole('form', { name: 'Replace it with a certificate of your own' });
  t.same([await replace.getByLabel('Certificate chain (PEM)').inputValue(), await replace.getByLabel('Private key (PEM)').inputValue()], ['', ''], 'the fields are cleared');
  const keyBody = good.key.split('\n')[1] ?? '';
  t.notOk((await page.content()).includes(keyBody), 'the key is nowhere on the page');
  t.notOk(JSON.stringify(await tlsNow()).includes(keyBody), 'nor in the API’s answer');
});

t.test('settings saved with one button, read back through the API; the proxy redirects', async (t) => {
  await dialog.getByRole('checkbox', { name: /Redirect HTTP to HTTPS/ }).check();
  await dialog.getByLabel('HSTS max-age in seconds (0: off)').fill('300');
  t.match(await dialog.getByTestId('hsts-words').textContent(), /HTTPS for 5 minutes/, 'the max-age in words');
  await dialog.getByRole('button', { name: 'Save settings' }).click();
  await dialog.getByRole('status').filter({ hasText: 'Settings saved' }).waitFor();
  t.same((await tlsNow()).settings, { redirectHttps: true, hstsMaxAge: 300, hstsIncludeSubdomains: false, minTls: '1.2' }, 'stored as saved');
  const { hostname, port } = new URL(server.url);
  const answer = await new Promise<{ status: number; location?: string }>((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path: '/a?b=1', headers: { host: HOST } }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, location: res.headers.location });
    });
    req.on('error', reject);
    req.end();
  });
  t.equal(answer.status, 308, 'plain HTTP is redirected');
  t.match(answer.location, new RegExp(`^https://${HOST.replaceAll('.', '\\.')}(:\\d+)?/a\\?b=1$`), 'to the same address over HTTPS');
  await shoot('uploaded-settings');
});

t.test('light and dark, desktop and phone: screenshots and an accessibility check', async (t) => {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width > 600 ? 900 : 844 });
      await shoot(`uploaded-${scheme}-${width}`);
      const findings = await seriousA11yViolations(page);
      t.same(findings, [], `${scheme}, ${width} px: no serious accessibility violation ${describeFindings(findings)}`);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 900 });
});

t.test('the certificate removed after a confirmation', async (t) => {
  await dialog.getByRole('button', { name: 'Remove certificate' }).click();
  const confirm = page.getByRole('dialog', { name: 'Remove certificate' });
  t.match(await confirm.textContent(), `Remove the certificate of ${HOST}? Browsers show a certificate warning for https://${HOST} until you upload another one.`, 'the question says what follows');
  await page.screenshot({ path: join(shots, 'remove-confirm.png') });
  const findings = await seriousA11yViolations(page);
  t.same(findings, [], `the confirmation: no serious accessibility violation ${describeFindings(findings)}`);
  await confirm.getByRole('button', { name: 'Remove certificate' }).click();
  await state.filter({ hasText: 'No certificate' }).waitFor();
  const after = await tlsNow();
  t.same([after.state, after.certificate], ['acme-off', null], 'the API has none');
  t.equal(after.settings['hstsMaxAge'], 300, 'the settings stay');
  t.ok(await dialog.isVisible(), 'the HTTPS dialog stays open');
  await dialog.getByRole('button', { name: 'Close' }).click();
  await dialog.waitFor({ state: 'hidden' });
  // The row the dialog opens from, on a phone (rows are stacked cards there).
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole('button', { name: 'HTTPS', exact: true }).scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(shots, 'projects-390.png') });
  await page.setViewportSize({ width: 1280, height: 900 });
});

t.test('nothing went wrong in the page', async (t) => {
  t.same(problems, [], `no console errors: ${problems.join(' | ')}`);
});
