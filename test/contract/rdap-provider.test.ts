// The RDAP provider against a real loopback RDAP server (test/helpers/rdap-fixture.ts), the server
// chosen through a bootstrap file as domains.rdap.bootstrapFile would give it. Clock injected for
// checkedAt, the cache TTLs and the breaker; the network timeouts are real.
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { BootstrapSource } from '../../src/domains/availability/bootstrap-source.js';
import { createRdapClient, RdapProvider, type RdapConfig } from '../../src/domains/availability/rdap.js';
import { domainObject, startRdapFixture, type RdapFixture } from '../helpers/rdap-fixture.js';
import { tempDir } from '../helpers/temp-data.js';

const CONFIG: RdapConfig = {
  timeoutMs: 2000,
  cacheSeconds: 60,
  errorCacheSeconds: 10,
  breakerFailures: 1000,
  breakerCooldownSeconds: 30,
  maxAnswerBytes: 64 * 1024,
};

interface Setup {
  f: RdapFixture;
  provider: RdapProvider;
  /** `now` moves both clocks; `wallJump` the wall clock alone (checkedAt), as NTP or `date -s` would. */
  clock: { now: number; wallJump: number };
  failures: string[];
}

async function setup(t: Test, config: Partial<RdapConfig> = {}, allowPrivateAddresses = true): Promise<Setup> {
  const f = await startRdapFixture();
  t.teardown(() => f.close());
  const file = f.writeBootstrap(join(tempDir(t), 'dns.json'), ['test', 'uk']);
  const merged = { ...CONFIG, ...config };
  const client = createRdapClient({ ...merged, allowPrivateAddresses });
  t.teardown(() => client.close());
  const clock = { now: 1_700_000_000_000, wallJump: 0 };
  const failures: string[] = [];
  const provider = new RdapProvider({
    bootstrap: new BootstrapSource({ file }),
    client,
    config: merged,
    now: () => clock.now + clock.wallJump,
    elapsed: () => clock.now,
    onFailure: (e) => failures.push(`${e.domain} ${e.reason}`),
  });
  return { f, provider, clock, failures };
}

const trusted = { notFoundMeansAvailable: true };
const untrusted = { notFoundMeansAvailable: false };

t.test('every status maps to an answer', async (t) => {
  const { f, provider, clock } = await setup(t);
  f.set('taken.test', { kind: 'registered' });
  f.set('free.test', { kind: 'available' });
  f.set('busy.test', { kind: 'rate-limited', retryAfterSeconds: 5 });
  f.set('broken.test', { kind: 'server-error' });
  f.set('down.test', { kind: 'server-error', status: 503 });
  f.set('garbage.test', { kind: 'garbage' });
  f.set('entity.test', { kind: 'garbage', body: JSON.stringify({ objectClassName: 'entity', handle: 'X' }) });
  f.set('wrong.test', { kind: 'wrong-name' });
  f.set('huge.test', { kind: 'oversize', bytes: 200_000 });
  f.set('moved.test', { kind: 'redirect', location: '/elsewhere/domain/moved.test' });
  f.serve('/elsewhere/domain/moved.test', 200, JSON.stringify(domainObject('moved.test')), 'application/rdap+json');
  f.set('swapped.test', { kind: 'redirect', location: '/rdap/domain/taken.test' });

  const server = f.origin;
  const checkedAt = clock.now;
  t.same(await provider.check('taken.test', 'test', trusted), { status: 'registered', source: 'rdap', server, cached: false, checkedAt });
  t.equal(f.lastHeaders('taken.test')?.accept, 'application/rdap+json');
  t.same(await provider.check('free.test', 'test', trusted), { status: 'available', source: 'rdap', server, cached: false, checkedAt });
  const rows: [string, string][] = [
    ['busy.test', 'rate-limited'],
    ['broken.test', 'server-error'],
    ['down.test', 'server-error'],
    ['garbage.test', 'bad-answer'],
    ['entity.test', 'bad-answer'],
    ['wrong.test', 'bad-answer'],
    ['huge.test', 'bad-answer'],
  ];
  for (const [name, reason] of rows) {
    t.match(await provider.check(name, 'test', trusted), { status: 'unknown', source: 'rdap', server, cached: false, reason }, name);
  }
  t.match(await provider.check('moved.test', 'test', trusted), { status: 'registered' }, 'a redirect is followed');
  t.match(await provider.check('swapped.test', 'test', trusted), { status: 'unknown', reason: 'bad-answer' }, 'to the object of the name asked');
});

t.test('a registry that cannot be reached (connection refused: no network, a server down): unknown/unreachable, checked by no one', async (t) => {
  const { f, provider, failures } = await setup(t);
  await f.close();
  const answer = await provider.check('anything.test', 'test', trusted);
  t.match(answer, { status: 'unknown', source: 'rdap', reason: 'unreachable', cached: false });
  t.equal(answer.server, undefined, 'no server is named: nothing answered (checkedBy null), not a registry error');
  t.same(failures, ['anything.test unreachable'], 'logged as such');
});

t.test('a 404 is available only where the TLD is trusted for it', async (t) => {
  const { f, provider } = await setup(t);
  t.match(await provider.check('free.test', 'test', untrusted), { status: 'unknown', reason: 'not-found-unreliable' });
  t.match(await provider.check('free.test', 'test', trusted), { status: 'available', cached: true }, 'one cached 404 serves both readings');
  t.equal(f.count('free.test'), 1);
});

t.test('the server comes from the bootstrap only: no entry, no request', async (t) => {
  const { f, provider } = await setup(t);
  t.match(await provider.check('example.com', 'com', trusted), { status: 'unknown', reason: 'no-rdap-server', cached: false });
  t.equal(f.total(), 0);
  // co.uk has no entry of its own: the uk entry's server is asked for the whole name.
  f.set('example.co.uk', { kind: 'registered' });
  t.match(await provider.check('example.co.uk', 'co.uk', trusted), { status: 'registered', server: f.origin });
  t.equal(f.count('example.co.uk'), 1);
  await t.rejects(provider.check('example.com', 'test', trusted), RangeError, 'a name outside its TLD is a caller bug');
  await t.rejects(provider.check('exa mple.test', 'test', trusted), RangeError);
});

t.test('a server that never answers: unknown/timeout, quickly', async (t) => {
  const { f, provider } = await setup(t, { timeoutMs: 200 });
  f.set('never.test', { kind: 'slow' });
  const started = Date.now();
  t.match(await provider.check('never.test', 'test', trusted), { status: 'unknown', reason: 'timeout' });
  t.ok(Date.now() - started < 10_000, 'returned (generous bound)');
});

t.test("the caller's deadline ends its wait, not the shared lookup", async (t) => {
  const { f, provider } = await setup(t);
  f.set('slow.test', { kind: 'slow', delayMs: 400 });
  const impatient = provider.check('slow.test', 'test', { ...trusted, signal: AbortSignal.timeout(50) });
  const patient = provider.check('slow.test', 'test', trusted);
  t.match(await impatient, { status: 'unknown', reason: 'timeout', cached: false });
  t.match(await patient, { status: 'registered', cached: false }, 'the other caller still gets the answer');
  t.equal(f.count('slow.test'), 1, 'one request for both');
  t.match(await provider.check('slow.test', 'test', trusted), { status: 'registered', cached: true });
  t.match(await provider.check('slow.test', 'test', { ...trusted, signal: AbortSignal.abort() }), { status: 'registered', cached: true }, 'a cached answer needs no time');
});

t.test('single flight: 10 concurrent checks of one name make one request', async (t) => {
  const { f, provider } = await setup(t);
  f.set('popular.test', { kind: 'slow', delayMs: 100 });
  const answers = await Promise.all(Array.from({ length: 10 }, () => provider.check('popular.test', 'test', trusted)));
  t.equal(f.count('popular.test'), 1);
  for (const a of answers) t.match(a, { status: 'registered', cached: false });
});

t.test('cache: answers reused for cacheSeconds (inclusive) with their original checkedAt, then asked again', async (t) => {
  const { f, provider, clock } = await setup(t);
  f.set('taken.test', { kind: 'registered' });
  const first = await provider.check('taken.test', 'test', trusted);
  const askedAt = clock.now;
  clock.now += 60_000;
  t.same(await provider.check('taken.test', 'test', trusted), { ...first, cached: true, checkedAt: askedAt });
  t.equal(f.count('taken.test'), 1);
  clock.now += 1;
  t.same(await provider.check('taken.test', 'test', trusted), { ...first, cached: false, checkedAt: clock.now });
  t.equal(f.count('taken.test'), 2);
});

t.test('a wall-clock step of an hour, back or forward, neither keeps nor drops a cached answer: its TTL is elapsed time', async (t) => {
  const { f, provider, clock } = await setup(t);
  f.set('taken.test', { kind: 'registered' });
  const first = await provider.check('taken.test', 'test', trusted);
  clock.wallJump = 3600_000;
  t.same(await provider.check('taken.test', 'test', trusted), { ...first, cached: true }, 'an hour forward: still cached, its checkedAt the same');
  clock.wallJump = -3600_000;
  clock.now += 60_001;
  const again = await provider.check('taken.test', 'test', trusted);
  t.match(again, { cached: false }, 'an hour back, and cacheSeconds elapsed: asked again');
  t.equal(again.checkedAt, clock.now - 3600_000, 'checkedAt is the wall clock\'s');
  t.equal(f.count('taken.test'), 2);
});

t.test('error cache: unknowns reused for errorCacheSeconds only', async (t) => {
  const { f, provider, clock, failures } = await setup(t);
  f.set('flaky.test', { kind: 'server-error' });
  t.match(await provider.check('flaky.test', 'test', trusted), { status: 'unknown', reason: 'server-error', cached: false });
  clock.now += 10_000;
  t.match(await provider.check('flaky.test', 'test', trusted), { status: 'unknown', reason: 'server-error', cached: true });
  t.equal(f.count('flaky.test'), 1);
  f.set('flaky.test', { kind: 'registered' });
  clock.now += 1;
  t.match(await provider.check('flaky.test', 'test', trusted), { status: 'registered', cached: false });
  t.equal(f.count('flaky.test'), 2);
  t.same(failures, ['flaky.test server-error'], 'the failure was reported once');
});

t.test('breaker: skipped after breakerFailures failures, asked again after the cooldown', async (t) => {
  const { f, provider, clock } = await setup(t, { breakerFailures: 3, breakerCooldownSeconds: 30 });
  for (const name of ['a.test', 'b.test', 'c.test']) {
    f.set(name, { kind: 'server-error' });
    t.match(await provider.check(name, 'test', trusted), { reason: 'server-error' });
  }
  f.set('d.test', { kind: 'registered' });
  t.match(await provider.check('d.test', 'test', trusted), { status: 'unknown', reason: 'circuit-open', server: f.origin, cached: false });
  t.equal(f.count('d.test'), 0, 'no request while open');
  clock.now += 29_999;
  t.match(await provider.check('d.test', 'test', trusted), { reason: 'circuit-open' });
  clock.now += 1;
  t.match(await provider.check('d.test', 'test', trusted), { status: 'registered' }, 'after the cooldown: asked');
  t.equal(f.count('d.test'), 1);
  f.set('e.test', { kind: 'available' });
  t.match(await provider.check('e.test', 'test', trusted), { status: 'available' }, 'closed again');

  // A failed probe opens it again at once.
  for (const name of ['f.test', 'g.test', 'h.test']) {
    f.set(name, { kind: 'server-error' });
    await provider.check(name, 'test', trusted);
  }
  clock.now += 30_000;
  f.set('i.test', { kind: 'server-error' });
  t.match(await provider.check('i.test', 'test', trusted), { reason: 'server-error' }, 'the probe');
  t.match(await provider.check('j.test', 'test', trusted), { reason: 'circuit-open' });
  t.equal(f.count('j.test'), 0);
});

t.test('address policy: a loopback RDAP server is refused unless allowPrivateAddresses', async (t) => {
  const { f, provider } = await setup(t, {}, false);
  f.set('taken.test', { kind: 'registered' });
  t.match(await provider.check('taken.test', 'test', trusted), { status: 'unknown', reason: 'address-refused', server: f.origin });
  t.equal(f.total(), 0, 'nothing reached the server');
});
