// A project hostname's rules as tables: each rule alone, the order between them (blocked requests take
// no tokens), IP lists of both families and mapped IPv4, and the validator's accepts and rejects.
import t from 'tap';
import { ClientLimiter } from '../../src/proxy/limiter.js';
import { NO_RULES, type Decision, type EdgeRoute, type HostRules } from '../../src/db/repos/hostname-model.js';
import { decide, validateRules, type RuleFacts } from '../../src/proxy/rules.js';

const T0 = 1_700_000_000_000;

function route(rules: Partial<HostRules>, hostnameId = 'h1'): EdgeRoute {
  return { hostnameId, hostname: 'app.example.com', projectId: 'p1', ownerId: 'u1', origin: null, rules: { ...NO_RULES, ...rules }, tls: null };
}

function facts(over: Partial<RuleFacts> = {}): RuleFacts {
  return { ip: '198.51.100.7', country: 'DE', method: 'GET', bodyBytes: null, ...over };
}

const allow: Decision = { kind: 'allow' };
const blocked = (reason: Extract<Decision, { kind: 'block' }>['reason'], status: 403 | 405 | 413): Decision => ({ kind: 'block', reason, status });

const oneToken = { requestsPerSecond: 1, burst: 1, banAfter: 0, banWindowSeconds: 60, banSeconds: 60, maxBanSeconds: 3600 };

t.test('each rule alone', async (t) => {
  const table: [string, Partial<HostRules>, Partial<RuleFacts>, Decision][] = [
    ['no rules', {}, {}, allow],
    ['blockIps: address', { blockIps: ['198.51.100.7'] }, {}, blocked('ip-blocked', 403)],
    ['blockIps: other address', { blockIps: ['198.51.100.8'] }, {}, allow],
    ['blockIps: IPv4 CIDR', { blockIps: ['198.51.100.0/24'] }, {}, blocked('ip-blocked', 403)],
    ['blockIps: IPv4 CIDR, outside', { blockIps: ['198.51.101.0/24'] }, {}, allow],
    ['blockIps: IPv6 CIDR', { blockIps: ['2001:db8:abcd::/48'] }, { ip: '2001:db8:abcd:12::1' }, blocked('ip-blocked', 403)],
    ['blockIps: IPv6 CIDR, outside', { blockIps: ['2001:db8:abcd::/48'] }, { ip: '2001:db8:abce::1' }, allow],
    ['blockIps: IPv6 client written long', { blockIps: ['2001:db8::1'] }, { ip: '2001:0DB8:0:0:0:0:0:1' }, blocked('ip-blocked', 403)],
    ['blockIps: mapped client, IPv4 rule', { blockIps: ['198.51.100.0/24'] }, { ip: '::ffff:198.51.100.7' }, blocked('ip-blocked', 403)],
    ['blockIps: IPv4 client, mapped rule', { blockIps: ['::ffff:198.51.100.0/120'] }, {}, blocked('ip-blocked', 403)],
    ['blockIps: client with port', { blockIps: ['198.51.100.7'] }, { ip: '198.51.100.7:5555' }, blocked('ip-blocked', 403)],
    ['allowIps: inside', { allowIps: ['198.51.100.0/24', '2001:db8::/32'] }, {}, allow],
    ['allowIps: IPv6 inside', { allowIps: ['198.51.100.0/24', '2001:db8::/32'] }, { ip: '2001:db8::9' }, allow],
    ['allowIps: outside', { allowIps: ['192.0.2.0/24'] }, {}, blocked('ip-not-allowed', 403)],
    ['allowIps: unreadable client', { allowIps: ['192.0.2.0/24'] }, { ip: '' }, blocked('ip-not-allowed', 403)],
    ['blockCountries: match', { blockCountries: ['DE', 'FR'] }, {}, blocked('country-blocked', 403)],
    ['blockCountries: other', { blockCountries: ['FR'] }, {}, allow],
    ['blockCountries: unknown country never matches', { blockCountries: ['DE'] }, { country: '' }, allow],
    ['allowedMethods: listed', { allowedMethods: ['GET', 'HEAD'] }, {}, allow],
    ['allowedMethods: not listed', { allowedMethods: ['GET', 'HEAD'] }, { method: 'POST' }, blocked('method-not-allowed', 405)],
    ['maxBodyBytes: under', { maxBodyBytes: 1000 }, { method: 'POST', bodyBytes: 999 }, allow],
    ['maxBodyBytes: equal', { maxBodyBytes: 1000 }, { method: 'POST', bodyBytes: 1000 }, allow],
    ['maxBodyBytes: over', { maxBodyBytes: 1000 }, { method: 'POST', bodyBytes: 1001 }, blocked('body-too-large', 413)],
    ['maxBodyBytes: 0 refuses any declared body', { maxBodyBytes: 0 }, { method: 'POST', bodyBytes: 1 }, blocked('body-too-large', 413)],
    ['maxBodyBytes: no Content-Length is not judged here', { maxBodyBytes: 0 }, { method: 'POST', bodyBytes: null }, allow],
    ['rateLimit: first request', { rateLimit: oneToken }, {}, allow],
  ];
  for (const [name, rules, f, want] of table) {
    t.same(decide(route(rules), facts(f), new ClientLimiter({ maxClients: 10 }), T0), want, name);
  }
});

t.test('the order: the first refusing rule wins', async (t) => {
  const all: Partial<HostRules> = {
    blockIps: ['198.51.100.66'],
    allowIps: ['198.51.100.0/24'],
    blockCountries: ['CN'],
    allowedMethods: ['GET'],
    maxBodyBytes: 10,
  };
  const table: [string, Partial<RuleFacts>, Decision][] = [
    ['blocked IP beats everything', { ip: '198.51.100.66', country: 'CN', method: 'PUT', bodyBytes: 99 }, blocked('ip-blocked', 403)],
    ['not allowed beats country, method, body', { ip: '192.0.2.1', country: 'CN', method: 'PUT', bodyBytes: 99 }, blocked('ip-not-allowed', 403)],
    ['country beats method and body', { country: 'CN', method: 'PUT', bodyBytes: 99 }, blocked('country-blocked', 403)],
    ['method beats body', { method: 'PUT', bodyBytes: 99 }, blocked('method-not-allowed', 405)],
    ['body', { bodyBytes: 99 }, blocked('body-too-large', 413)],
    ['all pass', { bodyBytes: 10 }, allow],
  ];
  for (const [name, f, want] of table) {
    t.same(decide(route(all), facts(f), new ClientLimiter({ maxClients: 10 }), T0), want, name);
  }
});

t.test('rate limit comes last: blocked requests never take tokens', async (t) => {
  const limiter = new ClientLimiter({ maxClients: 10 });
  const r = route({ allowedMethods: ['GET'], maxBodyBytes: 10, blockCountries: ['CN'], rateLimit: oneToken });
  for (const f of [{ method: 'DELETE' }, { bodyBytes: 11 }, { country: 'CN' }]) {
    t.equal(decide(r, facts(f), limiter, T0).kind, 'block');
  }
  t.equal(limiter.size, 0, 'the limiter was never asked');
  t.same(decide(r, facts(), limiter, T0), allow, 'the one token is still there');
  t.same(decide(r, facts(), limiter, T0), { kind: 'block', reason: 'rate-limited', status: 429, retryAfterSeconds: 1 });
  t.same(decide(r, facts(), limiter, T0 + 1000), allow, 'a second later');
  t.same(decide(r, facts({ ip: '198.51.100.8' }), limiter, T0), allow, 'another client has its own bucket');
  t.same(decide(route({ rateLimit: oneToken }, 'h2'), facts(), limiter, T0), allow, 'another hostname has its own buckets');

  const banning = route({ rateLimit: { ...oneToken, banAfter: 2, banSeconds: 30, maxBanSeconds: 60 } }, 'h3');
  const l2 = new ClientLimiter({ maxClients: 10 });
  t.same(decide(banning, facts(), l2, T0), allow);
  t.same(decide(banning, facts(), l2, T0), { kind: 'block', reason: 'rate-limited', status: 429, retryAfterSeconds: 1 });
  t.same(decide(banning, facts(), l2, T0), { kind: 'block', reason: 'banned', status: 429, retryAfterSeconds: 30 });
  t.same(decide(banning, facts(), l2, T0 + 10_000), { kind: 'block', reason: 'banned', status: 429, retryAfterSeconds: 20 });
});

t.test('rules are compiled per rules object: a new object with new lists takes effect', async (t) => {
  const limiter = new ClientLimiter({ maxClients: 10 });
  const before = route({ blockIps: ['198.51.100.7'] });
  t.equal(decide(before, facts(), limiter, T0).kind, 'block');
  t.equal(decide(before, facts(), limiter, T0).kind, 'block', 'the same object again');
  const after = route({ blockIps: ['198.51.100.8'] });
  t.same(decide(after, facts(), limiter, T0), allow, 'the reloaded route has its own compiled lists');
});

t.test('validateRules: accepts, normalises, fills defaults', async (t) => {
  const table: [string, unknown, HostRules][] = [
    ['empty object', {}, NO_RULES],
    ['every field', {
      allowIps: ['192.0.2.0/24', '2001:DB8::/32'],
      blockIps: ['198.51.100.7', '::ffff:203.0.113.0/120', '0.0.0.0/0', '::/0'],
      blockCountries: ['de', 'FR'],
      allowedMethods: ['get', 'HEAD', 'PROPFIND', 'M-SEARCH'],
      maxBodyBytes: 5 * 1024 ** 4,
      rateLimit: { requestsPerSecond: 10, burst: 20, banAfter: 5, banWindowSeconds: 30, banSeconds: 120, maxBanSeconds: 86400 },
    }, {
      allowIps: ['192.0.2.0/24', '2001:db8::/32'],
      blockIps: ['198.51.100.7', '::ffff:203.0.113.0/120', '0.0.0.0/0', '::/0'],
      blockCountries: ['DE', 'FR'],
      allowedMethods: ['GET', 'HEAD', 'PROPFIND', 'M-SEARCH'],
      maxBodyBytes: 5 * 1024 ** 4,
      rateLimit: { requestsPerSecond: 10, burst: 20, banAfter: 5, banWindowSeconds: 30, banSeconds: 120, maxBanSeconds: 86400 },
    }],
    ['duplicates dropped', { blockCountries: ['de', 'DE'], allowedMethods: ['GET', 'get'] }, { ...NO_RULES, blockCountries: ['DE'], allowedMethods: ['GET'] }],
    ['nulls', { maxBodyBytes: null, rateLimit: null }, NO_RULES],
    ['maxBodyBytes 0', { maxBodyBytes: 0 }, { ...NO_RULES, maxBodyBytes: 0 }],
    ['partial rateLimit', { rateLimit: { requestsPerSecond: 2.5 } }, {
      ...NO_RULES,
      rateLimit: { requestsPerSecond: 2.5, burst: 3, banAfter: 0, banWindowSeconds: 60, banSeconds: 60, maxBanSeconds: 3600 },
    }],
    ['slow rateLimit: burst at least 1', { rateLimit: { requestsPerSecond: 0.001 } }, {
      ...NO_RULES,
      rateLimit: { requestsPerSecond: 0.001, burst: 1, banAfter: 0, banWindowSeconds: 60, banSeconds: 60, maxBanSeconds: 3600 },
    }],
    ['long first ban lifts the default ceiling', { rateLimit: { requestsPerSecond: 1, banAfter: 3, banSeconds: 7200 } }, {
      ...NO_RULES,
      rateLimit: { requestsPerSecond: 1, burst: 1, banAfter: 3, banWindowSeconds: 60, banSeconds: 7200, maxBanSeconds: 7200 },
    }],
    ['list of 1000', { blockIps: Array.from({ length: 1000 }, (_, i) => `10.0.${i >> 8}.${i & 255}`) }, {
      ...NO_RULES,
      blockIps: Array.from({ length: 1000 }, (_, i) => `10.0.${i >> 8}.${i & 255}`),
    }],
  ];
  for (const [name, input, want] of table) t.same(validateRules(input), { rules: want }, name);
});

t.test('validateRules: rejects with the field named', async (t) => {
  const rl = (over: Record<string, unknown>): unknown => ({ rateLimit: { requestsPerSecond: 1, ...over } });
  const table: [unknown, string][] = [
    [null, 'rules: must be an object'],
    [[], 'rules: must be an object'],
    ['{}', 'rules: must be an object'],
    [{ blockIPs: [] }, 'rules.blockIPs: unknown field'],
    [{ blockIps: '1.2.3.4' }, 'rules.blockIps: must be an array'],
    [{ blockIps: ['1.2.3.4', '10.0.0.0/8', 'example.com'] }, 'rules.blockIps[2]: not an IP address or CIDR'],
    [{ blockIps: ['10.0.0.0/33'] }, 'rules.blockIps[0]: not an IP address or CIDR'],
    [{ blockIps: ['2001:db8::/129'] }, 'rules.blockIps[0]: not an IP address or CIDR'],
    [{ blockIps: ['10.0.0.0/'] }, 'rules.blockIps[0]: not an IP address or CIDR'],
    [{ blockIps: ['10.0.0.0/-1'] }, 'rules.blockIps[0]: not an IP address or CIDR'],
    [{ blockIps: ['10.0.0.0/8/8'] }, 'rules.blockIps[0]: not an IP address or CIDR'],
    [{ blockIps: ['10.0.0.0/ 8'] }, 'rules.blockIps[0]: not an IP address or CIDR'],
    [{ blockIps: [' 10.0.0.1'] }, 'rules.blockIps[0]: not an IP address or CIDR'],
    [{ blockIps: ['256.0.0.1'] }, 'rules.blockIps[0]: not an IP address or CIDR'],
    [{ blockIps: ['010.0.0.1'] }, 'rules.blockIps[0]: not an IP address or CIDR'],
    [{ blockIps: ['fe80::1%eth0'] }, 'rules.blockIps[0]: not an IP address or CIDR'],
    [{ blockIps: [42] }, 'rules.blockIps[0]: not an IP address or CIDR'],
    [{ allowIps: ['1.2.3.4', null] }, 'rules.allowIps[1]: not an IP address or CIDR'],
    [{ allowIps: Array.from({ length: 1001 }, () => '1.2.3.4') }, 'rules.allowIps: at most 1000 entries'],
    [{ blockCountries: ['DEU'] }, 'rules.blockCountries[0]: not a two-letter country code'],
    [{ blockCountries: ['D1'] }, 'rules.blockCountries[0]: not a two-letter country code'],
    [{ blockCountries: ['ÄÖ'] }, 'rules.blockCountries[0]: not a two-letter country code'],
    [{ allowedMethods: ['GET', 'GE T'] }, 'rules.allowedMethods[1]: not an HTTP method name'],
    [{ allowedMethods: ['GET\r\n'] }, 'rules.allowedMethods[0]: not an HTTP method name'],
    [{ allowedMethods: [''] }, 'rules.allowedMethods[0]: not an HTTP method name'],
    [{ allowedMethods: ['X'.repeat(33)] }, 'rules.allowedMethods[0]: not an HTTP method name'],
    [{ allowedMethods: Array.from({ length: 21 }, (_, i) => `M${i}`) }, 'rules.allowedMethods: at most 20 entries'],
    [{ maxBodyBytes: -1 }, 'rules.maxBodyBytes: must be 0 to 5497558138880'],
    [{ maxBodyBytes: 5 * 1024 ** 4 + 1 }, 'rules.maxBodyBytes: must be 0 to 5497558138880'],
    [{ maxBodyBytes: 1.5 }, 'rules.maxBodyBytes: must be a whole number'],
    [{ maxBodyBytes: '100' }, 'rules.maxBodyBytes: must be a number'],
    [{ maxBodyBytes: Number.NaN }, 'rules.maxBodyBytes: must be a number'],
    [{ rateLimit: 5 }, 'rules.rateLimit: must be an object or null'],
    [{ rateLimit: {} }, 'rules.rateLimit.requestsPerSecond: required'],
    [rl({ rps: 1 }), 'rules.rateLimit.rps: unknown field'],
    [rl({ requestsPerSecond: 0 }), 'rules.rateLimit.requestsPerSecond: must be 0.001 to 1000000'],
    [rl({ requestsPerSecond: 1e6 + 1 }), 'rules.rateLimit.requestsPerSecond: must be 0.001 to 1000000'],
    [rl({ requestsPerSecond: Infinity }), 'rules.rateLimit.requestsPerSecond: must be a number'],
    [rl({ burst: 0 }), 'rules.rateLimit.burst: must be 1 to 1000000'],
    [rl({ burst: 2.5 }), 'rules.rateLimit.burst: must be a whole number'],
    [rl({ banAfter: -1 }), 'rules.rateLimit.banAfter: must be 0 to 1000000'],
    [rl({ banWindowSeconds: 0 }), 'rules.rateLimit.banWindowSeconds: must be 1 to 86400'],
    [rl({ banWindowSeconds: 86401 }), 'rules.rateLimit.banWindowSeconds: must be 1 to 86400'],
    [rl({ banSeconds: 86400 * 30 + 1 }), 'rules.rateLimit.banSeconds: must be 1 to 2592000'],
    [rl({ maxBanSeconds: 86400 * 365 + 1 }), 'rules.rateLimit.maxBanSeconds: must be 1 to 31536000'],
    [rl({ banSeconds: 600, maxBanSeconds: 300 }), 'rules.rateLimit.maxBanSeconds: must be at least banSeconds (600)'],
  ];
  for (const [input, message] of table) {
    t.same(validateRules(input), { error: message }, message);
  }
});

t.test('validated rules decide as written', async (t) => {
  const v = validateRules({ blockIps: ['2001:DB8::/32'], blockCountries: ['cn'], allowedMethods: ['get'] });
  if (!('rules' in v)) throw new Error(v.error);
  const r = route(v.rules);
  const l = new ClientLimiter({ maxClients: 10 });
  t.same(decide(r, facts({ ip: '2001:db8::1' }), l, T0), blocked('ip-blocked', 403));
  t.same(decide(r, facts({ country: 'CN' }), l, T0), blocked('country-blocked', 403));
  t.same(decide(r, facts({ method: 'POST' }), l, T0), blocked('method-not-allowed', 405));
  t.same(decide(r, facts(), l, T0), allow);
});
