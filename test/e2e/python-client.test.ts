// The Python client (clients/python, package s3edge_client; docs/API.md "The Python client") against the
// real server: test/python/client_e2e.py makes every call with the key this file creates and prints what
// each returned or raised, and this file judges it. Domain search is answered by a loopback RDAP server
// (test/helpers/rdap-fixture.ts), hostname verification by a loopback DNS server (dns-fixture.ts), and the
// domain rate limits are made small (3 TLD searches in 2 s) so that a real 429 with Retry-After is
// cheap. What a gateway gives only under load or never (503s, a cut body, a stalled answer) is served to
// the client by an http.server stub inside the Python script. Then the TypeScript client checks what the
// Python calls left behind, and the docs' Python quick start runs as written.
import t from 'tap';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiUser } from '../helpers/api.js';
import { childProcessEnv } from '../helpers/child-env.js';
import { describeRun, run } from '../helpers/conformance.js';
import { codeBlocksOf } from '../helpers/doc-commands.js';
import { startDnsFixture } from '../helpers/dns-fixture.js';
import { startRdapFixture } from '../helpers/rdap-fixture.js';
import { startServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-data.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PACKAGE = join(ROOT, 'clients', 'python');
const SCRIPT = join(ROOT, 'test', 'python', 'client_e2e.py');

const rdap = await startRdapFixture();
t.teardown(() => rdap.close());
rdap.set('free-python.com', { kind: 'available' });
rdap.set('taken-python.com', { kind: 'registered' });
const dns = await startDnsFixture();
t.teardown(() => dns.close());
const work = tempDir(t);

const server = await startServer({
  env: {
    S3EDGE_DOMAINS_RDAP_BOOTSTRAP_FILE: rdap.writeBootstrap(join(work, 'bootstrap.json'), ['com']),
    S3EDGE_DOMAINS_RDAP_ALLOW_PRIVATE_ADDRESSES: 'true',
    S3EDGE_DOMAINS_RDAP_TIMEOUT_MS: '400',
    S3EDGE_DOMAINS_RDAP_SEARCH_DEADLINE_MS: '1500',
    S3EDGE_DOMAINS_RATE_LIMITS_WINDOW_SECONDS: '2',
    S3EDGE_DOMAINS_RATE_LIMITS_TLD_SEARCH: '3',
    S3EDGE_EDGE_DNS_SERVERS: dns.server,
  },
});
t.teardown(() => server.stop());
const SCOPES = ['assets:read', 'assets:write', 'usage:read', 'storage-keys:manage', 'buckets:manage', 'api-keys:manage', 'projects:read', 'projects:write', 'domains:read'];
const user = await apiUser(server, SCOPES, { name: 'pythonista' });

/** python3 with the package on its path, writing no bytecode into the checkout. */
function pythonEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...childProcessEnv(), PYTHONPATH: PACKAGE, PYTHONDONTWRITEBYTECODE: '1', ...extra };
}

const started = Date.now();
const py = await run('python3', [SCRIPT, '--base-url', server.url], { env: pythonEnv({ S3EDGE_TOKEN: user.token }), timeoutMs: 120_000 });
const pySeconds = (Date.now() - started) / 1000;
if (py.code !== 0) throw new Error(describeRun('client_e2e.py', py));
/** What the script observed: JSON, judged field by field below. */
type Obs = Record<string, any>;
const out = JSON.parse(py.stdout) as Record<string, Obs>;
const pkg = out.package as Obs;
const srv = out.server as Obs;
const stub = out.stub as Obs;

t.test('every step ran without an unexpected exception', async (t) => {
  for (const [section, steps] of Object.entries({ package: pkg, server: srv, stub })) {
    for (const [name, value] of Object.entries(steps)) {
      const unexpected = value && typeof value === 'object' && !Array.isArray(value) ? (value as Obs).unexpected : undefined;
      t.equal(unexpected, undefined, `${section}.${name}`, unexpected ? { trace: (value as Obs).trace } : {});
    }
  }
  t.comment(`client_e2e.py: ${pySeconds.toFixed(1)} s (${JSON.stringify(out.seconds)})`);
});

t.test('the package: py.typed, no dependencies, compiles, annotated', async (t) => {
  t.equal(pkg.pyTyped, true, 'py.typed is in the package');
  t.ok(existsSync(join(PACKAGE, 's3edge_client', 'py.typed')));
  t.match(pkg.pyproject, { name: 's3edge-client', dependencies: [], versionMatches: true, packageData: { s3edge_client: ['py.typed'] } });
  t.equal(pkg.pyproject.setuptools, 'valid', "setuptools reads pyproject.toml's [project] and [tool.setuptools] without error");
  t.same(pkg.compiled, ['__init__.py', '_http.py', 'client.py', 'errors.py', 'types.py'], 'every module compiles');
  t.same(pkg.annotations.missing, [], 'every parameter and return of every public method is annotated');
  for (const m of ['upload_asset', 'list_assets', 'download_asset', 'download_asset_to', 'delete_asset', 'summary', 'usage', 'list_access_keys', 'create_access_key',
    'delete_access_key', 'create_project', 'add_hostname', 'proxy_logs', 'tlds', 'popular_tlds', 'search_tlds', 'search_domain']) {
    t.ok(pkg.annotations.methods.includes(m), `S3EdgeClient.${m}`);
  }
  t.same(pkg.exports, [], 'everything in __all__ is there');
  // A type checker, where the machine has one (the standard library has none; PyPI is not reachable here).
  const mypy = await run('python3', ['-m', 'mypy', '--version'], { env: pythonEnv() });
  if (mypy.code === 0) {
    const checked = await run('python3', ['-m', 'mypy', '--strict', '--no-incremental', join(PACKAGE, 's3edge_client')], { env: pythonEnv() });
    t.equal(checked.code, 0, `mypy --strict: ${checked.stdout}`);
  } else {
    t.comment('no mypy on this machine: the package is checked by compiling it and by its annotations above');
  }
});

t.test('uploads: bytes, a path, a file object, a pipe (chunked), a Unicode name', async (t) => {
  t.match(srv.uploadBytes, { fileName: 'hello-python.txt', contentType: 'text/plain', size: 18, visibility: 'private', kind: 'file', projectId: null });
  t.match(srv.uploadBytes, { metadata: { 'file-name': 'hello-python.txt', kind: 'file', visibility: 'private' } });
  const fromPath = srv.uploadPath;
  t.match(fromPath, { fileName: 'report-python.bin', visibility: 'public', kind: 'artifact', contentType: 'application/octet-stream' });
  t.equal(fromPath.size, fromPath.expectedSize, 'the whole file');
  t.equal(fromPath.sha256, fromPath.expectedSha256, "the server's SHA-256 is the file's");
  t.match(fromPath.publicUrl, /^http:\/\/cdn\.localhost:\d+\/[0-9a-f]+\/report-python\.bin$/);
  t.same(srv.uploadFileObjects, {
    seekable: { size: 18, data: 'from a file object' },
    pipe: { size: 25, contentType: 'application/x-custom', data: 'from a pipe, sent chunked' },
    unicode: { fileName: 'résumé 📄.txt', size: 5 },
  }, 'a file object from its position on, a pipe whole, a UTF-8 name kept');
});

t.test('list: paging, search, kind, iteration', async (t) => {
  const l = srv.list;
  t.same(l.first, { pagination: { page: 1, limit: 2, total: 5, pages: 3 }, count: 2 });
  t.same(l.second, { pagination: { page: 2, limit: 2, total: 5, pages: 3 }, count: 2 });
  t.equal(l.pagesDisjoint, true, 'two pages, no asset twice');
  t.same(l.search, ['report-python.bin']);
  t.same(l.artifacts, ['artifact']);
  t.same(l.artifactIds, [srv.uploadPath.id]);
  t.equal(l.iterated, 5, 'iter_assets walks every page');
  t.equal(l.iteratedDistinct, 5);
  t.same(l.listItemKeys, ['contentType', 'createdAt', 'fileName', 'id', 'key', 'kind', 'publicUrl', 'size', 'storageName', 'updatedAt', 'visibility']);
});

t.test('download: bytes, streamed to a path and to a file object, a range', async (t) => {
  t.match(srv.download, {
    bytesEqual: true, pathEqual: true, pathWritten: srv.uploadPath.size, leftovers: [],
    fileObjectWritten: 18, fileObject: 'hello from python\n', range: true,
  });
  t.ok(srv.download.iterChunks >= 2, `iter_download streams in chunks (${srv.download.iterChunks})`);
  t.match(srv.signedUrl, { url: new RegExp(`/${srv.signedUrl.assetId}/hello-python\\.txt\\?`), expiresAt: /^\d{4}-\d\d-\d\dT/ });
});

t.test('delete, then 404 as NotFoundError with status and code', async (t) => {
  const d = srv.delete;
  t.equal(d.message, 'Asset deleted');
  t.equal(d.listedAfter, 0);
  for (const what of ['downloadAfter', 'deleteAgain', 'toPathAfter']) {
    t.match(d[what], { type: 'NotFoundError', isNotFound: true, status: 404, code: 'not_found', message: 'Asset not found', retryAfter: null }, what);
  }
  t.equal(d.noFileLeft, true, 'a refused download to a path leaves no file');
});

t.test('summary and usage', async (t) => {
  t.match(srv.summaryUsage, { totalFiles: 4, recentAssets: 4, spaceStatus: 'active', usageEvents: 3, usageKeys: ['creditLedger', 'credits', 'events'] });
  t.same(srv.summaryUsage.eventTypes, ['delete', 'download', 'upload']);
  t.same(srv.summaryUsage.quota.user, { storedBytes: srv.summaryUsage.storageBytes, assetBytes: srv.summaryUsage.storageBytes, quotaBytes: null },
    'storage_quota(): no bucket yet, so the assets are all it stores; no quota');
  const day = ['creditsAdded', 'creditsCharged', 'date', 'deletes', 'downloadedBytes', 'downloads', 'uploadedBytes', 'uploads'];
  t.same(srv.summaryUsage.rawDaily, [day, day, day], 'request(): any JSON route, the envelope once successful');
});

t.test('buckets and their storage access keys: create, list, delete', async (t) => {
  const s = srv.storageKeys;
  t.match(s.bucket, { name: 'py-client-bucket', public: false, objects: 0 });
  t.same(s.buckets, ['py-client-bucket']);
  t.same(s.created, { name: 'python ci', permission: 'read_write', bucket: 'py-client-bucket', region: 'us-east-1', forcePathStyle: true });
  t.equal(s.hasSecret, true);
  t.equal(s.endpointIsServer, true, 'the S3 endpoint is the server');
  t.same(s.listed, [{ id: s.createdId, keys: ['accessKeyId', 'bucket', 'createdAt', 'id', 'name', 'permission'] }], 'listed without its secret');
  t.equal(s.deleteMessage, 'Access key deleted');
  t.same(s.afterDelete, []);
  t.match(s.deleteAgain, { type: 'NotFoundError', status: 404, code: 'not_found' });
  t.match(s.otherBucket, { type: 'NotFoundError', status: 404 });
  t.match(s.bucketAgain, { type: 'ConflictError', status: 409, code: 'bucket_exists' });
  t.match(s.badPermission, { type: 'BadRequestError', status: 400, code: 'invalid_request', message: /permission/ });
});

t.test('projects, deployments, hostnames and proxy logs', async (t) => {
  const p = srv.projects;
  t.match(p, { project: 'Python site', projects: ['Python site'], got: true, deployments: ['v1'], linked: { projectId: true, deploymentId: true }, projectAssets: 1, projectSummary: 1 });
  t.same(p.hostname, { name: 'app.python-client.example.com', verified: false, recordType: 'TXT', recordName: '_s3edge-challenge.app.python-client.example.com' });
  t.same(p.origin, { kind: 'url', url: 'https://origin.example.net', preserveHost: false });
  t.same(p.rules, ['XX']);
  t.same(p.getHostname, p.origin);
  t.same(p.hostnames, ['app.python-client.example.com']);
  // No CDN or proxy traffic in the request log: the report falls back to the download usage events (docs/API.md "Proxy logs").
  t.match(p.proxyLogs, { available: false, hours: 24, hasWindow: true, oneHostname: 'app.python-client.example.com', oneHours: 1 });
  t.ok(p.proxyLogs.total > 0, `${p.proxyLogs.total} requests`);
  t.equal(p.proxyLogs.total, p.proxyLogs.downloadEvents, 'one per download the client made');
  t.ok(p.proxyLogs.hostnames.includes('app.python-client.example.com'), 'the project hostname is among the proxy-log hostnames');
  t.match(p.proxyLogs.unknown, { type: 'NotFoundError', status: 404, code: 'not_found' });
  t.match(p.verify, { type: 'ConflictError', status: 409, code: 'verification_failed' }, 'no TXT record at the loopback DNS server');
  t.ok(dns.asked('_s3edge-challenge.app.python-client.example.com') >= 1, 'the lookup reached it');
  t.match(p.tls, { hostname: 'app.python-client.example.com', state: 'unverified', acme: false, certificate: null, settings: { redirectHttps: false, hstsMaxAge: 0 } }, 'get_hostname_tls by name');
  t.same(p.tlsSettings, { redirectHttps: true, hstsMaxAge: 300, hstsIncludeSubdomains: false, minTls: '1.2' }, 'update_hostname_tls');
  t.match(p.tlsBadSetting, { type: 'BadRequestError', status: 400, code: 'invalid_request', message: /^hstsMaxAge must be/ });
  t.match(p.tlsIssue, { type: 'BadRequestError', status: 400, message: /^Verify app\.python-client\.example\.com first/ }, 'issue_hostname_certificate: unverified');
  t.match(p.tlsUpload, { type: 'BadRequestError', status: 400, message: /^No certificate found/ }, 'upload_hostname_certificate: not PEM');
  t.equal(p.tlsRemoved, null, 'remove_hostname_certificate');
  t.match(p.duplicate, { type: 'ConflictError', status: 409, code: 'project_exists' });
  t.match(p.badHostname, { type: 'BadRequestError', status: 400, code: 'invalid_request', message: /hostname/ });
  t.match(p, { removed: /\S/, deleted: /\S/ });
  t.match(p.afterDelete, { type: 'NotFoundError', status: 404 });
  t.equal(p.unlinked, 1, 'the linked asset stays, unlinked');
});

t.test('domains: catalogue, popular, TLD search, domain search over RDAP', async (t) => {
  const d = srv.domains;
  t.ok(d.tlds >= 60, `${d.tlds} TLDs`);
  t.match(d.com, { tld: '.com', extension: 'com', registerDollar: 10.98, registerNaira: 17019, popular: true, popularRank: 1 });
  t.same(d.popular, ['.com', '.net', '.org']);
  t.same(d.searchTlds, { tld: '.io', match: 'exact' });
  t.same(d.free, { query: 'free-python.com', kind: 'domain', domain: 'free-python.com', available: true, status: 'available', provider: 'rdap', registerDollar: 10.98 });
  t.same(d.taken, { domain: 'taken-python.com', available: false, status: 'registered' });
  t.equal(rdap.count('free-python.com'), 1, 'the registry was asked');
  t.equal(d.label, true, 'a bare label: one result per popular TLD');
  t.match(d.badQuery, { type: 'BadRequestError', status: 400, code: 'invalid_request', message: /letters, digits/i });
  t.match(d.badTld, { type: 'BadRequestError', status: 400, code: 'invalid_request' });
});

t.test('scopes and keys: 403 as ForbiddenError (an AuthError), a bad key 401 as AuthError', async (t) => {
  const k = srv.apiKeys;
  t.same(k.scopes, ['assets:read']);
  t.match(k, { listed: true, tokenInListing: false, readerLists: true, deleted: /\S/ });
  for (const what of ['readerUploads', 'readerUsage', 'wider']) {
    t.match(k[what], { type: 'ForbiddenError', isAuthError: true, isForbidden: true, status: 403, code: 'forbidden' }, what);
  }
  t.match(k.readerUploads.message, /assets:write/);
  t.match(k.afterDelete, { type: 'AuthError', isForbidden: false, status: 401, code: 'unauthorized' }, 'a deleted key is refused at once');
  t.match(k.badKey, { type: 'AuthError', isAuthError: true, isForbidden: false, status: 401, code: 'unauthorized', message: 'Missing or invalid API key' });
  t.match(k.badKeyUpload, { type: 'AuthError', status: 401 }, 'an upload refused before its body was read still gets its answer');
});

t.test('a real 429: RateLimitedError with Retry-After, then retried after it and served', async (t) => {
  const r = srv.rateLimit;
  // The 4th TLD search in the 2 s window (later only if the machine stalled past a window meanwhile).
  t.ok(r.callsUntilRefused >= 4 && r.callsUntilRefused < 20, `refused at call ${r.callsUntilRefused}`);
  t.match(r.refusal, { type: 'RateLimitedError', isRateLimited: true, status: 429, code: 'rate_limited', message: /Too many requests/ });
  t.ok(r.refusal.retryAfter >= 1 && r.refusal.retryAfter <= 2, `retry_after ${r.refusal.retryAfter} s, within the window`);
  t.equal(r.retriedThenServed, '.io', 'the retrying client was served');
  t.equal(r.slept.length, 1, 'after one wait');
  t.ok(r.slept[0] >= 1 && r.slept[0] <= 2, `of Retry-After's ${r.slept[0]} s`);
});

t.test('retries, backoff, timeouts and cut downloads against a stub server', async (t) => {
  t.same(stub.retried503, { tld: '.io', attempts: 3, slept: [1, 0], authorization: true }, "two 503s, each Retry-After waited, then served");
  t.match(stub.backoffExhausted, { attempts: 4, isServiceUnavailable: true, error: { type: 'ServiceUnavailableError', isServerError: true, status: 503, code: 'storage_unavailable', retryAfter: null } });
  const slept = stub.backoffExhausted.slept as number[];
  t.equal(slept.length, 3, 'bounded: 3 retries');
  // base 0.2 s doubling, capped at 0.5 s, times a jitter of 0.5 to 1.
  [[0.1, 0.2], [0.2, 0.4], [0.25, 0.5]].forEach(([lo, hi], i) => t.ok(slept[i]! >= lo! && slept[i]! <= hi!, `backoff ${i}: ${slept[i]} in [${lo}, ${hi}]`));
  t.same(stub.backoffBounds, [0.25, 0.5, 0.5, 1, 1, 2, 4, 8, null, null], 'RetryPolicy.delay: 0.5 * 2^n capped at 8, jitter 0.5 to 1; none past max_retries');
  t.equal(stub.retryAfterDate.attempts, 2);
  t.ok(stub.retryAfterDate.slept[0] > 1 && stub.retryAfterDate.slept[0] <= 3, `an HTTP-date Retry-After: ${stub.retryAfterDate.slept[0]} s`);
  t.match(stub.retryAfterTooLong, { attempts: 1, slept: [], error: { type: 'RateLimitedError', status: 429, retryAfter: 3600 } }, 'an hour is not waited for');
  t.match(stub.noRetryPolicy, { attempts: 1, error: { type: 'ServiceUnavailableError', status: 503, code: 'busy', retryAfter: 1 } }, 'max_retries=0');
  t.match(stub.uploadReplayed, { asset: 'a1', attempts: 2, sameBody: true, carriesFile: true }, 'an upload retried sends the same form again');
  t.match(stub.uploadReplayed, { pipeAttempts: 1, pipe: { type: 'ServiceUnavailableError', status: 503 } }, 'a pipe cannot be sent twice: no retry');
  t.match(stub.timeout, { attempts: 1, error: { type: 'TransportError', status: null, code: 'timeout' } }, 'a server that never answers: timeout=0.3 s, not retried');
  t.comment(`timed out after ${stub.timeout.elapsed.toFixed(2)} s`);
  t.match(stub.refused, { type: 'TransportError', status: null, code: 'connection_failed' });
  t.match(stub.cutDownload, {
    bytes: { type: 'TransportError', status: 200, code: 'incomplete_download', message: /50 of 100 bytes/ },
    toPath: { type: 'TransportError', code: 'incomplete_download' }, noFile: true, noPart: true,
  }, 'a cut body is an error, and leaves no file');
  t.match(stub.notJson, {
    badGateway: { type: 'ServerError', status: 502, code: 'http_502', message: 'Bad Gateway' },
    notEnvelope: { type: 'S3EdgeError', status: 200, code: 'bad_response' },
  });
  t.same(stub.quoting, { path: '/api/v3/cdn/assets/a%2Fb%3F/download', data: 'ok' }, 'an id is one path segment');
  t.match(stub.badArguments, {
    keyWithNewline: { leaks: false, message: /api_key/ }, emptyKey: { leaks: false }, notHttp: { message: /base_url/ }, emptyId: { message: /id/ },
  });
});

t.test('the API key is never shown', async (t) => {
  t.same(out.leaks!.token, [], 'in no exception raised against the server');
  t.same(stub.fakeTokenLeaks, [], 'nor against the stub');
  t.same(srv.clientRepr, { repr: `S3EdgeClient(base_url='${server.url}')`, tokenInRepr: false });
  t.notOk(py.stdout.includes(user.token) || py.stderr.includes(user.token), "nor in the script's output");
});

t.test('what the Python calls left, seen by the TypeScript client', async (t) => {
  const { assets } = await user.client.listAssets({ limit: 200 });
  t.same(assets.map((a) => a.fileName).sort(), ['linked.txt', 'object.txt', 'pipe.bin', 'report-python.bin', 'résumé 📄.txt']);
  t.same(await user.client.listAccessKeys('py-client-bucket'), []);
  t.same((await user.client.listApiKeys()).map((k) => k.name).sort(), ['', 'python rate limit']);
  t.same(await user.client.listProjects(), []);
  const downloaded = await user.client.download(srv.uploadPath.id);
  t.equal(downloaded.body.length, srv.uploadPath.expectedSize);
});

t.test("docs/API.md's Python quick start runs as written", async (t) => {
  const page = await readFile(join(ROOT, 'docs', 'API.md'), 'utf8');
  const section = page.slice(page.indexOf('\n## The Python client'));
  const block = codeBlocksOf(section).find((b) => b.lang === 'python');
  if (!t.ok(block, 'the section has a python block')) return;
  const home = tempDir(t);
  await writeFile(join(home, 'logo.png'), Buffer.from('89504e470d0a1a0a', 'hex'));
  const script = block!.body.replaceAll('http://127.0.0.1:9000', server.url);
  const r = await run('python3', ['-'], { env: pythonEnv({ S3EDGE_TOKEN: user.token }), cwd: home, input: script, timeoutMs: 60_000 });
  t.equal(r.code, 0, describeRun('the quick start', r));
  t.match(r.stdout, /logo\.png/, 'it printed what it uploaded');
});
