// HTTPS of a project hostname through the API, the typed client and the admin CLI (docs/API.md "HTTPS of
// a hostname"; issue 38), on a server with its HTTPS listener (the operator's certificate for 127.0.0.1 /
// localhost) and without ACME: the status in each state this server can reach (unverified, acme-off,
// uploaded), the settings read back and bad ones refused naming the field, uploads refused with what to
// fix and nothing stored, a good upload served for its SNI name (the operator's for other names), the
// redirect of plain HTTP and HSTS on HTTPS, removal, ownership (404) and scopes (403), "issue now" without
// ACME, and `s3edge hostnames tls` (its --issue against a CA it may not reach: the failure, in words, and
// the state `failed`); ends with the scan for private keys in every answer. ACME issuance itself, against
// pebble, is the ACME e2e test's.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { connect } from 'node:tls';
import t from 'tap';
import type { Hostname, Project, TlsStatus } from '../../src/client/index.js';
import { apiClient, apiUser, refused, eventually, query, ResponseRecorder } from '../helpers/api.js';
import { assertClean, assertErrorJson, runS3edge } from '../helpers/cli.js';
import { childProcessEnv } from '../helpers/child-env.js';
import { startServer } from '../helpers/server.js';
import { makeKey, makeLeafCert, makeTestCa } from '../helpers/tls.js';

const NAME = 'shop.example.com';
const UNVERIFIED = 'new.example.com';

const recorder = new ResponseRecorder();
const server = await startServer({ tls: true });
t.teardown(() => server.stop());
const httpPort = Number(new URL(server.url).port);
const httpsPort = Number(new URL(server.tlsUrl ?? '').port);
const operatorCa = readFileSync(server.caFile ?? '', 'utf8');
const operatorFingerprint = new X509Certificate(operatorCa).fingerprint256;

const certs = join(server.tmpRoot, 'hostname-certs');
await mkdir(certs);
const ca = await makeTestCa(certs);
const [good, otherName, expired, selfSigned, stray] = await Promise.all([
  makeLeafCert(certs, { dnsName: NAME, days: 30, ca }),
  makeLeafCert(certs, { dnsName: 'other.example.org', days: 30, ca }),
  makeLeafCert(certs, { dnsName: NAME, days: -1, ca, prefix: 'expired' }),
  makeLeafCert(certs, { dnsName: NAME, days: 10, prefix: 'self-signed' }),
  makeKey(certs, 'stray-key.pem'),
]);
const goodFingerprint = new X509Certificate(good.leaf).fingerprint256;

const SCOPES = ['projects:read', 'projects:write', 'buckets:manage'];
const [alice, bob] = await Promise.all([
  apiUser(server, [...SCOPES, 'api-keys:manage'], { name: 'alice', recorder }),
  apiUser(server, SCOPES, { name: 'bob', recorder }),
]);
const aliceReader = apiClient(server, (await alice.client.createApiKey({ scopes: ['projects:read'] })).token, recorder);

const project: Project = await alice.client.createProject('shop');
await alice.client.createBucket('alice-shop');
let shop: Hostname = await alice.client.addHostname(project.id, { hostname: NAME, origin: { kind: 'bucket', bucket: 'alice-shop' } });
const fresh: Hostname = await alice.client.addHostname(project.id, { hostname: UNVERIFIED });
await server.admin(['hostnames', 'verify', NAME, '--operator']);
shop = await alice.client.hostname(project.id, shop.id);

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const DEFAULTS = { redirectHttps: false, hstsMaxAge: 0, hstsIncludeSubdomains: false, minTls: '1.2' };
const tlsPath = (hostname: string): string => `/api/v3/projects/${project.id}/hostnames/${encodeURIComponent(hostname)}/tls`;

/** The stored certificate columns of a hostname's row (none: no row). */
function storedCertificate(hostnameId: string): { source: string | null; cert_pem: string | null; key_enc: string | null }[] {
  return query(server, 'SELECT source, cert_pem, key_enc FROM hostname_tls WHERE hostname_id = ?', hostnameId);
}

/** What the HTTPS listener presents for `servername`: its certificate's fingerprint, and whether `ca` vouches for it for that name. */
function handshake(servername: string, caPem: string): Promise<{ fingerprint: string; authorized: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: httpsPort, servername, ca: caPem, rejectUnauthorized: false }, () => {
      resolve({ fingerprint: socket.getPeerCertificate().fingerprint256, authorized: socket.authorized });
      socket.end();
    });
    socket.once('error', reject);
  });
}

/** A GET of `path` with Host `host`, over plain HTTP or over HTTPS (SNI `host`, trusting `caPem`). */
function get(scheme: 'http' | 'https', host: string, path: string, caPem?: string): Promise<{ status: number; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const common = { host: '127.0.0.1', path, headers: { host }, agent: false } as const;
    const req =
      scheme === 'http'
        ? httpRequest({ ...common, port: httpPort })
        : httpsRequest({ ...common, port: httpsPort, servername: host, ...(caPem ? { ca: caPem } : {}) });
    req.once('response', (res) => {
      res.resume();
      res.once('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.once('error', reject);
    req.end();
  });
}

/** `s3edge ARGS --data-dir DIR` without --json (what a person reads), in the server's environment. */
function cliText(args: string[]): ReturnType<typeof runS3edge> {
  return runS3edge([...args, '--data-dir', server.dataDir], {
    S3EDGE_ROOT_ACCESS_KEY: server.rootKey.accessKeyId,
    S3EDGE_ROOT_SECRET_KEY: server.rootKey.secretAccessKey,
  }, undefined, childProcessEnv());
}

t.test('status: unverified, then acme-off once verified; the hostname by id or by name', async (t) => {
  const unverified = await alice.client.hostnameTls(project.id, fresh.id);
  t.same(Object.keys(unverified).sort(), ['acme', 'certificate', 'failures', 'hostname', 'lastError', 'nextAttemptAt', 'settings', 'state', 'summary']);
  t.match(unverified, { hostname: UNVERIFIED, state: 'unverified', acme: false, certificate: null, lastError: null, failures: 0, nextAttemptAt: null });
  t.match(unverified.summary, /^Verify new\.example\.com first/);
  t.same(unverified.settings, DEFAULTS, 'the default settings');
  t.same(await alice.client.hostnameTls(project.id, 'New.Example.COM.'), unverified, 'by name, as typed');

  const off = await alice.client.hostnameTls(project.id, NAME);
  t.match(off, { hostname: NAME, state: 'acme-off', acme: false, certificate: null });
  t.match(off.summary, /off on this server \(the operator sets --acme-directory\); upload a certificate instead/);
  t.same(await alice.client.hostnameTls(project.id, shop.id), off, 'by id');
  await refused(t, alice.client.hostnameTls(project.id, 'nope.example.com'), 404, 'not_found', /^Hostname not found/, 'a name the project does not have');
});

t.test('settings: changed and read back; bad values are 400 naming the field, and change nothing', async (t) => {
  const changed = await alice.client.updateHostnameTls(project.id, shop.id, { redirectHttps: true, hstsMaxAge: 300, hstsIncludeSubdomains: true });
  t.same(changed.settings, { redirectHttps: true, hstsMaxAge: 300, hstsIncludeSubdomains: true, minTls: '1.2' });
  t.same((await alice.client.hostnameTls(project.id, NAME)).settings, changed.settings, 'read back');
  t.same((await alice.client.updateHostnameTls(project.id, NAME, { minTls: '1.3' })).settings, { ...changed.settings, minTls: '1.3' }, 'by name; the others stay');
  t.equal((await alice.client.updateHostnameTls(project.id, shop.id, { hstsMaxAge: 63072000 })).settings.hstsMaxAge, 63072000, 'two years: the largest');
  const settings = (await alice.client.updateHostnameTls(project.id, shop.id, { hstsMaxAge: 300, minTls: '1.2' })).settings;

  const cases: [string, RegExp][] = [
    ['{"hstsMaxAge":-1}', /^hstsMaxAge must be whole seconds from 0 \(no header\) to 63072000/],
    ['{"hstsMaxAge":63072001}', /^hstsMaxAge must be whole seconds/],
    ['{"hstsMaxAge":1.5}', /^hstsMaxAge must be whole seconds/],
    ['{"hstsMaxAge":"300"}', /^hstsMaxAge must be whole seconds/],
    ['{"minTls":"1.1"}', /^minTls must be '1\.2' or '1\.3'/],
    ['{"minTls":1.3}', /^minTls must be/],
    ['{"redirectHttps":"yes"}', /^redirectHttps must be true or false/],
    ['{"hstsIncludeSubdomains":1}', /^hstsIncludeSubdomains must be true or false/],
    ['{"hsts":300}', /^Unknown setting hsts: the settings are redirectHttps, hstsMaxAge, hstsIncludeSubdomains, minTls/],
    ['{"redirectHttps":false,"hstsMaxAge":-5}', /^hstsMaxAge/],
    ['[]', /^The body must be a JSON object of settings/],
    ['null', /^The body must be a JSON object/],
  ];
  for (const [body, message] of cases) {
    const res = await alice.client.raw('PATCH', tlsPath(shop.id), { body, headers: { 'content-type': 'application/json' } });
    t.equal(res.status, 400, `${body}: 400`);
    t.match(JSON.parse(res.body.toString('utf8')), { success: false, code: 'invalid_request', message }, `${body}: names the field`);
  }
  t.same((await alice.client.hostnameTls(project.id, shop.id)).settings, settings, 'nothing changed');
});

t.test('uploads that cannot be served: 400 saying what to fix, nothing stored', async (t) => {
  const cases: [string, { certificate: string; privateKey: string }, RegExp][] = [
    ['another name', { certificate: otherName.chain, privateKey: otherName.key }, /^The certificate is for other\.example\.org, not shop\.example\.com: give a certificate whose subjectAltName names shop\.example\.com/],
    ['expired', { certificate: expired.chain, privateKey: expired.key }, /^The certificate expired on \d{4}-\d\d-\d\dT[\d:.]+Z: give a current one/],
    ["another certificate's key", { certificate: good.chain, privateKey: stray.key }, /^The private key does not belong to the certificate: give the key the certificate was issued for/],
    ['a key that is not PEM', { certificate: good.chain, privateKey: 'not a key' }, /^The private key is not a PEM private key/],
    ['a certificate that is not PEM', { certificate: 'hello', privateKey: good.key }, /^No certificate found: give the PEM chain/],
    ['a chain out of order', { certificate: good.leaf + otherName.leaf, privateKey: good.key }, /^Certificate 2 of the chain did not issue certificate 1: give the chain in order/],
  ];
  for (const [what, upload, message] of cases) {
    await refused(t, alice.client.uploadHostnameCertificate(project.id, shop.id, upload), 400, 'invalid_request', message, what);
  }
  const missing = await alice.client.raw('PUT', `${tlsPath(shop.id)}/certificate`, { body: JSON.stringify({ certificate: good.chain }), headers: { 'content-type': 'application/json' } });
  t.match([missing.status, JSON.parse(missing.body.toString('utf8'))], [400, { code: 'invalid_request', message: /privateKey/ }], 'no privateKey: 400 naming it');
  const huge = await alice.client.raw('PUT', `${tlsPath(shop.id)}/certificate`, {
    body: JSON.stringify({ certificate: 'x'.repeat(200 * 1024), privateKey: good.key }),
    headers: { 'content-type': 'application/json' },
  });
  t.equal(huge.status, 413, 'a body over the upload limit: 413');
  t.match(storedCertificate(shop.id), [{ source: null, cert_pem: null, key_enc: null }], 'no certificate stored');
  t.match(await alice.client.hostnameTls(project.id, shop.id), { state: 'acme-off', certificate: null });
});

let stored: { source: string | null; cert_pem: string | null; key_enc: string | null } | undefined;

t.test('a good upload: served for its name over HTTPS, the operator\'s certificate for other names; the key never shown', async (t) => {
  const tls = await alice.client.uploadHostnameCertificate(project.id, shop.id, { certificate: good.chain, privateKey: good.key });
  const x509 = new X509Certificate(good.leaf);
  t.match(tls, { hostname: NAME, state: 'uploaded', acme: false, lastError: null, nextAttemptAt: null, summary: /^Served over HTTPS until / });
  t.same(tls.certificate, {
    source: 'uploaded',
    fingerprint: goodFingerprint,
    names: [NAME],
    notBefore: new Date(x509.validFrom).toISOString(),
    notAfter: new Date(x509.validTo).toISOString(),
    renewsAt: null,
    expired: false,
  });
  t.same(await alice.client.hostnameTls(project.id, NAME), tls, 'read back by name');
  [stored] = storedCertificate(shop.id);
  t.match(stored, { source: 'uploaded', cert_pem: /BEGIN CERTIFICATE/ }, 'stored');
  t.notMatch(stored?.key_enc ?? '', /PRIVATE KEY|BEGIN/, 'the key is stored sealed');

  await eventually(async () => (await handshake(NAME, ca.pem)).fingerprint === goodFingerprint, 'the uploaded certificate served');
  t.same(await handshake(NAME, ca.pem), { fingerprint: goodFingerprint, authorized: true }, `${NAME}: the uploaded certificate, valid for its name`);
  t.same(await handshake('localhost', operatorCa), { fingerprint: operatorFingerprint, authorized: true }, "localhost: the operator's certificate");
  t.equal((await handshake(UNVERIFIED, operatorCa)).fingerprint, operatorFingerprint, "a hostname without a certificate: the operator's");
  t.equal((await handshake('unknown.example.org', operatorCa)).fingerprint, operatorFingerprint, "a name the server does not serve: the operator's");
});

t.test('redirect to HTTPS and HSTS, as set', async (t) => {
  const plain = await get('http', NAME, '/catalogue/shoes?size=42');
  t.equal(plain.status, 308, 'plain HTTP: 308');
  t.equal(plain.headers.location, `https://${NAME}:${httpsPort}/catalogue/shoes?size=42`, 'to the same path on the HTTPS listener');
  const secure = await get('https', NAME, '/', ca.pem);
  t.not(secure.status, 308, 'HTTPS is served, not redirected');
  t.equal(secure.headers['strict-transport-security'], 'max-age=300; includeSubDomains', 'HSTS on HTTPS');
  t.notOk(plain.headers['strict-transport-security'], 'none on plain HTTP');

  await alice.client.updateHostnameTls(project.id, shop.id, { redirectHttps: false, hstsMaxAge: 0 });
  t.not((await get('http', NAME, '/')).status, 308, 'redirect off: served over plain HTTP');
  t.notOk((await get('https', NAME, '/', ca.pem)).headers['strict-transport-security'], 'hstsMaxAge 0: no header');
  await alice.client.updateHostnameTls(project.id, shop.id, { redirectHttps: true, hstsMaxAge: 300 });
});

t.test('removal: the certificate and its key are gone, the operator\'s certificate serves', async (t) => {
  const tls = await alice.client.removeHostnameCertificate(project.id, shop.id);
  t.match(tls, { state: 'acme-off', certificate: null });
  t.same(tls.settings, { redirectHttps: true, hstsMaxAge: 300, hstsIncludeSubdomains: true, minTls: '1.2' }, 'the settings stay');
  t.match(storedCertificate(shop.id), [{ source: null, cert_pem: null, key_enc: null }], 'nothing stored');
  await eventually(async () => (await handshake(NAME, operatorCa)).fingerprint === operatorFingerprint, "the operator's certificate again");
  t.not((await get('http', NAME, '/')).status, 308, 'no certificate: no redirect, whatever the setting');
  t.match(await alice.client.removeHostnameCertificate(project.id, shop.id), { state: 'acme-off' }, 'removing none is fine');
});

t.test('issue now: refused without ACME, saying how to turn it on; an unverified hostname first needs verifying', async (t) => {
  await refused(t, alice.client.issueHostnameCertificate(project.id, shop.id), 400, 'invalid_request', /--acme-directory.*upload a certificate instead/, 'no acme.directory');
  await refused(t, alice.client.issueHostnameCertificate(project.id, UNVERIFIED), 400, 'invalid_request', /^Verify new\.example\.com first/, 'unverified');
  const raw = await alice.client.raw('POST', `${tlsPath(shop.id)}/issue`);
  t.equal(raw.status, 400);
});

t.test("another user's hostname is 404 on every route; a read-only key cannot change anything", async (t) => {
  const notFound = /not found/;
  const bobs = await bob.client.createProject('shop');
  for (const [where, projectId, hostname] of [["alice's project", project.id, shop.id], ["alice's project, by name", project.id, NAME], ["bob's project", bobs.id, shop.id], ["bob's project, by name", bobs.id, NAME]] as const) {
    await refused(t, bob.client.hostnameTls(projectId, hostname), 404, 'not_found', notFound, `${where}: GET`);
    await refused(t, bob.client.updateHostnameTls(projectId, hostname, { redirectHttps: false }), 404, 'not_found', notFound, `${where}: PATCH`);
    await refused(t, bob.client.issueHostnameCertificate(projectId, hostname), 404, 'not_found', notFound, `${where}: issue`);
    await refused(t, bob.client.uploadHostnameCertificate(projectId, hostname, { certificate: good.chain, privateKey: good.key }), 404, 'not_found', notFound, `${where}: upload`);
    await refused(t, bob.client.removeHostnameCertificate(projectId, hostname), 404, 'not_found', notFound, `${where}: remove`);
  }
  t.match(await alice.client.hostnameTls(project.id, shop.id), { certificate: null, settings: { redirectHttps: true } }, "alice's hostname is untouched");

  t.match(await aliceReader.hostnameTls(project.id, NAME), { hostname: NAME }, 'projects:read reads it');
  const forbidden = /lacks the 'projects:write' scope/;
  await refused(t, aliceReader.updateHostnameTls(project.id, shop.id, { redirectHttps: false }), 403, 'forbidden', forbidden, 'projects:read: PATCH');
  await refused(t, aliceReader.uploadHostnameCertificate(project.id, shop.id, { certificate: good.chain, privateKey: good.key }), 403, 'forbidden', forbidden, 'projects:read: upload');
  await refused(t, aliceReader.removeHostnameCertificate(project.id, shop.id), 403, 'forbidden', forbidden, 'projects:read: remove');
  await refused(t, aliceReader.issueHostnameCertificate(project.id, shop.id), 403, 'forbidden', forbidden, 'projects:read: issue');
  t.same((await alice.client.hostnameTls(project.id, shop.id)).settings.redirectHttps, true, 'nothing changed');
});

t.test('the CLI: hostnames tls shows, sets, uploads, removes; --issue without ACME is one line, a failed one prints why', async (t) => {
  const shown = await server.admin(['hostnames', 'tls', NAME]);
  t.same(shown, await alice.client.hostnameTls(project.id, shop.id), '--json prints the TlsStatus the API answers');

  const text = await cliText(['hostnames', 'tls', NAME]);
  t.equal(text.code, 0);
  t.match(text.stdout, /^hostname: +shop\.example\.com\nstate: +acme-off\nsummary: +Automatic certificates are off/m, 'for people: the state and a sentence');
  t.match(text.stdout, /^certificate: +none$/m);
  t.match(text.stdout, /^redirectHttps: +on$/m);
  t.match(text.stdout, /^hsts: +max-age=300; includeSubDomains$/m);
  t.match(text.stdout, /^minTls: +1\.2$/m);

  const set = (await server.admin(['hostnames', 'tls', NAME, '--redirect', 'off', '--hsts', '0', '--hsts-subdomains', 'off', '--min-tls', '1.3'])) as unknown as TlsStatus;
  t.same(set.settings, { redirectHttps: false, hstsMaxAge: 0, hstsIncludeSubdomains: false, minTls: '1.3' }, 'every setting');
  const again = (await server.admin(['hostnames', 'tls', NAME, '--redirect', 'on', '--hsts', '300', '--min-tls', '1.2'])) as unknown as TlsStatus;
  t.same(again.settings, { redirectHttps: true, hstsMaxAge: 300, hstsIncludeSubdomains: false, minTls: '1.2' }, '--redirect on --hsts 300');
  t.same((await alice.client.hostnameTls(project.id, shop.id)).settings, again.settings, 'the API reads the same');

  const selfFingerprint = new X509Certificate(selfSigned.leaf).fingerprint256;
  const uploaded = (await server.admin(['hostnames', 'tls', NAME, '--upload', '--cert', selfSigned.certFile, '--key', selfSigned.keyFile])) as unknown as TlsStatus;
  t.match(uploaded, { state: 'uploaded', certificate: { source: 'uploaded', fingerprint: selfFingerprint, names: [NAME], renewsAt: null } }, '--upload');
  await eventually(async () => (await handshake(NAME, selfSigned.leaf)).fingerprint === selfFingerprint, 'the server serves what the CLI uploaded (within the route table\'s check)');
  t.equal((await handshake(NAME, selfSigned.leaf)).authorized, true, 'the self-signed certificate, valid for its name');
  const uploadedText = await cliText(['hostnames', 'tls', NAME]);
  t.match(uploadedText.stdout, /^certificate: +uploaded\nnames: +shop\.example\.com\nnotBefore: +\S+\nnotAfter: +\S+\nrenewsAt: +never/m, 'for people: source, names, validity, renewal');
  t.match(uploadedText.stdout, new RegExp(`^fingerprint: +${selfFingerprint}$`, 'm'));

  const refusals: [string[], string, RegExp][] = [
    [['--upload', '--cert', join(certs, 'missing.pem'), '--key', selfSigned.keyFile], 'InvalidArgument', /^cannot read --cert \S+missing\.pem: no such file$/],
    [['--upload', '--cert', selfSigned.certFile], 'InvalidArgument', /^--upload needs --cert FILE .* and --key FILE/],
    [['--upload', '--cert', otherName.certFile, '--key', otherName.keyFile], 'InvalidCertificate', /^The certificate is for other\.example\.org, not shop\.example\.com/],
    [['--upload', '--cert', good.certFile, '--key', stray.keyFile], 'InvalidCertificate', /^The private key does not belong to the certificate/],
    [['--issue'], 'AcmeOff', /^automatic certificates are off: set --acme-directory URL .* or upload a certificate with --upload --cert FILE --key FILE$/],
    [['--hsts', '-5'], 'InvalidArgument', /^--hsts takes whole seconds from 0 \(no header\) to 63072000/],
    [['--redirect', 'yes'], 'InvalidArgument', /^--redirect takes on or off/],
    [['--min-tls', '1.0'], 'InvalidArgument', /^--min-tls takes 1\.2 or 1\.3/],
    [['--remove', '--issue'], 'InvalidArgument', /^give one of --upload, --remove, --issue or the settings/],
    [['--cert', good.certFile], 'InvalidArgument', /^--cert and --key go with --upload/],
  ];
  for (const [flags, code, message] of refusals) {
    const r = await server.cli(['hostnames', 'tls', NAME, ...flags]);
    const what = `tls ${flags.map((f) => f.replace(certs, '…')).join(' ')}`;
    t.equal(r.code, 1, `${what}: exit 1`);
    assertErrorJson(t, r, code, what);
    t.equal(r.stderr.trimEnd().split('\n').length, 1, `${what}: one line`);
    t.match((JSON.parse(r.stdout) as { error: { message: string } }).error.message, message, `${what}: says what to do`);
    assertClean(t, r, what);
  }
  t.match(await alice.client.hostnameTls(project.id, shop.id), { certificate: { fingerprint: selfFingerprint } }, 'the refused uploads changed nothing');
  const unknown = await server.cli(['hostnames', 'tls', 'nope.example.com']);
  t.equal(unknown.code, 1);
  assertErrorJson(t, unknown, 'NoSuchHostname', 'an unknown hostname');

  const removed = (await server.admin(['hostnames', 'tls', NAME, '--remove'])) as unknown as TlsStatus;
  t.match(removed, { state: 'acme-off', certificate: null }, '--remove');
  t.match(storedCertificate(shop.id), [{ source: null, key_enc: null }], 'gone from the database');
  await eventually(async () => (await handshake(NAME, operatorCa)).fingerprint === operatorFingerprint, "the operator's certificate again");

  // --issue runs the issuance here and now; a CA that cannot be reached makes it fail, with the reason.
  const failed = await server.cli(['hostnames', 'tls', NAME, '--issue', '--acme-directory', 'http://127.0.0.1:9/directory', '--acme-timeout-ms', '2000']);
  t.equal(failed.code, 1, '--issue that fails: exit 1');
  t.match(failed.json, { outcome: 'failed', reason: /\S/, nextAttemptAt: ISO, tls: { hostname: NAME, state: 'failed', failures: 1 } }, 'the outcome, with the reason and the next try');
  t.equal(failed.stderr, '', 'nothing else on stderr');
  const status = await alice.client.hostnameTls(project.id, shop.id);
  t.match(status, { state: 'failed', lastError: (failed.json as { reason: string }).reason, failures: 1 }, 'the API shows the failure');
  const failedText = await cliText(['hostnames', 'tls', NAME, '--issue', '--acme-directory', 'http://127.0.0.1:9/directory']);
  t.equal(failedText.code, 1);
  t.match(failedText.stdout, /^outcome: +failed\nreason: +refused to connect to 127\.0\.0\.1 .*\nnextAttemptAt: +\S+ \(the server's ACME job tries again then\)\n$/, 'for people: the outcome, the reason, the next try');
});

t.test('no answer carries a private key', async (t) => {
  const keyLines = [good, otherName, expired, selfSigned, stray].flatMap((c) => c.key.split('\n').slice(1, 3));
  recorder.assertNoLeaks(t, ['PRIVATE KEY-----', 'keyEnc', 'key_enc', ...keyLines, stored?.key_enc?.slice(0, 48) ?? 'sealed key not read']);
});
