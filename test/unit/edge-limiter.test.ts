// The edge proxy's per-client limiter: token-bucket arithmetic, retry-after values, who counts as one
// client (IPv6 /64, IPv4-mapped addresses), bans that double up to a ceiling, independent hostnames, and
// a bounded table under a flood of distinct addresses.
import t from 'tap';
import { ClientLimiter, clientKey, type LimitResult } from '../../src/proxy/limiter.js';
import type { RateLimitRule } from '../../src/db/repos/hostname-model.js';

const T0 = 1_700_000_000_000;

function rule(over: Partial<RateLimitRule> = {}): RateLimitRule {
  return { requestsPerSecond: 2, burst: 4, banAfter: 0, banWindowSeconds: 60, banSeconds: 60, maxBanSeconds: 3600, ...over };
}

function takeN(l: ClientLimiter, n: number, ip: string, r: RateLimitRule, now: number, scope = 'h1'): LimitResult[] {
  return Array.from({ length: n }, () => l.take(scope, ip, r, now));
}

t.test('clientKey: IPv4 as is, IPv6 by /64 however written, mapped IPv4 as IPv4', async (t) => {
  const table: [string, string][] = [
    ['203.0.113.9', '203.0.113.9'],
    ['::ffff:203.0.113.9', '203.0.113.9'],
    ['::FFFF:203.0.113.9', '203.0.113.9'],
    ['::ffff:cb00:7109', '203.0.113.9'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['2001:0db8:0:0:ffff::2', '2001:db8:0:0::/64'],
    ['2001:DB8:0000:0000:1:2:3:4', '2001:db8:0:0::/64'],
    ['2001:db8:0:1::1', '2001:db8:0:1::/64'],
    ['[2001:db8::5]:443', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['', '?'],
    ['not-an-ip', '?not-an-ip'],
  ];
  for (const [ip, key] of table) t.equal(clientKey(ip), key, ip);
  t.equal(clientKey('x'.repeat(500)).length, 65, 'garbage is bounded');
});

t.test('burst, then one token per 1/requestsPerSecond, with retry-after rounded up', async (t) => {
  const l = new ClientLimiter({ maxClients: 100 });
  const r = rule({ requestsPerSecond: 2, burst: 4 });
  t.same(takeN(l, 4, '198.51.100.1', r, T0), Array(4).fill({ ok: true }), 'the burst passes at once');
  t.same(l.take('h1', '198.51.100.1', r, T0), { ok: false, reason: 'rate-limited', retryAfterSeconds: 1 }, '0.5 s to a token -> 1');
  t.same(l.take('h1', '198.51.100.1', r, T0 + 499), { ok: false, reason: 'rate-limited', retryAfterSeconds: 1 }, 'not yet a whole token');
  t.same(l.take('h1', '198.51.100.1', r, T0 + 500), { ok: true }, 'one token after 500 ms');
  t.same(l.take('h1', '198.51.100.1', r, T0 + 500), { ok: false, reason: 'rate-limited', retryAfterSeconds: 1 });
  t.same(takeN(l, 3, '198.51.100.1', r, T0 + 2000), Array(3).fill({ ok: true }), '1.5 s later: 3 tokens');
  t.equal(l.take('h1', '198.51.100.1', r, T0 + 2000).ok, false);
  t.same(takeN(l, 5, '198.51.100.1', r, T0 + 3_600_000), [...Array(4).fill({ ok: true }), { ok: false, reason: 'rate-limited', retryAfterSeconds: 1 }], 'refill stops at burst');

  const slow = rule({ requestsPerSecond: 0.1, burst: 1 });
  t.same(l.take('h1', '198.51.100.2', slow, T0), { ok: true });
  t.same(l.take('h1', '198.51.100.2', slow, T0), { ok: false, reason: 'rate-limited', retryAfterSeconds: 10 }, '1 token at 0.1/s: 10 s');
  t.same(l.take('h1', '198.51.100.2', slow, T0 + 2500), { ok: false, reason: 'rate-limited', retryAfterSeconds: 8 }, '7.5 s left -> 8');
  t.same(l.take('h1', '198.51.100.2', slow, T0 + 10_000), { ok: true });

  const fast = rule({ requestsPerSecond: 1000, burst: 1 });
  t.same(l.take('h1', '198.51.100.3', fast, T0), { ok: true });
  t.same(l.take('h1', '198.51.100.3', fast, T0), { ok: false, reason: 'rate-limited', retryAfterSeconds: 1 }, 'never below 1 s');

  t.same(l.take('h1', '198.51.100.4', r, T0), { ok: true });
  t.same(takeN(l, 3, '198.51.100.4', r, T0 - 10_000), Array(3).fill({ ok: true }), 'a clock stepping back refills nothing...');
  t.equal(l.take('h1', '198.51.100.4', r, T0 - 10_000).ok, false, '...and takes nothing away');
});

t.test('one bucket per IPv6 /64 and per IPv4 address, mapped or not', async (t) => {
  const l = new ClientLimiter({ maxClients: 100 });
  const r = rule({ requestsPerSecond: 1, burst: 2 });
  t.same(l.take('h1', '2001:db8::1', r, T0), { ok: true });
  t.same(l.take('h1', '2001:0db8:0:0:ffff::2', r, T0), { ok: true }, 'same /64, second token');
  t.equal(l.take('h1', '2001:db8:0:0:abcd::9', r, T0).ok, false, 'the /64 is out of tokens');
  t.same(l.take('h1', '2001:db8:0:1::1', r, T0), { ok: true }, 'the next /64 is another client');

  t.same(l.take('h1', '192.0.2.7', r, T0), { ok: true });
  t.same(l.take('h1', '::ffff:192.0.2.7', r, T0), { ok: true }, 'the mapped form is the same client');
  t.equal(l.take('h1', '::ffff:192.0.2.7', r, T0).ok, false);
  t.same(l.take('h1', '192.0.2.8', r, T0), { ok: true }, 'IPv4 neighbours are separate');
  t.equal(l.size, 4);
});

t.test('two scopes (hostnames) are independent', async (t) => {
  const l = new ClientLimiter({ maxClients: 100 });
  const r = rule({ requestsPerSecond: 1, burst: 1 });
  t.same(l.take('host-a', '192.0.2.1', r, T0), { ok: true });
  t.equal(l.take('host-a', '192.0.2.1', r, T0).ok, false);
  t.same(l.take('host-b', '192.0.2.1', r, T0), { ok: true }, 'the same client has a fresh bucket on another hostname');
});

t.test('bans: banAfter refusals within the window; 60 -> 120 -> 240, capped; banned requests take no tokens', async (t) => {
  const l = new ClientLimiter({ maxClients: 100 });
  const r = rule({ requestsPerSecond: 1, burst: 1, banAfter: 3, banWindowSeconds: 10, banSeconds: 60, maxBanSeconds: 240 });
  const ip = '203.0.113.50';
  let now = T0;
  /** One token, then refusals until the ban; returns the ban's retry-after. */
  const offend = (): number | undefined => {
    t.same(l.take('h', ip, r, now), { ok: true });
    t.same(l.take('h', ip, r, now), { ok: false, reason: 'rate-limited', retryAfterSeconds: 1 });
    t.same(l.take('h', ip, r, now), { ok: false, reason: 'rate-limited', retryAfterSeconds: 1 });
    const third = l.take('h', ip, r, now);
    return third.ok ? undefined : third.reason === 'banned' ? third.retryAfterSeconds : undefined;
  };

  t.equal(offend(), 60, 'the third refusal bans for banSeconds');
  t.same(l.take('h', ip, r, now + 1500), { ok: false, reason: 'banned', retryAfterSeconds: 59 }, 'remaining ban, rounded up');
  t.same(l.take('h', ip, r, now + 59_001), { ok: false, reason: 'banned', retryAfterSeconds: 1 });
  now += 60_000;
  t.equal(offend(), 120, 'the second ban doubles');
  now += 120_000;
  t.equal(offend(), 240, 'the third doubles again');
  now += 240_000;
  t.equal(offend(), 240, 'capped at maxBanSeconds');
  now += 240_000;

  // While banned, the bucket kept refilling untouched: the ban's end finds a full bucket.
  t.same(l.take('h', ip, r, now), { ok: true });
  now += 1000;

  // Refusals spread wider than the window never add up to a ban.
  const spread = new ClientLimiter({ maxClients: 10 });
  const slow = rule({ requestsPerSecond: 0.01, burst: 1, banAfter: 3, banWindowSeconds: 10 });
  t.same(spread.take('h', ip, slow, T0), { ok: true });
  for (let i = 0; i < 6; i++) {
    const res = spread.take('h', ip, slow, T0 + i * 6000);
    t.equal(res.ok === false && res.reason, 'rate-limited', `refusal ${i + 1} at ${i * 6} s`);
  }

  // banAfter 0: never banned, however many refusals.
  const never = new ClientLimiter({ maxClients: 10 });
  const noBan = rule({ requestsPerSecond: 1, burst: 1, banAfter: 0 });
  const results = takeN(never, 1000, ip, noBan, T0);
  t.equal(results.filter((x) => !x.ok && x.reason === 'banned').length, 0);
});

t.test('offences are forgotten after maxBanSeconds of good behaviour, not before', async (t) => {
  const l = new ClientLimiter({ maxClients: 10 });
  const r = rule({ requestsPerSecond: 1, burst: 1, banAfter: 1, banSeconds: 60, maxBanSeconds: 600 });
  const ip = '192.0.2.99';
  const ban = (now: number): LimitResult => {
    l.take('h', ip, r, now);
    return l.take('h', ip, r, now);
  };
  t.same(ban(T0), { ok: false, reason: 'banned', retryAfterSeconds: 60 });
  // The ban ended at T0+60 s; 599 s later the offence still counts.
  t.same(ban(T0 + 60_000 + 599_000), { ok: false, reason: 'banned', retryAfterSeconds: 120 });
  // That ban ends at T0+779 s; 600 s after it the slate is clean.
  t.same(ban(T0 + 779_000 + 600_000), { ok: false, reason: 'banned', retryAfterSeconds: 60 });
});

t.test('the table is bounded: 10x maxClients distinct addresses keep size <= maxClients', async (t) => {
  const max = 500;
  const l = new ClientLimiter({ maxClients: max });
  const r = rule();
  for (let i = 0; i < max * 10; i++) {
    const ip = i % 2 === 0 ? `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` : `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`;
    l.take('h', ip, r, T0);
    if (l.size > max) break;
  }
  t.equal(l.size, max, 'full, never over');
  // The least recently seen went first: the most recent client still has its spent token.
  const last = `2001:db8:0:${(max * 10 - 1).toString(16)}::1`;
  t.same(takeN(l, 4, last, r, T0, 'h'), [...Array(3).fill({ ok: true }), { ok: false, reason: 'rate-limited', retryAfterSeconds: 1 }]);
  t.same(takeN(l, 4, '10.0.0.0', r, T0, 'h'), Array(4).fill({ ok: true }), 'the first one was forgotten: a fresh bucket');
});
