// Projects and hostnames end to end (docs/API.md "Projects and hostnames"): the compiled server on a real
// socket, a loopback DNS server (test/helpers/dns-fixture.ts) standing in for users' DNS hosts through
// edge.dnsServers, the typed client, raw requests for bad bodies, and the admin CLI. Covers ownership
// (another user's project is 404, a taken hostname 409), input checks naming the field, verification
// by DNS and by the operator, origins (the address policy at set time, buckets of the owner only),
// scopes, asset linking and the project filters; ends with the leak scan.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import type { Hostname, Project } from '../../src/client/index.js';
import { apiClient, apiUser, refused, PROVIDER_NAMES, query, ResponseRecorder, type ApiUser } from '../helpers/api.js';
import { startDnsFixture } from '../helpers/dns-fixture.js';
import { startServer } from '../helpers/server.js';

const recorder = new ResponseRecorder();
const dns = await startDnsFixture();
t.teardown(() => dns.close());
const server = await startServer({ env: { S3EDGE_EDGE_DNS_SERVERS: dns.server } });
t.teardown(() => server.stop());

const ALL = ['projects:read', 'projects:write', 'assets:read', 'assets:write'];
// Set up side by side: each admin command is a process of its own.
const [alice, bob] = await Promise.all([
  apiUser(server, [...ALL, 'api-keys:manage'], { name: 'alice', recorder }),
  apiUser(server, ALL, { name: 'bob', recorder }),
]);
await Promise.all([
  server.admin(['buckets', 'create', 'alice-site', '--user', 'alice']),
  server.admin(['buckets', 'create', 'bob-site', '--user', 'bob']),
]);
// Alice's narrower keys, made by her own key (subsets of its scopes).
const aliceReader = apiClient(server, (await alice.client.createApiKey({ scopes: ['projects:read'] })).token, recorder);
const aliceAssetsOnly = apiClient(server, (await alice.client.createApiKey({ scopes: ['assets:read', 'assets:write'] })).token, recorder);

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** A JSON request with any body (the typed client only sends well-formed ones). */
async function send(u: ApiUser, method: string, path: string, body: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await u.client.raw(method, path, { body, headers: { 'content-type': 'application/json' } });
  return { status: res.status, json: JSON.parse(res.body.toString('utf8')) as Record<string, unknown> };
}

let website: Project;
let app: Hostname;

t.test('projects: create, list, get; names are checked and unique per user', async (t) => {
  website = await alice.client.createProject('Website');
  t.match(website, { id: /^[0-9a-f]{32}$/, name: 'Website', createdAt: ISO });
  t.same(Object.keys(website).sort(), ['createdAt', 'id', 'name']);
  t.same(await alice.client.listProjects(), [website]);
  t.same(await alice.client.project(website.id), website);
  t.same(await bob.client.listProjects(), [], "bob sees none of alice's projects");

  await refused(t, alice.client.createProject('Website'), 409, 'project_exists', /already have a project named 'Website'/, 'the same name again');
  t.ok(await bob.client.createProject('Website'), 'another user may use the same name');
  await refused(t, alice.client.createProject('  '), 400, 'invalid_request', /^body\/name must be a non-empty name/, 'a blank name');
  await refused(t, alice.client.createProject('x'.repeat(101)), 400, 'invalid_request', /body\/name must be at most 100 characters/, 'a long name');
  await refused(t, alice.client.createProject('a\u0007b'), 400, 'invalid_request', /body\/name must not contain control/, 'a control character');
  const bad = await send(alice, 'POST', '/api/v3/projects', '{"name":"x","extra":1}');
  t.match(bad, { status: 400, json: { success: false, code: 'invalid_request', message: /unknown field 'extra'/ } }, 'unknown fields are refused');
  t.match(await send(alice, 'POST', '/api/v3/projects', '{"name":'), { status: 400, json: { code: 'invalid_request' } }, 'malformed JSON');
});

t.test('deployments: created and listed under their project', async (t) => {
  const first = await alice.client.createDeployment(website.id, 'v1');
  const second = await alice.client.createDeployment(website.id, 'v2');
  t.match(first, { id: /^[0-9a-f]{32}$/, projectId: website.id, name: 'v1', createdAt: ISO });
  t.same((await alice.client.listDeployments(website.id)).map((d) => d.id).sort(), [first.id, second.id].sort());
  await refused(t, alice.client.createDeployment(website.id, ''), 400, 'invalid_request', /body\/name/, 'a blank deployment name');
});

t.test('hostnames: added with the TXT record to publish, unverified until DNS has it', async (t) => {
  app = await alice.client.addHostname(website.id, { hostname: 'App.Example.com.' });
  t.same(Object.keys(app).sort(), ['createdAt', 'hostname', 'id', 'origin', 'projectId', 'rules', 'updatedAt', 'verification', 'verified', 'verifiedAt', 'verifiedBy']);
  t.match(app, { hostname: 'app.example.com', projectId: website.id, origin: null, verified: false, verifiedAt: null, verifiedBy: null, createdAt: ISO });
  t.same(app.rules, { allowIps: [], blockIps: [], blockCountries: [], allowedMethods: [], maxBodyBytes: null, rateLimit: null }, 'no rules');
  t.match(app.verification, { name: '_s3edge-challenge.app.example.com', type: 'TXT', value: /^s3edge-verify=[0-9a-f]{32}$/ });
  t.same(await alice.client.listHostnames(website.id), [app]);
  t.same(await alice.client.hostname(website.id, app.id), app);
  const record = app.verification;

  await refused(t, alice.client.verifyHostname(website.id, app.id), 409, 'verification_failed',
    /^No TXT record found at _s3edge-challenge\.app\.example\.com: publish TXT _s3edge-challenge\.app\.example\.com with the value s3edge-verify=[0-9a-f]{32}/, 'before the record exists');
  t.ok(dns.asked(record.name) >= 1, 'the lookup went to the DNS server of edge.dnsServers');
  dns.setTxt(record.name, ['v=spf1 -all']);
  await refused(t, alice.client.verifyHostname(website.id, app.id), 409, 'verification_failed', /^Found TXT records that are not the verification record \("v=spf1 -all"\)/, 'an unrelated TXT record');
  dns.setTxt(record.name, ['s3edge-verify=0123456789abcdef0123456789abcdef']);
  await refused(t, alice.client.verifyHostname(website.id, app.id), 409, 'verification_failed', /^Found a verification record with another token/, 'another token');
  dns.fail(record.name);
  await refused(t, alice.client.verifyHostname(website.id, app.id), 409, 'verification_failed', /DNS lookup of _s3edge-challenge\.app\.example\.com failed \(ESERVFAIL\); try again later/, 'DNS failing');
  t.equal((await alice.client.hostname(website.id, app.id)).verified, false, 'still unverified');

  dns.setTxt(record.name, ['v=spf1 -all', record.value]);
  const verified = await alice.client.verifyHostname(website.id, app.id);
  t.match(verified, { id: app.id, verified: true, verifiedBy: 'dns', verifiedAt: ISO });
  t.same(query(server, 'SELECT verified_by FROM project_hostnames WHERE id = ?', app.id), [{ verified_by: 'dns' }], 'stored');
  dns.remove(record.name);
  t.match(await alice.client.verifyHostname(website.id, app.id), { verified: true, verifiedBy: 'dns' }, 'a verified hostname stays verified');
  app = verified;
});

t.test('a taken hostname is 409 for anyone; another user\'s project is 404 on every route', async (t) => {
  const bobs = await bob.client.createProject('Shop');
  for (const typed of ['app.example.com', 'APP.EXAMPLE.COM', 'app.example.com.']) {
    await refused(t, bob.client.addHostname(bobs.id, { hostname: typed }), 409, 'hostname_taken', /app\.example\.com is already used by a project/, `bob adds ${typed}`);
  }
  await refused(t, alice.client.addHostname(website.id, { hostname: 'app.example.com' }), 409, 'hostname_taken', /already used/, 'alice adds it twice');

  const notFound = /not found/;
  const h = app.id;
  await refused(t, bob.client.project(website.id), 404, 'not_found', notFound, 'bob gets alice\'s project');
  await refused(t, bob.client.listHostnames(website.id), 404, 'not_found', notFound, 'bob lists its hostnames');
  await refused(t, bob.client.listDeployments(website.id), 404, 'not_found', notFound, 'bob lists its deployments');
  await refused(t, bob.client.createDeployment(website.id, 'evil'), 404, 'not_found', notFound, 'bob adds a deployment');
  await refused(t, bob.client.addHostname(website.id, { hostname: 'evil.example.com' }), 404, 'not_found', notFound, 'bob adds a hostname to it');
  await refused(t, bob.client.hostname(website.id, h), 404, 'not_found', notFound, 'bob gets the hostname');
  await refused(t, bob.client.setOrigin(website.id, h, { kind: 'url', url: 'https://evil.example.net' }), 404, 'not_found', notFound, 'bob sets its origin');
  await refused(t, bob.client.setRules(website.id, h, {}), 404, 'not_found', notFound, 'bob sets its rules');
  await refused(t, bob.client.verifyHostname(website.id, h), 404, 'not_found', notFound, 'bob verifies it');
  await refused(t, bob.client.purgeHostname(website.id, h), 404, 'not_found', notFound, 'bob purges it');
  await refused(t, bob.client.removeHostname(website.id, h), 404, 'not_found', notFound, 'bob removes it');
  await refused(t, bob.client.deleteProject(website.id), 404, 'not_found', notFound, 'bob deletes the project');
  // Through his own project's path, alice's hostname is no more his.
  await refused(t, bob.client.hostname(bobs.id, h), 404, 'not_found', notFound, 'alice\'s hostname under bob\'s project');
  await refused(t, bob.client.removeHostname(bobs.id, h), 404, 'not_found', notFound, 'removed under bob\'s project');
  await refused(t, bob.client.project('0'.repeat(32)), 404, 'not_found', notFound, 'a project that does not exist: the same answer');
  t.match(await alice.client.hostname(website.id, h), { hostname: 'app.example.com', verified: true, origin: null }, 'alice\'s hostname is untouched');
});

t.test('bad hostnames are 400 naming the field', async (t) => {
  const cases: [unknown, RegExp][] = [
    ['*.example.com', /^body\/hostname: .*wildcard hostnames are not supported/],
    ['https://www.example.com/', /^body\/hostname: .*is a URL/],
    ['www.example.com:8443', /^body\/hostname: .*has a port/],
    ['192.0.2.10', /^body\/hostname: .*is an IP address/],
    ['localhost', /^body\/hostname: .*single label/],
    ['co.uk', /^body\/hostname: .*is a domain extension/],
    ['intranet.local', /^body\/hostname: .*not a domain we can look up/],
    ['cdn.localhost', /^body\/hostname: /],
    [`${'a'.repeat(64)}.example.com`, /^body\/hostname: .*label of 64 characters/],
    ['', /^body\/hostname: give a hostname/],
  ];
  for (const [hostname, message] of cases) {
    const r = await send(alice, 'POST', `/api/v3/projects/${website.id}/hostnames`, JSON.stringify({ hostname }));
    t.equal(r.status, 400, `${JSON.stringify(hostname)}: 400`);
    t.match(r.json, { success: false, code: 'invalid_request', message }, `${JSON.stringify(hostname)}: says why`);
  }
  const typed = await send(alice, 'POST', `/api/v3/projects/${website.id}/hostnames`, '{"hostname":5}');
  t.match(typed, { status: 400, json: { code: 'invalid_request', message: /body\/hostname must be string/ } }, 'not a string');
  const extra = await send(alice, 'POST', `/api/v3/projects/${website.id}/hostnames`, '{"hostname":"x.example.com","verified":true}');
  t.match(extra, { status: 400, json: { message: /unknown field 'verified'/ } }, 'a hostname cannot be added verified');
  t.equal((await alice.client.listHostnames(website.id)).length, 1, 'nothing was added');
});

t.test('origins: URLs and buckets, checked at set time; the address policy refuses internal literals', async (t) => {
  const base = `/api/v3/projects/${website.id}/hostnames/${app.id}/origin`;
  const refusedOrigins: [unknown, RegExp][] = [
    [{ kind: 'url', url: 'http://169.254.169.254' }, /^body\/url: 169\.254\.169\.254 is a link-local address; an origin must be reachable on the public internet/],
    [{ kind: 'url', url: 'http://[::ffff:169.254.169.254]/' }, /link-local address/],
    [{ kind: 'url', url: 'http://127.0.0.1:8080' }, /^body\/url: 127\.0\.0\.1 is a loopback address/],
    [{ kind: 'url', url: 'http://10.0.0.7' }, /private address/],
    [{ kind: 'url', url: 'http://localhost:3000' }, /localhost is this machine/],
    [{ kind: 'url', url: 'https://origin.example.net/app' }, /^body\/url must be scheme, host and port only/],
    [{ kind: 'url', url: 'https://user:pw@origin.example.net' }, /^body\/url must not carry a user name/],
    [{ kind: 'url', url: 'ftp://origin.example.net' }, /^body\/url must start with http:\/\/ or https:\/\//],
    [{ kind: 'url', url: 'https://origin.example.net', preserveHost: 'yes' }, /^body\/preserveHost must be true or false/],
    [{ kind: 'carrier-pigeon' }, /^body\/kind must be 'url' or 'bucket'/],
    [{ kind: 'bucket', bucket: 'bob-site' }, /^body\/bucket: no bucket named 'bob-site' among the project owner's buckets/],
    [{ kind: 'bucket', bucket: 'no-such-bucket' }, /^body\/bucket: no bucket named 'no-such-bucket'/],
    [{ kind: 'bucket', bucket: 'alice-site', indexDocument: 'a/b.html' }, /^body\/indexDocument must be a file name without '\/'/],
    [{ kind: 'bucket', bucket: 'alice-site', errorDocument: 'e'.repeat(1025) }, /^body\/errorDocument is longer than 1024 bytes/],
    ['https://origin.example.net', /^body must be an object/],
  ];
  for (const [origin, message] of refusedOrigins) {
    const r = await send(alice, 'PUT', base, JSON.stringify(origin));
    t.equal(r.status, 400, `${JSON.stringify(origin).slice(0, 80)}: 400`);
    t.match(r.json, { success: false, code: 'invalid_request', message }, `${JSON.stringify(origin).slice(0, 80)}: says why`);
  }
  t.equal((await alice.client.hostname(website.id, app.id)).origin, null, 'nothing was set');

  const viaUrl = await alice.client.setOrigin(website.id, app.id, { kind: 'url', url: 'HTTPS://Origin.Example.NET:443/', preserveHost: true });
  t.same(viaUrl.origin, { kind: 'url', url: 'https://origin.example.net', preserveHost: true }, 'stored normalised');
  const viaBucket = await alice.client.setOrigin(website.id, app.id, { kind: 'bucket', bucket: 'alice-site', errorDocument: '404.html' });
  t.same(viaBucket.origin, { kind: 'bucket', bucket: 'alice-site', indexDocument: 'index.html', errorDocument: '404.html' }, 'the bucket by name, with defaults');
  const [row] = query<{ origin: string }>(server, 'SELECT origin FROM project_hostnames WHERE id = ?', app.id);
  const [bucketRow] = query<{ id: string }>(server, "SELECT id FROM buckets WHERE name = 'alice-site'");
  t.same(JSON.parse(row?.origin ?? 'null'), { kind: 'bucket', bucketId: bucketRow?.id, indexDocument: 'index.html', errorDocument: '404.html' }, 'stored as the bucket id');

  const withOrigin = await alice.client.addHostname(website.id, { hostname: 'www.example.com', origin: { kind: 'url', url: 'https://origin.example.net' } });
  t.same(withOrigin.origin, { kind: 'url', url: 'https://origin.example.net', preserveHost: false }, 'an origin given when adding');
  const badOnAdd = await send(alice, 'POST', `/api/v3/projects/${website.id}/hostnames`, JSON.stringify({ hostname: 'api.example.com', origin: { kind: 'url', url: 'http://169.254.169.254' } }));
  t.match(badOnAdd, { status: 400, json: { message: /^body\/origin\/url: 169\.254\.169\.254 is a link-local address/ } }, 'checked when adding too');
  t.same((await alice.client.listHostnames(website.id)).map((h) => h.hostname), ['app.example.com', 'www.example.com'], 'and nothing half-added');
});

t.test('rules: checked by the edge rules (field named), stored complete', async (t) => {
  const base = `/api/v3/projects/${website.id}/hostnames/${app.id}/rules`;
  const bad: [unknown, RegExp][] = [
    [{ blockIps: ['10.0.0.0/8', 'not-an-ip'] }, /^rules\.blockIps\[1\]: not an IP address or CIDR/],
    [{ blockCountries: ['USA'] }, /^rules\.blockCountries\[0\]: not a two-letter country code/],
    [{ rateLimit: { burst: 5 } }, /^rules\.rateLimit\.requestsPerSecond: required/],
    [{ maxBodyBytes: -1 }, /^rules\.maxBodyBytes: must be 0 to/],
    [{ colour: 'red' }, /^rules\.colour: unknown field/],
    [['GET'], /^rules: must be an object/],
  ];
  for (const [rules, message] of bad) {
    const r = await send(alice, 'PUT', base, JSON.stringify(rules));
    t.match(r, { status: 400, json: { success: false, code: 'invalid_request', message } }, `${JSON.stringify(rules)}: 400 naming the field`);
  }
  const onAdd = await send(alice, 'POST', `/api/v3/projects/${website.id}/hostnames`, JSON.stringify({ hostname: 'rules.example.com', rules: { allowedMethods: ['GET', 'TRACE()'] } }));
  t.match(onAdd, { status: 400, json: { message: /^rules\.allowedMethods\[1\]: not an HTTP method name/ } }, 'checked when adding too');
  t.same((await alice.client.hostname(website.id, app.id)).rules.blockIps, [], 'nothing was set');

  const set = await alice.client.setRules(website.id, app.id, { blockCountries: ['xx'], allowedMethods: ['get', 'HEAD'], rateLimit: { requestsPerSecond: 5 } });
  t.same(set.rules, {
    allowIps: [], blockIps: [], blockCountries: ['XX'], allowedMethods: ['GET', 'HEAD'], maxBodyBytes: null,
    rateLimit: { requestsPerSecond: 5, burst: 5, banAfter: 0, banWindowSeconds: 60, banSeconds: 60, maxBanSeconds: 3600 },
  }, 'normalised, with the rate limit defaults');
  t.same((await alice.client.setRules(website.id, app.id, {})).rules, { allowIps: [], blockIps: [], blockCountries: [], allowedMethods: [], maxBodyBytes: null, rateLimit: null }, '{} clears them');
});

t.test('scopes: projects:read reads, projects:write changes; other keys get 403', async (t) => {
  t.same((await aliceReader.listProjects()).map((p) => p.id), [website.id], 'projects:read lists');
  t.equal((await aliceReader.hostname(website.id, app.id)).id, app.id, 'and reads hostnames');
  const needsWrite = /lacks the 'projects:write' scope/;
  await refused(t, aliceReader.createProject('nope'), 403, 'forbidden', needsWrite, 'create with projects:read');
  await refused(t, aliceReader.addHostname(website.id, { hostname: 'ro.example.com' }), 403, 'forbidden', needsWrite, 'add a hostname');
  await refused(t, aliceReader.setOrigin(website.id, app.id, { kind: 'url', url: 'https://x.example.net' }), 403, 'forbidden', needsWrite, 'set an origin');
  await refused(t, aliceReader.verifyHostname(website.id, app.id), 403, 'forbidden', needsWrite, 'verify');
  await refused(t, aliceReader.purgeHostname(website.id, app.id), 403, 'forbidden', needsWrite, 'purge');
  await refused(t, aliceReader.deleteProject(website.id), 403, 'forbidden', needsWrite, 'delete');
  // Every route, with a key of other scopes: 403 naming the one it lacks, decided before any body is read.
  const p = `/api/v3/projects/${website.id}`;
  const h = `${p}/hostnames/${app.id}`;
  const routes: [string, string, string][] = [
    ['GET', '/api/v3/projects', 'read'], ['POST', '/api/v3/projects', 'write'], ['GET', p, 'read'], ['DELETE', p, 'write'],
    ['GET', `${p}/deployments`, 'read'], ['POST', `${p}/deployments`, 'write'], ['GET', `${p}/hostnames`, 'read'], ['POST', `${p}/hostnames`, 'write'],
    ['GET', h, 'read'], ['DELETE', h, 'write'], ['PUT', `${h}/origin`, 'write'], ['PUT', `${h}/rules`, 'write'], ['POST', `${h}/verify`, 'write'],
    ['POST', `${h}/purge`, 'write'],
  ];
  for (const [method, path, scope] of routes) {
    // A malformed body where one may go: the scope check comes first.
    const r = await aliceAssetsOnly.raw(method, path, method === 'GET' || method === 'DELETE' ? {} : { body: '{', headers: { 'content-type': 'application/json' } });
    t.equal(r.status, 403, `${method} ${path}: 403`);
    t.match(JSON.parse(r.body.toString('utf8')), { success: false, code: 'forbidden', message: `lacks the 'projects:${scope}' scope` });
  }
  const anonymous = await fetch(`${server.url}/api/v3/projects`);
  t.equal(anonymous.status, 401, 'no token: 401');
});

t.test('verification is rate limited per API key: DNS lookups are not free', async (t) => {
  const pending = await alice.client.addHostname(website.id, { hostname: 'limits.example.com' });
  const key = apiClient(server, (await alice.client.createApiKey({ scopes: ['projects:write'] })).token, recorder);
  const statuses: number[] = [];
  for (let i = 0; i < 31; i++) statuses.push((await key.raw('POST', `/api/v3/projects/${website.id}/hostnames/${pending.id}/verify`)).status);
  t.same(statuses, [...Array<number>(30).fill(409), 429], '30 attempts a minute, then 429');
  await refused(t, key.verifyHostname(website.id, pending.id), 429, 'rate_limited', /Too many requests/, 'past the limit');
  await refused(t, alice.client.verifyHostname(website.id, pending.id), 409, 'verification_failed', /No TXT record/, 'another key has its own count');
  await alice.client.removeHostname(website.id, pending.id);
});

t.test('purge and remove: a hostname stops being served and leaves its project', async (t) => {
  t.equal(await alice.client.purgeHostname(website.id, app.id), 0, 'nothing was cached for it');
  const temp = await alice.client.addHostname(website.id, { hostname: 'temp.example.com' });
  t.equal(await alice.client.removeHostname(website.id, temp.id), 'Hostname removed');
  await refused(t, alice.client.hostname(website.id, temp.id), 404, 'not_found', /Hostname not found/, 'gone');
  t.ok(await bob.client.addHostname((await bob.client.listProjects())[0]?.id ?? '', { hostname: 'temp.example.com' }), 'and free for anyone again');
});

t.test('asset uploads link only the uploader\'s projects; list and summary filter by project', async (t) => {
  const bobsProject = (await bob.client.listProjects())[0] as Project;
  const [deployment] = await alice.client.listDeployments(website.id);
  const bobsDeployment = await bob.client.createDeployment(bobsProject.id, 'b1');
  const before = query<{ n: number }>(server, 'SELECT count(*) AS n FROM assets')[0]?.n;
  await refused(t, alice.client.upload({ file: Buffer.from('x'), fileName: 'x.txt', projectId: bobsProject.id }), 400, 'invalid_request', /projectId does not name one of your projects/, "bob's project");
  await refused(t, alice.client.upload({ file: Buffer.from('x'), fileName: 'x.txt', projectId: 'no-such-project' }), 400, 'invalid_request', /projectId does not name one of your projects/, 'an unknown project');
  await refused(t, alice.client.upload({ file: Buffer.from('x'), fileName: 'x.txt', projectId: website.id, deploymentId: bobsDeployment.id }), 400, 'invalid_request', /deploymentId does not name a deployment of your projects/, "bob's deployment");
  const otherOwn = await alice.client.createProject('Docs');
  await refused(t, alice.client.upload({ file: Buffer.from('x'), fileName: 'x.txt', projectId: otherOwn.id, deploymentId: deployment?.id ?? '' }), 400, 'invalid_request', /deployment of another project than projectId/, 'a deployment of another project');
  t.equal(query<{ n: number }>(server, 'SELECT count(*) AS n FROM assets')[0]?.n, before, 'nothing stored');

  const linked = await alice.client.upload({ file: Buffer.from('linked'), fileName: 'linked.txt', projectId: website.id, deploymentId: deployment?.id ?? '' });
  t.match(linked, { projectId: website.id, deploymentId: deployment?.id });
  const byDeployment = await alice.client.upload({ file: Buffer.from('dep only'), fileName: 'dep.txt', deploymentId: deployment?.id ?? '' });
  t.match(byDeployment, { projectId: website.id, deploymentId: deployment?.id }, 'a deployment links its project');
  const loose = await alice.client.upload({ file: Buffer.from('loose'), fileName: 'loose.txt' });
  t.match(loose, { projectId: null, deploymentId: null });

  t.same((await alice.client.listAssets({ projectId: website.id })).assets.map((a) => a.id).sort(), [linked.id, byDeployment.id].sort(), 'the list filter');
  t.same((await alice.client.listAssets({ projectId: otherOwn.id })).assets, [], 'a project without assets: empty');
  t.equal((await alice.client.listAssets()).pagination.total, 3, 'no filter: every asset');
  await refused(t, alice.client.listAssets({ projectId: bobsProject.id }), 404, 'not_found', /Project not found/, "the list filtered by bob's project");
  await refused(t, alice.client.listAssets({ projectId: 'nope' }), 404, 'not_found', /Project not found/, 'by an unknown project');

  const summary = await alice.client.summary(website.id);
  t.match(summary, { totalFiles: 2, storageBytes: 'linked'.length + 'dep only'.length }, 'the summary filter');
  t.same(summary.recentAssets.map((a) => a.id).sort(), [linked.id, byDeployment.id].sort());
  t.match(await alice.client.summary(), { totalFiles: 3 }, 'no filter: the account');
  await refused(t, alice.client.summary(bobsProject.id), 404, 'not_found', /Project not found/, "the summary of bob's project");
});

t.test('the admin CLI: projects and hostnames, verification by DNS or by the operator', async (t) => {
  const created = await server.admin(['projects', 'create', 'blog', '--user', 'alice']);
  t.match(created, { id: /^[0-9a-f]{32}$/, name: 'blog', user: 'alice', hostnames: 0, deployments: 0, createdAt: ISO });
  const added = await server.admin(['hostnames', 'add', 'Blog.Example.org', '--user', 'alice', '--project', 'blog']);
  t.match(added, { hostname: 'blog.example.org', user: 'alice', project: 'blog', verified: false, verificationName: '_s3edge-challenge.blog.example.org', verificationValue: /^s3edge-verify=[0-9a-f]{32}$/ });

  const dnsCheck = await server.cli(['hostnames', 'verify', 'blog.example.org']);
  t.equal(dnsCheck.code, 1, 'a DNS check without the record fails the command');
  t.match(dnsCheck.json, { error: { code: 'VerificationFailed', message: /No TXT record found at _s3edge-challenge\.blog\.example\.org/ } });
  const byOperator = await server.admin(['hostnames', 'verify', 'blog.example.org', '--operator']);
  t.match(byOperator, { hostname: 'blog.example.org', verified: true, verifiedBy: 'operator' });
  const origin = await server.admin(['hostnames', 'set-origin', 'blog.example.org', '--url', 'https://origin.example.net:8443', '--preserve-host']);
  t.match(origin, { origin: 'https://origin.example.net:8443 (preserve host)' });
  const rules = await server.admin(['hostnames', 'set-rules', 'blog.example.org', '--rules', '{"blockCountries":["xx"],"maxBodyBytes":1024}']);
  t.match(rules, { hostname: 'blog.example.org', rules: '{"blockCountries":["XX"],"maxBodyBytes":1024}' }, 'set-rules --rules');
  const rulesFile = join(server.tmpRoot, 'rules.json');
  writeFileSync(rulesFile, JSON.stringify({ allowedMethods: ['GET'] }));
  t.match(await server.admin(['hostnames', 'set-rules', 'blog.example.org', '--rules-file', rulesFile]), { rules: '{"allowedMethods":["GET"]}' }, 'set-rules --rules-file');

  // Refusals change nothing: side by side.
  const refusals: [string[], string, RegExp][] = [
    [['hostnames', 'set-origin', 'blog.example.org', '--url', 'http://169.254.169.254'], 'InvalidArgument', /^url: 169\.254\.169\.254 is a link-local address/],
    [['hostnames', 'set-origin', 'blog.example.org', '--url', 'https://a.example.net', '--bucket', 'x'], 'InvalidArgument', /give --url URL or --bucket NAME \(one of them\)/],
    [['hostnames', 'set-origin', 'blog.example.org', '--bucket', 'bob-site'], 'InvalidArgument', /no bucket named 'bob-site' among the project owner's buckets/],
    [['hostnames', 'set-rules', 'blog.example.org', '--rules', '{nope'], 'InvalidRules', /the rules are not JSON/],
    [['hostnames', 'set-rules', 'blog.example.org', '--rules', '{"blockIps":["x"]}'], 'InvalidArgument', /^rules\.blockIps\[0\]: not an IP address or CIDR/],
    [['hostnames', 'add', 'temp.example.com', '--user', 'alice', '--project', 'blog'], 'HostnameTaken', /temp\.example\.com is already used/],
    [['hostnames', 'add', '*.example.org', '--user', 'alice', '--project', 'blog'], 'InvalidArgument', /wildcard hostnames are not supported/],
    [['hostnames', 'add', 'x.example.org', '--user', 'alice', '--project', 'nope'], 'NoSuchProject', /user 'alice' has no project 'nope'/],
    [['hostnames', 'verify', 'unknown.example.org', '--operator'], 'NoSuchHostname', /No project hostname 'unknown\.example\.org'/],
  ];
  const results = await Promise.all(refusals.map(([args]) => server.cli(args)));
  refusals.forEach(([args, code, message], i) => {
    t.match(results[i], { code: 1, json: { error: { code, message } } }, args.join(' '));
  });

  const [listed, all, projects] = await Promise.all([
    server.cli(['hostnames', 'list', '--user', 'alice', '--project', 'blog']),
    server.cli(['hostnames', 'list']),
    server.cli(['projects', 'list', '--user', 'alice']),
  ]);
  t.same(listed.json, [{
    hostname: 'blog.example.org', id: added['id'], user: 'alice', project: 'blog', verified: true, verifiedBy: 'operator',
    origin: 'https://origin.example.net:8443 (preserve host)', rules: '{"allowedMethods":["GET"]}', verificationName: '_s3edge-challenge.blog.example.org', verificationValue: added['verificationValue'],
  }], 'hostnames list --json');
  t.same((all.json as { hostname: string; user: string }[]).map((h) => `${h.user} ${h.hostname}`),
    ['alice app.example.com', 'alice blog.example.org', 'bob temp.example.com', 'alice www.example.com'], 'every hostname, by name');
  t.match(projects.json, [{ name: 'Website', hostnames: 2, deployments: 2 }, { name: 'Docs', hostnames: 0 }, { name: 'blog', user: 'alice', hostnames: 1 }]);

  // What the CLI did is what the API shows.
  const blog = (await alice.client.listProjects()).find((p) => p.name === 'blog') as Project;
  t.match(await alice.client.listHostnames(blog.id), [
    { hostname: 'blog.example.org', verified: true, verifiedBy: 'operator', origin: { kind: 'url', url: 'https://origin.example.net:8443', preserveHost: true } },
  ]);

  t.match(await server.admin(['hostnames', 'remove', 'blog.example.org']), { removed: 'blog.example.org' });
  t.match(await server.admin(['projects', 'delete', 'blog', '--user', 'alice']), { deleted: true, name: 'blog' });
  await refused(t, alice.client.project(blog.id), 404, 'not_found', /Project not found/, 'deleted from the CLI');
  const help = await server.cli(['hostnames', '--help']);
  t.match(help.stdout, /s3edge hostnames verify HOSTNAME \[--operator\]/);
  t.match(help.stdout, /s3edge hostnames set-origin HOSTNAME \[--url URL\] \[--preserve-host\] \[--bucket NAME\] \[--index KEY\] \[--error-document KEY\]/);
});

t.test('deleting a project removes its hostnames and deployments; its assets stay, unlinked', async (t) => {
  const linked = (await alice.client.listAssets({ projectId: website.id })).assets.map((a) => a.id);
  t.equal(linked.length, 2);
  t.equal(await alice.client.deleteProject(website.id), 'Project deleted');
  await refused(t, alice.client.project(website.id), 404, 'not_found', /Project not found/, 'gone');
  t.same(query(server, 'SELECT hostname FROM project_hostnames WHERE project_id = ?', website.id), [], 'its hostnames went with it');
  t.same(query(server, 'SELECT id FROM deployments WHERE project_id = ?', website.id), [], 'and its deployments');
  const rows = query<{ project_id: string | null; deployment_id: string | null }>(server, `SELECT project_id, deployment_id FROM assets WHERE id IN (${linked.map(() => '?').join(',')})`, ...linked);
  t.same(rows, [{ project_id: null, deployment_id: null }, { project_id: null, deployment_id: null }], 'the assets are kept, unlinked');
  t.ok(await bob.client.addHostname((await bob.client.listProjects())[0]?.id ?? '', { hostname: 'app.example.com' }), 'its hostnames are free again');
});

t.test('no response leaks internal names', async (t) => {
  const bucketIds = query<{ id: string }>(server, 'SELECT id FROM buckets').map((r) => r.id);
  recorder.assertNoLeaks(t, [...PROVIDER_NAMES, ...bucketIds, server.dataDir]);
});
