// The pure parts of anomaly detection: the robust z-score (a flat history still works), the
// heavy-hitter summary, the bucketed series (alignment, quiet stretches, late requests) and each
// detector against a table of buckets and histories.
import t from 'tap';
import { detect, median, robustZ, type Outcomes } from '../../src/proxy/detect/detectors.js';
import { EMPTY_BUCKET, HeavyHitters, HostSeries, type BucketSummary, type ObservedRequest } from '../../src/proxy/detect/series.js';

const CFG = { baselineBuckets: 12, minRequests: 10 };

function bucket(over: Partial<BucketSummary> = {}): BucketSummary {
  return { requests: 20, blocked: 0, errors: 0, bytesOut: 0, topSource: { key: '198.51.100.1', count: 2 }, countries: [['US', 8], ['DE', 6], ['FR', 6]], ...over };
}

function flat(n: number, over: Partial<BucketSummary> = {}): BucketSummary[] {
  return Array.from({ length: n }, () => bucket(over));
}

/** Only the kinds that found something, as [kind, observed, baseline, severity]. */
function findings(o: Outcomes): [string, number, number, string][] {
  return Object.entries(o)
    .filter((e): e is [string, Exclude<(typeof e)[1], 'none' | 'unknown'>] => typeof e[1] === 'object')
    .map(([k, f]) => [k, f.observed, f.baseline, f.severity]);
}

t.test('median and robust z: MAD with a Poisson floor', async (t) => {
  t.equal(median([]), 0);
  t.equal(median([3, 1, 2]), 2);
  t.equal(median([4, 1, 3, 2]), 2.5);
  t.same(robustZ(5, [5, 5, 5]), { z: 0, median: 5 });
  t.equal(robustZ(5 + 6 * Math.sqrt(5), [5, 5, 5]).z, 6, 'flat history: sqrt(median) is the scale');
  t.equal(robustZ(6, [0, 0, 0]).z, 6, 'all zeros: the floor of 1');
  // MAD of 10,20,30,40,50 is 10 -> scale 14.826 (above sqrt(30)).
  t.equal(robustZ(60, [10, 20, 30, 40, 50]).z, 30 / (10 * 1.4826));
});

t.test('heavy hitters: exact while keys fit, any key above 1/(k+1) found after', async (t) => {
  const hh = new HeavyHitters(4);
  for (const k of ['a', 'b', 'a', 'c', 'a']) hh.add(k);
  t.same(hh.top(), { key: 'a', count: 3 });
  const big = new HeavyHitters(32);
  for (let i = 0; i < 10_000; i++) big.add(i % 10 < 4 ? 'attacker' : `client-${i}`);
  const top = big.top();
  t.equal(top?.key, 'attacker', 'a 40% source among 6000 distinct others');
  t.ok(top && top.count <= 4000 && top.count >= 4000 - 10_000 / 33, `a lower bound within n/(k+1): ${top?.count}`);
  t.ok(big.size <= 32, 'never more than k counters');
  t.equal(new HeavyHitters().top(), undefined);
});

t.test('series: epoch-aligned buckets, empty buckets for quiet stretches, late requests, bounded history', async (t) => {
  const W = 60_000;
  const T = 1000 * W;
  const req = (time: number, over: Partial<ObservedRequest> = {}): ObservedRequest => ({
    time, hostname: 'h', ownerId: 'u', clientIp: '192.0.2.1', country: 'US', status: 200, decision: 'allowed', bytesOut: 100, ...over,
  });
  const s = new HostSeries('h', 'u', W, 4, T);
  t.equal(s.bucketOf(T + W - 1), T);
  t.equal(s.bucketOf(T + W), T + W);
  s.add(req(T + 5));
  s.add(req(T + 10, { decision: 'ip-blocked', status: 403 }));
  s.add(req(T + 20, { status: 502, country: 'xx' }));
  s.add(req(T + 2 * W + 1, { clientIp: '2001:db8::1' }));
  const seen: [number, BucketSummary, number][] = [];
  s.closeUntil(T + 2 * W, (start, b, h) => seen.push([start, b, h.length]));
  t.same(seen.map(([start, , len]) => [start, len]), [[T, 0], [T + W, 1]], 'the bucket in progress stays open');
  t.same(seen[0]?.[1], {
    requests: 3, blocked: 1, errors: 1, bytesOut: 300, topSource: { key: '192.0.2.1', count: 3 }, countries: [['US', 2], ['', 1]],
  }, 'a lower-case or odd country counts as unknown');
  t.equal(seen[1]?.[1], EMPTY_BUCKET, 'a quiet bucket is an empty one');
  t.equal(s.closedUntil, T + 2 * W);

  s.add(req(T, { clientIp: '2001:db8::2' }));
  seen.length = 0;
  s.closeUntil(T + 3 * W, (start, b) => seen.push([start, b, 0]));
  t.same(seen.map(([start, b]) => [start, b.requests, b.topSource]), [[T + 2 * W, 2, { key: '2001:db8:0:0::/64', count: 2 }]], 'a late request joins the first open bucket; one /64 is one source');

  // A long quiet stretch: empty buckets until the history is all empty, then a jump, not a million visits.
  let visits = 0;
  s.closeUntil(T + 1_000_000 * W, () => visits++);
  t.equal(visits, 4, 'empty buckets until the last busy one has left the history of 4, then a jump');
  t.equal(s.closedUntil, T + 1_000_000 * W);
  s.add(req(T + 1_000_000 * W + 1));
  let last: BucketSummary | undefined;
  let histLen = -1;
  s.closeUntil(T + 1_000_001 * W, (_start, b, h) => {
    last = b;
    histLen = h.length;
  });
  t.equal(last?.requests, 1);
  t.equal(histLen, 4, 'history never beyond maxHistory');
});

t.test('detectors: one table of buckets and histories', async (t) => {
  const twelve = flat(12);
  const busy = flat(12, { requests: 100 });
  const table: [string, BucketSummary, BucketSummary[], [string, number, number, string][]][] = [
    ['normal traffic', bucket(), twelve, []],
    ['spike x20 (z 85: high)', bucket({ requests: 400, topSource: { key: 'a', count: 8 } }), twelve, [['rate-spike', 400, 20, 'high']]],
    ['spike z 6..12: low', bucket({ requests: 20 + 7 * Math.sqrt(20) }), twelve, [['rate-spike', 20 + 7 * Math.sqrt(20), 20, 'low']]],
    ['spike z 12..30: medium', bucket({ requests: 20 + 13 * Math.sqrt(20) }), twelve, [['rate-spike', 20 + 13 * Math.sqrt(20), 20, 'medium']]],
    ['no spike without a full baseline', bucket({ requests: 400 }), flat(11), []],
    ['no spike under 2x median on a big host', bucket({ requests: 10_900 }), flat(12, { requests: 10_000 }), []],
    ['no spike below minRequests (flat zero history)', bucket({ requests: 9, topSource: { key: 'a', count: 1 } }), flat(12, { requests: 0, countries: [] }), []],
    ['spike from nothing', bucket({ requests: 50, topSource: { key: 'a', count: 1 } }), flat(12, { requests: 0, countries: [] }), [['rate-spike', 50, 0, 'high']]],
    ['drop to 10 of 100: medium', bucket({ requests: 10, topSource: { key: 'a', count: 1 }, countries: [] }), busy, [['rate-drop', 10, 100, 'medium']]],
    ['drop to 40 of 100: low', bucket({ requests: 40, topSource: { key: 'a', count: 1 }, countries: [] }), busy, [['rate-drop', 40, 100, 'low']]],
    ['drop to nothing: high', EMPTY_BUCKET, busy, [['rate-drop', 0, 100, 'high']]],
    ['no drop when the median is under minRequests', EMPTY_BUCKET, flat(12, { requests: 9 }), []],
    ['source-dominance 93%', bucket({ requests: 100, topSource: { key: '203.0.113.9', count: 93 } }), busy, [['source-dominance', 0.93, 0.5, 'high']]],
    ['source-dominance 60%', bucket({ requests: 100, topSource: { key: '203.0.113.9', count: 60 } }), busy, [['source-dominance', 0.6, 0.5, 'low']]],
    ['source at exactly 50% is not dominance', bucket({ requests: 100, topSource: { key: '203.0.113.9', count: 50 } }), busy, []],
    ['source-dominance needs no history', bucket({ topSource: { key: 'x', count: 16 } }), [], [['source-dominance', 0.8, 0.5, 'medium']]],
    ['country-dominance: CN 90%, never before', bucket({ countries: [['CN', 18], ['US', 2]] }), twelve, [['country-dominance', 0.9, 0, 'high']]],
    ['country-dominance: DE 90%, usually 30%', bucket({ countries: [['DE', 18], ['US', 2]] }), twelve, [['country-dominance', 0.9, 0.3, 'low']]],
    ['no country-dominance for the usual majority', bucket({ countries: [['US', 19], ['DE', 1]] }), flat(12, { countries: [['US', 17], ['DE', 3]] }), []],
    ['unknown country never dominates', bucket({ countries: [['', 19], ['US', 1]] }), twelve, []],
    ['blocked-surge by share 75%: medium', bucket({ blocked: 15 }), [], [['blocked-surge', 15, 0, 'medium']]],
    ['blocked share 75% but under minRequests blocked', bucket({ requests: 12, blocked: 9, topSource: { key: 'a', count: 1 } }), [], []],
    ['blocked-surge by z (1 -> 30 of 100)', bucket({ requests: 100, blocked: 30, topSource: { key: 'a', count: 1 } }), flat(12, { requests: 100, blocked: 1 }), [['blocked-surge', 30, 1, 'medium']]],
    ['origin-errors 30% of allowed', bucket({ errors: 6 }), twelve, [['origin-errors', 0.3, 0, 'low']]],
    ['origin-errors: 50% of allowed, blocked ones not counted (and blocked 0 -> 20: z 20, medium)', bucket({ requests: 40, blocked: 20, errors: 10, topSource: { key: 'a', count: 1 } }), flat(12, { requests: 40 }), [['blocked-surge', 20, 0, 'medium'], ['origin-errors', 0.5, 0, 'medium']]],
    ['origin-errors 100%: high, baseline the usual share', bucket({ errors: 20 }), flat(12, { errors: 2 }), [['origin-errors', 1, 0.1, 'high']]],
    ['origin errors under 20%', bucket({ errors: 3 }), twelve, []],
    ['one 5xx of 5 is not an event (minRequests/5 errors)', bucket({ requests: 10, errors: 1, topSource: { key: 'a', count: 1 } }), flat(12, { requests: 10 }), []],
    ['nothing below minRequests', bucket({ requests: 9, blocked: 9, topSource: { key: 'a', count: 9 }, countries: [['CN', 9]] }), flat(12, { requests: 9 }), []],
  ];
  for (const [name, b, history, want] of table) t.same(findings(detect(b, history, CFG)), want, name);
});

t.test('detectors: unknown until there is history to judge by', async (t) => {
  const o = detect(bucket({ requests: 400, blocked: 5, topSource: { key: 'a', count: 1 } }), flat(3), CFG);
  t.equal(o['rate-spike'], 'unknown');
  t.equal(o['rate-drop'], 'unknown');
  t.equal(o['blocked-surge'], 'unknown', 'blocked count worth a z-score, no baseline for it');
  t.equal(o['source-dominance'], 'none');
  t.equal(detect(bucket({ countries: [['CN', 20]] }), [], CFG)['country-dominance'], 'unknown', 'no history: no usual share');
  const quiet = detect(EMPTY_BUCKET, flat(3), CFG);
  t.equal(quiet['rate-spike'], 'none', 'an empty bucket is no spike whatever the history');
  t.equal(quiet['country-dominance'], 'none');
});
