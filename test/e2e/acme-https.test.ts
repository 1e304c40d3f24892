// HTTPS for project hostnames against a real ACME CA (issue 38): Debian's pebble on loopback validates
// HTTP-01 by resolving the hostname through the loopback DNS fixture and fetching the challenge from the
// gateway's plain HTTP listener (pebble's httpPort is a loopback forwarder of ours, pointed at the
// gateway once it listens: both bind port 0). A cluster of two workers, acme.* set by environment:
// - a verified hostname gets a certificate without any operator action, served by SNI on every worker
//   (node's tls.connect, `openssl s_client -servername`, `curl --resolve` trusting pebble's root);
// - redirect to HTTPS and HSTS when asked; a worker killed and restarted serves it too;
// - the certificate (30 s) is renewed at two-thirds of its lifetime, before it expires;
// - a hostname pebble cannot reach fails with pebble's reason recorded and shown, and /metrics counts it;
// - the per-hostname order limit stops `--issue` with a reason; removing the hostname removes its key.
import t from 'tap';
import { X509Certificate } from 'node:crypto';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { connect as netConnect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { createServer, request as httpRequest } from 'node:http';
import { connect as tlsConnect } from 'node:tls';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startDnsFixture } from '../helpers/dns-fixture.js';
import { startPebble } from '../helpers/pebble.js';
import { startServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-data.js';
import { childrenOf } from '../helpers/processes.js';
import { artifactsDir, launchBrowser, setPassword, signedInPage } from '../helpers/browser.js';
import type { Locator } from 'playwright-core';

const execFileAsync = promisify(execFile);

const NAME = 'shop.example.com';
const DOWN = 'down.example.com';
const VALIDITY_S = 30;
const PASSWORD = 'correct horse battery staple';

const dir = tempDir(t, 's3edge-acme-');
const dns = await startDnsFixture();
t.teardown(() => dns.close());
dns.setA(NAME, '127.0.0.1');
// Loopback, but nothing listens on 127.0.0.2: pebble's validation cannot connect.
dns.setA(DOWN, '127.0.0.2');

// pebble dials this port for HTTP-01; it forwards to the gateway's HTTP listener once that is known.
let gatewayPort = 0;
const forwarder = createNetServer((client: Socket) => {
  const upstream = netConnect(gatewayPort, '127.0.0.1');
  client.pipe(upstream).pipe(client);
  const drop = (): void => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', drop);
  upstream.on('error', drop);
});
forwarder.listen(0, '127.0.0.1');
await once(forwarder, 'listening');
t.teardown(() => new Promise<void>((resolve) => forwarder.close(() => resolve())));

// The hostname's origin.
const origin = createServer((req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(`origin saw ${req.url}\n`));
origin.listen(0, '127.0.0.1');
await once(origin, 'listening');
t.teardown(() => new Promise<void>((resolve) => origin.close(() => resolve())));
const originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;

const pebble = await startPebble({ dir, httpPort: (forwarder.address() as AddressInfo).port, dnsServer: dns.server, certificateValiditySeconds: VALIDITY_S, t });
const root = await pebble.rootPem();
const rootFile = join(dir, 'pebble-root.pem');
await writeFile(rootFile, root);

const server = await startServer({
  tls: true,
  workers: 2,
  env: {
    S3EDGE_ACME_DIRECTORY: pebble.directoryUrl,
    S3EDGE_ACME_CA_FILE: pebble.caFile,
    S3EDGE_ACME_ALLOW_PRIVATE_ADDRESSES: 'true',
    S3EDGE_ACME_EMAIL: 'ops@example.com',
    S3EDGE_ACME_CHECK_INTERVAL_SECONDS: '1',
    S3EDGE_ACME_ORDERS_PER_HOSTNAME_PER_HOUR: '3',
    S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS: 'true',
  },
});
t.teardown(() => server.stop());
gatewayPort = Number(new URL(server.url).port);
const httpsPort = Number(new URL(server.tlsUrl as string).port);

async function admin(...args: string[]): Promise<Record<string, unknown>> {
  return server.admin(args);
}

interface Presented {
  fingerprint: string;
  subjectAltName: string | undefined;
  authorized: boolean;
  protocol: string | null;
}

/** The certificate the HTTPS listener presents for `servername`, verified against pebble's root. */
function presented(servername: string, opts: { maxVersion?: 'TLSv1.2' | 'TLSv1.3' } = {}): Promise<Presented> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: httpsPort, servername, ca: [root], rejectUnauthorized: false, ...(opts.maxVersion ? { maxVersion: opts.maxVersion } : {}) }, () => {
      const cert = socket.getPeerCertificate();
      resolve({ fingerprint: cert.fingerprint256, subjectAltName: cert.subjectaltname, authorized: socket.authorized, protocol: socket.getProtocol() });
      socket.end();
    });
    socket.on('error', reject);
  });
}

/** What a handful of fresh connections (spread over the workers by the cluster) were presented. */
async function presentedByAll(servername: string): Promise<Presented[]> {
  const out: Presented[] = [];
  for (let i = 0; i < 6; i++) out.push(await presented(servername));
  return out;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${pebble.log().slice(-3000)}\n${server.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A plain HTTP GET of the hostname on the gateway's HTTP listener. */
function plainGet(path: string): Promise<{ status: number; location: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: gatewayPort, path, headers: { host: NAME } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `openssl s_client -servername NAME` against the HTTPS listener, its stdin closed at once: what it printed. */
function sClient(servername: string): Promise<string> {
  return new Promise((resolve) => {
    const child = execFile('openssl', ['s_client', '-connect', `127.0.0.1:${httpsPort}`, '-servername', servername, '-CAfile', rootFile], (_err, stdout) => resolve(String(stdout)));
    child.stdin?.end();
  });
}

async function tlsStatus(name: string): Promise<Record<string, unknown>> {
  return admin('hostnames', 'tls', name);
}

await admin('users', 'create', 'ana');
await admin('projects', 'create', 'shop', '--user', 'ana');
await admin('hostnames', 'add', NAME, '--user', 'ana', '--project', 'shop');
await admin('hostnames', 'set-origin', NAME, '--url', originUrl);

let firstFingerprint = '';
let issuedAt = 0;

t.test('a verified hostname gets a certificate from the CA without operator action, served by SNI on every worker', async (t) => {
  const before = await presented(NAME);
  t.notOk(before.subjectAltName?.includes(NAME), 'before verification: the operator certificate');
  await admin('hostnames', 'verify', NAME, '--operator');
  const served = await until('the issued certificate', async () => {
    const p = await presented(NAME);
    return p.subjectAltName === `DNS:${NAME}` ? p : undefined;
  }, 30_000);
  issuedAt = Date.now();
  firstFingerprint = served.fingerprint;
  t.ok(served.authorized, "it chains to pebble's root");
  // The other worker's route table reloads within its check (a quarter of a second).
  const all = await until('both workers on it', async () => {
    const got = await presentedByAll(NAME);
    return got.every((p) => p.fingerprint === served.fingerprint) ? got : undefined;
  }, 1_000);
  t.equal(all.length, 6, 'every connection, over both workers, presents it within a second');
  const other = await presented('127.0.0.1');
  t.not(other.fingerprint, served.fingerprint, "another name gets the operator's certificate");

  const s = await tlsStatus(NAME);
  t.match(s, { state: 'issued', acme: true, certificate: { source: 'acme', names: [NAME] }, lastError: null });
  const cert = s['certificate'] as { notBefore: string; notAfter: string; renewsAt: string };
  const lifetime = Date.parse(cert.notAfter) - Date.parse(cert.notBefore);
  t.ok(Math.abs(Date.parse(cert.renewsAt) - (Date.parse(cert.notBefore) + (lifetime * 2) / 3)) < 2000, 'renewal at two-thirds of the lifetime');

  // openssl and curl, as an operator would check it.
  const stdout = await sClient(NAME);
  t.match(stdout, /Verify return code: 0 \(ok\)/, 'openssl s_client verifies the chain');
  t.match(stdout, new RegExp(`subject=\\s*/?(CN ?= ?)?${NAME.replace(/\./g, '\\.')}|CN ?= ?${NAME.replace(/\./g, '\\.')}`), 'openssl s_client names the hostname');
  const curl = await execFileAsync('curl', ['-sS', '--cacert', rootFile, '--resolve', `${NAME}:${httpsPort}:127.0.0.1`, `https://${NAME}:${httpsPort}/hello`]);
  t.equal(curl.stdout, 'origin saw /hello\n', 'curl --resolve over HTTPS reaches the origin');
});

t.test('redirect to HTTPS and HSTS when asked', async (t) => {
  const plainBefore = await plainGet('/page?x=1');
  t.equal(plainBefore.status, 200, 'plain HTTP is proxied until the redirect is asked for');
  await admin('hostnames', 'tls', NAME, '--redirect', 'on', '--hsts', '300');
  const redirected = await until('the redirect', async () => {
    const r = await plainGet('/page?x=1');
    return r.status === 308 ? r : undefined;
  }, 1_000);
  t.equal(redirected.location, `https://${NAME}:${httpsPort}/page?x=1`);
  const challenge = await plainGet('/.well-known/acme-challenge/not-a-token-of-ours-0123456789');
  t.equal(challenge.status, 308, 'a challenge path with no challenge of ours is redirected like any other');
  const curl = await execFileAsync('curl', ['-sS', '-D', '-', '--cacert', rootFile, '--resolve', `${NAME}:${httpsPort}:127.0.0.1`, `https://${NAME}:${httpsPort}/secure`]);
  t.match(curl.stdout, /strict-transport-security: max-age=300\r\n/i, 'HSTS on HTTPS answers');
  t.match(curl.stdout, /origin saw \/secure/);
});

/** A GET of the hostname over HTTPS with at most `maxVersion`: its status, or the error that ended it. */
function httpsGet(path: string, maxVersion: 'TLSv1.2' | 'TLSv1.3'): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpsRequest({ host: '127.0.0.1', port: httpsPort, servername: NAME, path, headers: { host: NAME }, ca: [root], maxVersion, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
}

t.test('a minimum TLS version of 1.3: a TLS 1.2 connection is closed, a TLS 1.3 one served', async (t) => {
  t.equal(await httpsGet('/v12', 'TLSv1.2'), 200, 'TLS 1.2 is served by default');
  // Four fresh connections one after another: the cluster hands them to both workers in turn, and the
  // other worker's route table reloads within its check (a quarter of a second; the deadlines below
  // leave room for the probes' own handshakes on a busy machine).
  const byEveryWorker = async (maxVersion: 'TLSv1.2' | 'TLSv1.3'): Promise<(number | string)[]> => {
    const got: (number | string)[] = [];
    for (let i = 0; i < 4; i++) got.push(await httpsGet(`/v${maxVersion === 'TLSv1.2' ? 12 : 13}`, maxVersion));
    return got;
  };
  await admin('hostnames', 'tls', NAME, '--min-tls', '1.3');
  await until('TLS 1.2 refused by both workers', async () => ((await byEveryWorker('TLSv1.2')).includes(200) ? undefined : true), 3_000);
  t.match(await httpsGet('/v12', 'TLSv1.2'), /ECONNRESET|socket hang up/, 'closed after the handshake');
  t.same(await byEveryWorker('TLSv1.3'), [200, 200, 200, 200], 'TLS 1.3 served by both workers');
  await admin('hostnames', 'tls', NAME, '--min-tls', '1.2');
  await until('TLS 1.2 served again by both workers', async () => ((await byEveryWorker('TLSv1.2')).every((s) => s === 200) ? true : undefined), 3_000);
});

t.test('a worker killed and restarted serves the certificate too', async (t) => {
  const workers = childrenOf(server.pid);
  t.equal(workers.length, 2, 'two workers');
  process.kill(workers[0] as number, 'SIGKILL');
  await until('a replacement worker', async () => {
    const now = childrenOf(server.pid);
    return now.length === 2 && !now.includes(workers[0] as number) ? now : undefined;
  }, 20_000);
  const all = await until('every connection served again', async () => {
    const got = await presentedByAll(NAME).catch(() => undefined);
    return got && got.every((p) => p.subjectAltName === `DNS:${NAME}`) ? got : undefined;
  }, 10_000);
  t.equal(all.length, 6);
});

t.test('renewed at two-thirds of the lifetime, before it expires, on every worker', async (t) => {
  const renewed = await until('the renewed certificate', async () => {
    const p = await presented(NAME);
    return p.subjectAltName === `DNS:${NAME}` && p.fingerprint !== firstFingerprint ? p : undefined;
  }, VALIDITY_S * 1000);
  const after = (Date.now() - issuedAt) / 1000;
  t.ok(after < VALIDITY_S, `renewed ${after.toFixed(1)} s after the first was served, within its ${VALIDITY_S} s`);
  const all = await until('both workers on the new one', async () => {
    const got = await presentedByAll(NAME);
    return got.every((p) => p.fingerprint === renewed.fingerprint) ? got : undefined;
  }, 2_000);
  t.equal(all.length, 6);
  t.match(await tlsStatus(NAME), { state: 'issued', failures: 0 });
});

t.test("a hostname the CA cannot reach: pebble's reason recorded, shown, and in /metrics", async (t) => {
  await admin('hostnames', 'add', DOWN, '--user', 'ana', '--project', 'shop');
  await admin('hostnames', 'verify', DOWN, '--operator');
  const failed = await until('the failure', async () => {
    const s = await tlsStatus(DOWN);
    return s['state'] === 'failed' ? s : undefined;
  }, 30_000);
  t.match(failed['lastError'], /connection refused/, 'the CA said why');
  t.match(failed['summary'], /^Issuance failed: /);
  t.equal(failed['failures'], 1);
  const next = Date.parse(failed['nextAttemptAt'] as string);
  t.ok(next > Date.now() + 30_000, 'the next try waits (backoff)');
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  t.match(metrics, /^s3edge_tls_certificates_failing [1-9]/m);
  t.match(metrics, /^s3edge_tls_certificates [1-9]/m);
  t.match(metrics, /^s3edge_tls_certificate_soonest_expiry_timestamp_seconds [0-9]/m);
  t.match(server.output(), /acme: certificate not issued; will try again/);
  // The proxy logs show each hostname's certificate beside its traffic.
  const { token } = await admin('api-keys', 'create', '--user', 'ana', '--scopes', 'usage:read,projects:read') as { token: string };
  const logs = (await (await fetch(`${server.url}/api/v3/cdn/proxy-logs`, { headers: { authorization: `Bearer ${token}` } })).json()) as { data: { hostnames: { hostname: string; https: unknown }[] } };
  const byName = new Map(logs.data.hostnames.map((h) => [h.hostname, h.https]));
  t.match(byName.get(NAME), { state: 'issued', certificate: 'acme', notAfter: /^\d{4}-/, lastError: null });
  t.match(byName.get(DOWN), { state: 'failed', certificate: null, notAfter: null, lastError: /connection refused/ });
});

t.test("the dashboard's HTTPS dialog in chromium: the issued certificate with its renewal, the failure in the CA's words", async (t) => {
  await setPassword(server, 'ana', PASSWORD);
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const { page, problems, goTo } = await signedInPage(browser, server, 'ana', PASSWORD);
  const shots = artifactsDir('acme-https');
  const open = async (host: string): Promise<Locator> => {
    await goTo('projects');
    const row = page.locator('tr', { has: page.getByTestId('hostname').filter({ hasText: host }) });
    await row.getByRole('button', { name: 'HTTPS', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: `HTTPS of ${host}` });
    await dialog.getByTestId('tls-summary').waitFor();
    return dialog;
  };
  const issued = await open(NAME);
  t.match(await issued.getByTestId('tls-summary').textContent(), /^Served over HTTPS until /);
  t.match(await issued.textContent(), /Renews/, 'the renewal date is shown');
  t.equal(await issued.getByRole('button', { name: 'Request certificate now' }).count(), 1, 'ACME on: a request can be made');
  await page.screenshot({ path: join(shots, 'issued.png') });
  await issued.getByRole('button', { name: 'Close' }).click();
  const failed = await open(DOWN);
  t.match(await failed.getByTestId('tls-summary').textContent(), /^Issuance failed: .*connection refused/);
  t.equal(await failed.getByTestId('tls-failures').textContent(), '1 in a row (the reason is in the sentence above)', 'the failures counted, the reason said once');
  await page.screenshot({ path: join(shots, 'failed.png') });
  t.same(problems, [], 'no console errors');
});

t.test('the per-hostname order limit stops issuance with a reason', async (t) => {
  // Two orders so far (the first, the renewal); the limit is three an hour. The CLI exits 0 only when it issued.
  let out: Record<string, unknown> = {};
  const outcomes: unknown[] = [];
  for (let i = 0; i < 4 && out['outcome'] !== 'limited'; i++) {
    const r = await server.cli(['hostnames', 'tls', NAME, '--issue']);
    out = (r.json ?? {}) as Record<string, unknown>;
    outcomes.push(out['outcome']);
    t.equal(r.code, out['outcome'] === 'issued' ? 0 : 1, `exit code of ${String(out['outcome'])}`);
  }
  t.equal(out['outcome'], 'limited', `outcomes: ${outcomes.join(', ')}`);
  t.match(out['reason'], /acme\.ordersPerHostnamePerHour/);
  t.match(await tlsStatus(NAME), { certificate: { source: 'acme' } }, 'the current certificate stays');
});

t.test("removing the hostname removes its certificate and key: the operator's certificate again", async (t) => {
  await admin('hostnames', 'remove', NAME);
  const p = await until('the operator certificate', async () => {
    const got = await presented(NAME);
    return got.subjectAltName?.includes(NAME) ? undefined : got;
  }, 5_000);
  t.not(p.fingerprint, firstFingerprint);
  const gone = await server.cli(['hostnames', 'tls', NAME]);
  t.not(gone.code, 0, 'no such hostname');
});
