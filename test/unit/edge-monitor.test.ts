// The edge monitor over a real SQLite database and an injected clock: traffic is observed bucket by
// bucket, evaluate() closes the buckets that ended, and the events land in edge_anomalies (one per
// ongoing anomaly, ended when a bucket no longer shows it, not repeated after a restart). Also the
// repository's window queries and the monitor's memory bound (the repository's own checks are in
// test/contract/metadata-store-edge.test.ts).
import t from 'tap';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/open.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import type { AnomalyEvent } from '../../src/db/repos/anomaly-event.js';
import { EdgeMonitor, type ObservedRequest } from '../../src/proxy/detect/monitor.js';
import { tempDir } from '../helpers/temp-data.js';

interface Teardown {
  teardown(fn: () => void): void;
}

const W = 60_000;
const T0 = 28_333_334 * W; // a bucket boundary in 2023
const CONFIG = { bucketSeconds: 60, baselineBuckets: 12, minRequests: 10 };
const COUNTRIES = ['US', 'DE', 'FR', 'GB'];

function freshRepos(t: Teardown): Repos {
  const db = openDatabase(join(tempDir(t), 'meta.db'));
  t.teardown(() => db.close());
  return createRepos(db);
}

class Rig {
  now = T0;
  readonly warnings: unknown[] = [];
  monitor: EdgeMonitor;

  constructor(
    readonly repos: Repos,
    t: Teardown,
    maxHostnames?: number,
  ) {
    this.monitor = this.start(maxHostnames);
    t.teardown(() => this.monitor.close());
  }

  start(maxHostnames?: number): EdgeMonitor {
    return new EdgeMonitor({
      repo: this.repos.anomalies,
      config: CONFIG,
      now: () => this.now,
      elapsed: () => this.now,
      log: { warn: (...args: unknown[]) => void this.warnings.push(args) },
      ...(maxHostnames === undefined ? {} : { maxHostnames }),
    });
  }

  /** Simulates a restart: a new monitor over the same database. */
  restart(): void {
    this.monitor.close();
    this.monitor = this.start();
  }

  /**
   * `n` requests in the current bucket from 50 rotating clients and four countries (unless `pick`
   * says otherwise for request i), then the clock moves to the next bucket and evaluate() runs.
   */
  async bucket(n: number, pick: (i: number) => Partial<ObservedRequest> = () => ({}), hostname = 'app.example.com'): Promise<void> {
    for (let i = 0; i < n; i++) {
      this.monitor.observe({
        time: this.now + (i % 50) * 1000,
        hostname,
        ownerId: 'owner-1',
        clientIp: `198.51.100.${i % 50}`,
        country: COUNTRIES[i % 4] as string,
        status: 200,
        decision: 'allowed',
        bytesOut: 1000,
        ...pick(i),
      });
    }
    this.now += W;
    await this.monitor.evaluate();
  }

  async events(hostname?: string): Promise<AnomalyEvent[]> {
    await this.monitor.evaluate();
    return this.repos.anomalies.list({ ownerId: 'owner-1', fromMs: 0, toMs: this.now + W, limit: 100, ...(hostname ? { hostname } : {}) });
  }
}

const HISTORY = [18, 20, 22, 19, 21, 20, 20, 19, 21, 20, 22, 18]; // median 20

t.test('rate spike: one event from the burst bucket, kept across the burst, ended when traffic is back', async (t) => {
  const rig = new Rig(freshRepos(t), t);
  for (const n of HISTORY) await rig.bucket(n);
  t.same((await rig.events()), [], 'a normal history reports nothing');

  const burstStart = rig.now;
  await rig.bucket(400);
  const [spike, ...others] = (await rig.events());
  t.same(others, [], 'exactly one event');
  t.match(spike, {
    hostname: 'app.example.com', ownerId: 'owner-1', kind: 'rate-spike', severity: 'high',
    startedAt: burstStart, endedAt: null, observed: 400, baseline: 20,
  });
  t.ok(spike && typeof spike.detail.z === 'number' && spike.detail.z >= 30, `z in the detail: ${spike?.detail.z}`);

  await rig.bucket(400);
  await rig.bucket(400);
  t.same((await rig.events()).map((e) => [e.id, e.endedAt]), [[spike?.id, null]], 'still the one open event after two more burst buckets');

  const backStart = rig.now;
  await rig.bucket(20);
  t.same((await rig.events()).map((e) => [e.id, e.kind, e.startedAt, e.endedAt]), [[spike?.id, 'rate-spike', burstStart, backStart]], 'ended at the end of the last burst bucket');
  t.same(rig.monitor.stats(), { hostnames: 1, openEvents: 0, observed: HISTORY.reduce((a, b) => a + b, 0) + 1220, dropped: 0 });
  t.same(rig.warnings, []);
});

t.test('the clock alone closes buckets: a quiet hostname gets a rate drop, then the history forgets', async (t) => {
  const rig = new Rig(freshRepos(t), t);
  for (let i = 0; i < 12; i++) await rig.bucket(100);
  const silentFrom = rig.now;
  rig.now += W; // one bucket without a single request
  const [drop] = (await rig.events());
  t.match(drop, { kind: 'rate-drop', severity: 'high', startedAt: silentFrom, endedAt: null, observed: 0, baseline: 100 });

  // Median of the last 12 falls to 50 after six empty buckets: z no longer says drop, the event ends.
  rig.now += 20 * W;
  t.match((await rig.events()), [{ kind: 'rate-drop', startedAt: silentFrom, endedAt: silentFrom + 6 * W }]);

  // A day of silence later, everything is quiet and nothing new opened.
  rig.now += 24 * 60 * W;
  t.equal((await rig.events()).length, 1);
  t.same(rig.monitor.stats().openEvents, 0);
});

t.test('source dominance with its figures; a restart does not repeat it', async (t) => {
  const rig = new Rig(freshRepos(t), t);
  const start = rig.now;
  // 93 of 100 from one address, the rest from seven others.
  await rig.bucket(100, (i) => ({ clientIp: i < 93 ? '203.0.113.9' : `198.51.100.${i}` }));
  const [ev, ...rest] = (await rig.events());
  t.same(rest, []);
  t.match(ev, { kind: 'source-dominance', severity: 'high', startedAt: start, endedAt: null, observed: 0.93, baseline: 0.5 });
  t.same(ev?.detail, { source: '203.0.113.9', requests: 93, share: 0.93 });

  rig.restart();
  await rig.bucket(100, (i) => ({ clientIp: i < 80 ? '203.0.113.9' : `198.51.100.${i}` }));
  t.same((await rig.events()).map((e) => [e.id, e.endedAt]), [[ev?.id, null]], 'the restored event goes on: no second one');
  const endAt = rig.now;
  await rig.bucket(100);
  t.same((await rig.events()).map((e) => [e.id, e.endedAt]), [[ev?.id, endAt]], 'ended once the source is back among many');

  // IPv6 clients of one /64 are one source.
  const v6Start = rig.now;
  await rig.bucket(100, (i) => ({ clientIp: i < 70 ? `2001:db8:1:2::${(i + 1).toString(16)}` : `198.51.100.${i}` }));
  const v6 = (await rig.events()).find((e) => e.startedAt === v6Start);
  t.match(v6, { kind: 'source-dominance', severity: 'low', observed: 0.7 });
  t.same(v6?.detail, { source: '2001:db8:1:2::/64', requests: 70, share: 0.7 });
});

t.test('country dominance against the usual mix', async (t) => {
  const rig = new Rig(freshRepos(t), t);
  for (const n of HISTORY) await rig.bucket(n);
  const start = rig.now;
  await rig.bucket(20, (i) => ({ country: i < 18 ? 'CN' : 'US' }));
  const [ev, ...rest] = (await rig.events());
  t.same(rest, [], 'nothing else (no spike at 20 requests)');
  t.match(ev, { kind: 'country-dominance', severity: 'high', startedAt: start, endedAt: null, observed: 0.9, baseline: 0 });
  t.same(ev?.detail, { country: 'CN', requests: 18, share: 0.9 });
});

t.test('blocked surge and origin errors', async (t) => {
  const rig = new Rig(freshRepos(t), t);
  const start = rig.now;
  await rig.bucket(40, (i) => (i < 30 ? { decision: 'rate-limited', status: 429 } : {}));
  t.match((await rig.events()), [{ kind: 'blocked-surge', severity: 'medium', startedAt: start, observed: 30, baseline: 0, detail: { share: 0.75 } }]);

  const errStart = rig.now;
  await rig.bucket(40, (i) => (i < 12 ? { status: 502 } : {}));
  const events = (await rig.events());
  t.match(events, [
    { kind: 'origin-errors', severity: 'low', startedAt: errStart, endedAt: null, observed: 0.3, baseline: 0, detail: { errors: 12, share: 0.3 } },
    { kind: 'blocked-surge', endedAt: errStart },
  ], 'newest first; the blocked surge ended when the errors began');
  t.equal(events.length, 2);

  // A 5xx answer to a blocked request is the proxy's refusal, not the origin failing.
  const rig2 = new Rig(freshRepos(t), t);
  await rig2.bucket(40, (i) => (i < 15 ? { decision: 'ip-blocked', status: 503 } : {}));
  t.same((await rig2.events()).map((e) => e.kind), [], '15 of 40 blocked, no origin errors');
});

t.test('nothing below minRequests, however lopsided', async (t) => {
  const rig = new Rig(freshRepos(t), t);
  for (const n of HISTORY) await rig.bucket(n);
  await rig.bucket(9, () => ({ clientIp: '203.0.113.9', country: 'CN', decision: 'ip-blocked', status: 403 }));
  await rig.bucket(9, () => ({ clientIp: '203.0.113.9', country: 'CN', status: 500 }));
  t.same((await rig.events()), []);
});

t.test('hostnames are separate; owners see only theirs; the window and limit of list()', async (t) => {
  const repos = freshRepos(t);
  const rig = new Rig(repos, t);
  const start = rig.now;
  await rig.bucket(100, () => ({ clientIp: '203.0.113.9' }), 'a.example.com');
  rig.now -= W;
  await rig.bucket(100, () => ({ clientIp: '203.0.113.9', ownerId: 'owner-2' }), 'b.example.com');
  t.same((await rig.events()).map((e) => e.hostname), ['a.example.com']);
  t.same((await rig.events('b.example.com')), []);
  t.same((await repos.anomalies.list({ ownerId: 'owner-2', fromMs: 0, toMs: rig.now, limit: 10 })).map((e) => e.hostname), ['b.example.com']);

  const endAt = rig.now;
  await rig.bucket(100, () => ({}), 'a.example.com');
  const q = { ownerId: 'owner-1', limit: 10 };
  t.equal((await repos.anomalies.list({ ...q, fromMs: start, toMs: start + 1 })).length, 1, 'overlaps a window inside it');
  t.equal((await repos.anomalies.list({ ...q, fromMs: endAt, toMs: endAt + W })).length, 0, 'ended by the window start');
  t.equal((await repos.anomalies.list({ ...q, fromMs: 0, toMs: start })).length, 0, 'started at the window end');
  t.equal((await repos.anomalies.list({ ...q, fromMs: 0, toMs: endAt + W, limit: 0 })).length, 0, 'limit');
  t.same((await repos.anomalies.list({ ownerId: 'owner-2', fromMs: 0, toMs: rig.now, limit: 10 })).map((e) => e.endedAt), [endAt], 'the clock ended b.example.com\'s too: its next bucket was empty');
  t.same((await repos.anomalies.open()), []);
});

t.test('memory is bounded: 1e5 distinct hostnames, a small LRU; the open event of a dropped hostname is ended', async (t) => {
  const repos = freshRepos(t);
  const rig = new Rig(repos, t, 1000);
  const start = rig.now;
  await rig.bucket(100, () => ({ clientIp: '203.0.113.9' }), 'watched.example.com');
  t.equal((await repos.anomalies.open()).length, 1);

  for (let i = 0; i < 100_000; i++) {
    rig.monitor.observe({ time: rig.now, hostname: `h${i}.example.com`, ownerId: 'o', clientIp: '192.0.2.1', country: 'US', status: 200, decision: 'allowed', bytesOut: 1 });
  }
  const stats = rig.monitor.stats();
  t.equal(stats.hostnames, 1000, 'never more than maxHostnames');
  t.equal(stats.observed, 100_100);
  await rig.monitor.evaluate();
  t.same((await repos.anomalies.list({ ownerId: 'owner-1', fromMs: 0, toMs: rig.now + W, limit: 10 })).map((e) => [e.startedAt, e.endedAt]), [[start, start + W]], 'ended where its series stopped');
  t.same(rig.warnings, []);
});

t.test('observe() never throws on odd input', async (t) => {
  const rig = new Rig(freshRepos(t), t);
  const odd = [
    { time: Number.NaN, hostname: 'x', ownerId: 'o', clientIp: '', country: '', status: 0, decision: '', bytesOut: 0 },
    { time: T0, hostname: '', ownerId: 'o', clientIp: '1.2.3.4', country: 'US', status: 200, decision: 'allowed', bytesOut: 1 },
    { time: T0, hostname: 'y', ownerId: 'o', clientIp: 'garbage', country: 'ÄÖ', status: Number.NaN, decision: 'allowed', bytesOut: Number.POSITIVE_INFINITY },
  ] as ObservedRequest[];
  for (const r of odd) t.doesNotThrow(() => rig.monitor.observe(r));
  t.same(rig.monitor.stats(), { hostnames: 1, openEvents: 0, observed: 1, dropped: 2 });
});
