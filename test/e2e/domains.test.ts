// The domain reseller over a real socket (docs/API.md "Domains"), with a loopback RDAP server standing in
// for the registries (test/helpers/rdap-fixture.ts): the bootstrap pointing at it is fetched with the
// admin CLI's refresh, as an operator would. Catalogue and CLI price changes, TLD search, availability
// for registered, available, reserved, sold, premium, slow, rate-limited and failing names, caching,
// IDN and public-suffix queries, invalid queries, scopes and the per-key, per-endpoint rate limits, and the
// address policy every registry request (and the CLI refresh) goes through.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiUser } from '../helpers/api.js';
import { bootstrapJson, startRdapFixture } from '../helpers/rdap-fixture.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-data.js';
import type { DomainResult, Tld, TldMatch } from '../../src/client/index.js';

const fixture = await startRdapFixture();
t.teardown(() => fixture.close());
// Every popular TLD's registry is the fixture (co.uk and com.ng fall back to uk and ng).
const RDAP_TLDS = ['com', 'net', 'org', 'io', 'ai', 'app', 'dev', 'co', 'xyz', 'ng', 'cv', 'uk', 'de', 'me', 'online', 'store', 'tech', 'info'];
fixture.serve('/bootstrap.json', 200, JSON.stringify(bootstrapJson(RDAP_TLDS, fixture.baseUrl)), 'application/json');

const ENV = {
  S3EDGE_DOMAINS_RDAP_ALLOW_PRIVATE_ADDRESSES: 'true',
  S3EDGE_DOMAINS_RDAP_TIMEOUT_MS: '400',
  S3EDGE_DOMAINS_RDAP_SEARCH_DEADLINE_MS: '1500',
  S3EDGE_DOMAINS_RDAP_ERROR_CACHE_SECONDS: '1',
};

const server = await startServer({ env: ENV });
t.teardown(() => server.stop());
const refreshed = await server.cli(['rdap-bootstrap', 'refresh', '--url', `${fixture.origin}/bootstrap.json`]);
const alice = await apiUser(server, ['domains:read'], { name: 'alice' });

async function post(s: RunningServer, token: string, body: unknown): Promise<{ status: number; headers: Headers; json: Record<string, unknown> }> {
  const res = await fetch(`${s.url}/api/v3/domains/search`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, unknown> };
}

async function get(s: RunningServer, token: string, path: string): Promise<{ status: number; headers: Headers; json: Record<string, unknown> }> {
  const res = await fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, unknown> };
}

async function one(query: string): Promise<DomainResult> {
  const found = await alice.client.searchDomains(query);
  return found.results[0] as DomainResult;
}

t.test('the bootstrap is refreshed from the CLI and used by the running server', async (t) => {
  t.equal(refreshed.code, 0, refreshed.stderr);
  t.match(refreshed.json, { services: 1, entries: RDAP_TLDS.length });
  t.match((await server.cli(['rdap-bootstrap', 'show'])).json, { source: 'refreshed copy in the data directory', services: 1 });
  const failed = await server.cli(['rdap-bootstrap', 'refresh', '--url', `${fixture.origin}/missing.json`]);
  t.equal(failed.code, 1, 'a failed refresh is a failed command');
  t.match(failed.stderr, /not refreshed/);
  t.match((await server.cli(['rdap-bootstrap', 'show'])).json, { source: 'refreshed copy in the data directory' }, 'and keeps the copy it had');
});

t.test('the catalogue: prices in both currencies, the popular list, changes from the CLI seen at once', async (t) => {
  const tlds = await alice.client.tlds();
  t.ok(tlds.length >= 60, `${tlds.length} TLDs`);
  const com = tlds.find((x) => x.tld === '.com') as Tld;
  t.match(com, { extension: 'com', registerDollar: 10.98, registerNaira: 17019, renewDollar: 14.98, popular: true, popularRank: 1, bonusAmount: null });
  t.match(tlds.find((x) => x.tld === '.com.ng'), { registerDollar: 9.98, registerNaira: 7500 }, '.com.ng has a naira price of its own');
  t.match(tlds.find((x) => x.tld === '.de'), { restrictions: { requiresLocalPresence: true, text: /Germany/ } });
  const popular = await alice.client.popularTlds();
  t.same(popular.slice(0, 4).map((x) => x.tld), ['.com', '.net', '.org', '.io']);
  t.same(popular.map((x) => x.popularRank), popular.map((_, i) => i + 1), 'in their order');

  t.equal((await server.cli(['tlds', 'set', 'com', '--register', '11.49'])).code, 0);
  t.match((await alice.client.tlds()).find((x) => x.tld === '.com'), { registerDollar: 11.49, registerNaira: 17809.5, renewDollar: 14.98 }, 'a CLI price change, at once');
  t.equal((await server.cli(['exchange-rate', 'set', '1600'])).code, 0);
  t.match((await alice.client.tlds()).find((x) => x.tld === '.com'), { registerNaira: 18384 }, 'a new exchange rate, at once');
  t.equal((await server.cli(['exchange-rate', 'set', '1550.00'])).code, 0);
  t.equal((await server.cli(['tlds', 'popular', 'net,com'])).code, 0);
  t.same((await alice.client.popularTlds()).map((x) => x.tld), ['.net', '.com'], 'a new popular list');
  const bad = await server.cli(['tlds', 'set', 'com', '--register', '11.499']);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /--register must be an amount like 12\.99/);
  t.equal((await server.cli(['tlds', 'popular', 'com,net,org,io,ai,app,dev,co,xyz,ng,com.ng,cv,co.uk,uk,de,me,online,store,tech,info'])).code, 0);

  const exported = join(tempDir(t), 'prices.json');
  t.equal((await server.cli(['tlds', 'export', '--out', exported])).code, 0);
  const file = JSON.parse((await import('node:fs')).readFileSync(exported, 'utf8')) as { tlds: { tld: string; register: string }[] };
  t.match(file.tlds.find((x) => x.tld === 'com'), { register: '11.49' }, 'exported with the change');
  writeFileSync(exported, JSON.stringify({ version: 1, tlds: [{ tld: 'com', register: '10.98', renew: '14.98', transfer: '10.98', rdapNotFoundReliable: true }] }));
  t.match((await server.cli(['tlds', 'import', exported])).json, { imported: 1, popularListSet: false });
  t.match((await alice.client.tlds()).find((x) => x.tld === '.com'), { registerDollar: 10.98, popularRank: 1 }, 'imported, the popular list kept');
});

t.test('TLD search: exact first, then as a label, then by prefix; any form of an extension', async (t) => {
  const co = await alice.client.searchTlds('co');
  t.match(co[0], { tld: '.co', match: 'exact' });
  const labels = co.filter((x) => x.match === 'label').map((x) => x.tld);
  t.ok(labels.includes('.co.uk') && labels.includes('.com.co') && labels.includes('.co.za'), `co as a label: ${labels.join(' ')}`);
  t.ok(co.some((x: TldMatch) => x.tld === '.com' && x.match === 'prefix'), '.com by prefix');
  t.same(co.map((x) => x.match), [...co.map((x) => x.match)].sort((a, b) => ['exact', 'label', 'prefix'].indexOf(a) - ['exact', 'label', 'prefix'].indexOf(b)), 'grouped in that order');
  t.match(await alice.client.searchTlds('.IO'), [{ tld: '.io', match: 'exact' }]);
  t.match((await alice.client.searchTlds(' .co.uk '))[0], { tld: '.co.uk', match: 'exact' });
  t.match((await alice.client.searchTlds('онлайн'))[0], { tld: '.xn--80asehdb', match: 'exact' }, 'an IDN extension in Unicode');
  for (const bad of ['', 'a b', '.']) {
    const res = await get(server, alice.token, `/api/v3/domains/tlds/search?q=${encodeURIComponent(bad)}`);
    t.equal(res.status, 400, `q=${JSON.stringify(bad)}`);
    t.match(res.json, { success: false, code: 'invalid_request', message: /\S/ });
  }
});

t.test('availability from the registry: registered, available, unknown for every failure, cached', async (t) => {
  fixture.set('taken.com', { kind: 'registered' });
  fixture.set('free.com', { kind: 'available' });
  fixture.set('free.cv', { kind: 'available' });
  fixture.set('slow.com', { kind: 'slow' });
  fixture.set('busy.com', { kind: 'rate-limited' });
  fixture.set('broken.com', { kind: 'server-error' });

  t.match(await one('taken.com'), { domain: 'taken.com', available: false, status: 'registered', purchaseType: 'unavailable', provider: 'rdap', checkedBy: fixture.origin, cached: false });
  const free = await one('free.com');
  t.match(free, { available: true, status: 'available', purchaseType: 'standard', registerDollar: 10.98, registerNaira: 17019, renewDollar: 14.98, transferDollar: 10.98, minYears: 1, maxYears: 10, reason: null });
  t.ok(Date.parse(free.checkedAt) > 0, 'checkedAt is a time');
  const again = await one('free.com');
  t.match(again, { cached: true, checkedAt: free.checkedAt }, 'a repeat comes from the cache, with the time it was checked');
  t.equal(fixture.count('free.com'), 1, 'the registry was asked once');
  t.match(await one('free.cv'), { status: 'unknown', available: false, reason: 'not-found-unreliable' }, "a 404 from a registry whose 404 is not trusted");
  t.match(await one('slow.com'), { status: 'unknown', reason: 'timeout' }, 'a registry that does not answer in time');
  t.match(await one('busy.com'), { status: 'unknown', reason: 'rate-limited' });
  t.match(await one('broken.com'), { status: 'unknown', reason: 'server-error' });

  const concurrent = await Promise.all(Array.from({ length: 8 }, () => one('fresh.net')));
  t.ok(concurrent.every((r) => r.status === 'available'), 'eight lookups at once');
  t.equal(fixture.count('fresh.net'), 1, 'share one registry request');
});

t.test("the operator's list answers first: reserved, sold, premium", async (t) => {
  t.equal((await server.cli(['domain-names', 'add', 'Keep.COM', '--status', 'reserved'])).code, 0);
  t.equal((await server.cli(['domain-names', 'add', 'sold.com', '--status', 'sold'])).code, 0);
  t.equal((await server.cli(['domain-names', 'add', 'gold.com', '--status', 'premium', '--price', '2500.00'])).code, 0);
  fixture.set('keep.com', { kind: 'available' });
  t.match(await one('keep.com'), { status: 'reserved', available: false, purchaseType: 'unavailable', provider: 'local', checkedBy: null });
  t.match(await one('sold.com'), { status: 'registered', available: false, provider: 'local' });
  t.match(await one('gold.com'), { status: 'available', available: true, purchaseType: 'premium', registerDollar: 2500, registerNaira: 3875000, renewDollar: 14.98, bonusAmount: null });
  t.equal(fixture.count('keep.com'), 0, 'the registry was not asked');
  const bad = await server.cli(['domain-names', 'add', 'gold.nosuchtld', '--status', 'reserved']);
  t.equal(bad.code, 1);
  t.equal((await server.cli(['domain-names', 'remove', 'keep.com'])).code, 0);
  t.match(await one('keep.com'), { status: 'available', provider: 'rdap' }, 'off the list, the registry answers');
});

t.test('queries as people type them: URLs, case, IDN, public suffixes, bare labels', async (t) => {
  fixture.set('example.co.uk', { kind: 'registered' });
  const pasted = await alice.client.searchDomains('HTTPS://Shop.Example.co.uk:8443/cart?x=1#top');
  t.match(pasted, { query: 'example.co.uk', kind: 'domain', results: [{ domain: 'example.co.uk', tld: '.co.uk', status: 'registered' }] });
  const idn = await one('Bücher.com.');
  t.match(idn, { domain: 'xn--bcher-kva.com', domainUnicode: 'bücher.com' }, 'punycode and Unicode');
  t.equal(fixture.count('xn--bcher-kva.com'), 1, 'the registry is asked for the punycode name');

  const label = await alice.client.searchDomains('  Acme ');
  t.equal(label.kind, 'label');
  t.same(label.results.map((r) => r.domain), (await alice.client.popularTlds()).map((x) => `acme${x.tld}`), 'one result per popular TLD, in order');

  for (const [query, message] of [
    ['', /Type a domain name/],
    ['-bad-.com', /hyphen/i],
    [`${'a'.repeat(64)}.com`, /63/],
    ['foo_bar.com', /letters, digits/i],
    ['example.notarealtld', /not a domain we can look up/],
    ['example.museum', /We do not sell \.museum names/],
    ['co.uk', /extension, not a domain name/],
    ['192.168.0.1', /IP address/i],
  ] as const) {
    const res = await post(server, alice.token, { query });
    t.equal(res.status, 400, `${JSON.stringify(query)}: 400`);
    t.match(res.json, { success: false, code: 'invalid_request', message }, `${JSON.stringify(query)}: says what is wrong`);
  }
  t.equal((await post(server, alice.token, { nope: 1 })).status, 400, 'no query field');
});

t.test('scopes and rate limits: per API key, per endpoint, with the RateLimit headers', async (t) => {
  const bob = await apiUser(server, ['domains:read'], { name: 'bob' });
  const carol = await apiUser(server, ['domains:read'], { name: 'carol' });
  const nosy = await apiUser(server, ['assets:read'], { name: 'nosy' });
  t.match(await get(server, nosy.token, '/api/v3/domains/tlds'), { status: 403, json: { success: false, code: 'forbidden' } }, 'a key without domains:read');

  fixture.set('limit.com', { kind: 'available' });
  const first = await post(server, bob.token, { query: 'limit.com' });
  t.equal(first.headers.get('ratelimit-limit'), '30');
  t.equal(first.headers.get('ratelimit-remaining'), '29');
  t.ok(Number(first.headers.get('ratelimit-reset')) > 0, 'RateLimit-Reset in seconds');
  for (let i = 2; i <= 30; i++) {
    const res = await post(server, bob.token, { query: 'limit.com' });
    if (res.status !== 200) t.fail(`search ${i} answered ${res.status}`);
  }
  const over = await post(server, bob.token, { query: 'limit.com' });
  t.equal(over.status, 429, 'the 31st search in a minute');
  t.match(over.json, { success: false, code: 'rate_limited', message: /Too many requests/ });
  t.ok(Number(over.headers.get('retry-after')) > 0, `Retry-After: ${over.headers.get('retry-after')}`);
  t.equal(over.headers.get('ratelimit-remaining'), '0');
  t.equal((await post(server, carol.token, { query: 'limit.com' })).status, 200, 'another key is not affected');
  const tlds = await get(server, bob.token, '/api/v3/domains/tlds');
  t.equal(tlds.status, 200, 'another endpoint of the same key is counted apart');
  t.equal(tlds.headers.get('ratelimit-limit'), '60');
  t.equal((await get(server, bob.token, '/api/v3/domains/tlds/search?q=io')).headers.get('ratelimit-limit'), '30');
});

t.test('a limit resets after its window', async (t) => {
  const quick = await startServer({ env: { ...ENV, S3EDGE_DOMAINS_RATE_LIMITS_WINDOW_SECONDS: '2', S3EDGE_DOMAINS_RATE_LIMITS_TLD_SEARCH: '3' } });
  t.teardown(() => quick.stop());
  const dave = await apiUser(quick, ['domains:read'], { name: 'dave' });
  for (let i = 1; i <= 3; i++) t.equal((await get(quick, dave.token, '/api/v3/domains/tlds/search?q=io')).status, 200, `search ${i}`);
  const over = await get(quick, dave.token, '/api/v3/domains/tlds/search?q=io');
  t.equal(over.status, 429);
  const wait = Number(over.headers.get('retry-after'));
  t.ok(wait >= 1 && wait <= 2, `Retry-After ${wait} s, within the 2 s window`);
  await new Promise((r) => setTimeout(r, wait * 1000 + 100));
  t.equal((await get(quick, dave.token, '/api/v3/domains/tlds/search?q=io')).status, 200, 'after Retry-After, served again');
});

t.test('every registry request goes through the address policy: loopback is refused unless configured', async (t) => {
  // A server with the default policy, whose bootstrap names a loopback RDAP server.
  const dir = tempDir(t);
  const strict = await startServer({ env: { S3EDGE_DOMAINS_RDAP_BOOTSTRAP_FILE: fixture.writeBootstrap(join(dir, 'bootstrap.json'), ['com']) } });
  t.teardown(() => strict.stop());
  const erin = await apiUser(strict, ['domains:read'], { name: 'erin' });
  fixture.set('guarded.com', { kind: 'registered' });
  const res = await post(strict, erin.token, { query: 'guarded.com' });
  t.match(res.json, { success: true, results: [{ status: 'unknown', reason: 'address-refused', available: false }] });
  t.equal(fixture.count('guarded.com'), 0, 'no request reached the loopback server');
  const refresh = await strict.cli(['rdap-bootstrap', 'refresh', '--url', `${fixture.origin}/bootstrap.json`]);
  t.equal(refresh.code, 1, 'the CLI refresh goes through the same policy');
  t.match(refresh.stderr, /not refreshed: .*127\.0\.0\.1/);
});
