// The state a cluster shares through its supervisor (src/cluster/shared-*.ts): the real channels
// (WorkerChannel, SupervisorChannel) over an in-memory transport that delivers later and as JSON, as
// node's IPC does, two "workers" and the supervisor's side as runSupervisor wires it. Counts are exact
// across workers; without a supervisor the edge limiter serves and the API limits count locally; one
// monitor sees both workers' traffic; a blob goes only once no worker holds it and its grace is over.
import t from 'tap';
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import type { Worker as ClusterWorker } from 'node:cluster';
import type { FastifyRateLimitStore } from '@fastify/rate-limit';
import { SupervisorChannel, WorkerChannel } from '../../src/cluster/ipc.js';
import { serveSharedState } from '../../src/cluster/shared-state.js';
import { remoteRateLimitStore, RemoteEdgeLimiter, ApiLimitCounters, type Counter } from '../../src/cluster/shared-limits.js';
import { MonitorForwarder } from '../../src/cluster/shared-monitor.js';
import { ClusterLeases, workerLeases } from '../../src/cluster/shared-leases.js';
import { ClientLimiter } from '../../src/proxy/limiter.js';
import { EdgeMonitor, type ObservedRequest } from '../../src/proxy/detect/monitor.js';
import type { RateLimitRule } from '../../src/db/repos/hostname-model.js';
import { BlobLeases } from '../../src/storage/blob-leases.js';
import { openDatabase } from '../../src/db/open.js';
import { createRepos } from '../../src/db/repos/index.js';
import { tempDir } from '../helpers/temp-data.js';

/** Records what would be logged (the log is not under test). */
class Log {
  readonly warned: string[] = [];
  readonly infos: string[] = [];
  warn(_obj: unknown, msg?: string): void {
    this.warned.push(msg ?? '');
  }
  info(msg: unknown): void {
    this.infos.push(String(msg));
  }
}

interface Link {
  channel: WorkerChannel;
  /** The worker's process ends (the supervisor sees its exit; its channel is gone). */
  exit(): void;
}

/** One worker's end of an IPC-like pipe to `sup`: asynchronous, ordered, JSON on the wire. */
function link(sup: SupervisorChannel, slot: number): Link {
  let up = true;
  const deliver = (to: EventEmitter, msg: unknown): boolean => {
    const wire = JSON.stringify(msg);
    setImmediate(() => to.emit('message', JSON.parse(wire)));
    return true;
  };
  const workerEnd = Object.assign(new EventEmitter(), { send: (msg: unknown) => deliver(supEnd, msg), isConnected: () => up });
  const supEnd = Object.assign(new EventEmitter(), { send: (msg: unknown) => deliver(workerEnd, msg), isConnected: () => up });
  sup.attach(supEnd as unknown as ClusterWorker, slot);
  return {
    channel: new WorkerChannel(workerEnd, 2000),
    exit: () => {
      up = false;
      supEnd.emit('exit', 0, null);
    },
  };
}

/** A worker channel with no supervisor behind it. */
function orphan(): WorkerChannel {
  return new WorkerChannel(Object.assign(new EventEmitter(), { send: () => true, isConnected: () => false }), 2000);
}

function incr(store: FastifyRateLimitStore, key: string, timeWindow = 60_000, max = 3): Promise<Counter> {
  return new Promise((resolve, reject) => store.incr(key, (err, res) => (err || !res ? reject(err) : resolve(res)), timeWindow, max));
}

interface Cluster {
  sup: SupervisorChannel;
  limiter: ClientLimiter;
  monitor: EdgeMonitor;
  leases: BlobLeases;
  removed: string[];
  shared: ReturnType<typeof serveSharedState>;
  w1: Link;
  w2: Link;
}

function cluster(t: { teardown(fn: () => void): void }): Cluster {
  const db = openDatabase(join(tempDir(t), 'meta.db'));
  const monitor = new EdgeMonitor({
    repo: createRepos(db).anomalies,
    config: { bucketSeconds: 60, baselineBuckets: 12, minRequests: 10 },
    now: () => Date.now(),
    elapsed: () => performance.now(),
    log: new Log(),
  });
  t.teardown(() => {
    monitor.close();
    db.close();
  });
  const removed: string[] = [];
  const leases = new BlobLeases(async (id) => {
    removed.push(id);
  });
  const limiter = new ClientLimiter({ maxClients: 100 });
  const sup = new SupervisorChannel();
  const shared = serveSharedState(sup, { edgeLimiter: limiter, edgeMonitor: monitor, leases });
  t.teardown(() => shared.close());
  return { sup, limiter, monitor, leases, removed, shared, w1: link(sup, 1), w2: link(sup, 2) };
}

const RULE: RateLimitRule = { requestsPerSecond: 0.001, burst: 3, banAfter: 0, banWindowSeconds: 60, banSeconds: 60, maxBanSeconds: 3600 };

t.test('API limits: one count across workers, per limiter, as the plugin names them', async (t) => {
  const c = cluster(t);
  const log = new Log();
  const route = { routeInfo: { method: 'GET', url: '/api/v3/domains/search' } };
  const a = new (remoteRateLimitStore(c.w1.channel, log))({}).child(route as never);
  const b = new (remoteRateLimitStore(c.w2.channel, log))({}).child(route as never);
  const counts: number[] = [];
  for (const store of [a, b, a, b, a]) counts.push((await incr(store, 'key-1')).current);
  t.same(counts, [1, 2, 3, 4, 5], 'both workers count on one counter');
  t.equal((await incr(b, 'key-2')).current, 1, 'another key has its own');

  const other = new (remoteRateLimitStore(c.w1.channel, log))({}).child({ routeInfo: { method: 'POST', url: '/other' } } as never);
  t.equal((await incr(other, 'key-1')).current, 1, 'another route has its own counters');

  // createRateLimit's children have no route: named by the order they were made, the same in every worker.
  const rootA = new (remoteRateLimitStore(c.w1.channel, log))({});
  const rootB = new (remoteRateLimitStore(c.w2.channel, log))({});
  const [ipA, accountA] = [rootA.child({ routeInfo: {} } as never), rootA.child({ routeInfo: {} } as never)];
  const [ipB, accountB] = [rootB.child({ routeInfo: {} } as never), rootB.child({ routeInfo: {} } as never)];
  t.equal((await incr(ipA, 'x')).current, 1);
  t.equal((await incr(ipB, 'x')).current, 2, "the first limiter of each worker is one");
  t.equal((await incr(accountB, 'x')).current, 1, 'the second is another');
  t.equal((await incr(accountA, 'x')).current, 2);
  t.same(log.warned, [], 'nothing went wrong');
});

t.test('API limits: the fixed window is LocalStore’s (ttl counts down, a new window starts at 1)', async (t) => {
  const counters = new ApiLimitCounters();
  const body = (timeWindow: number) => ({ limiter: 'GET /x', continueExceeding: false, exponentialBackoff: false, cache: null, key: 'k', timeWindow, max: 1 });
  const first = await counters.count('incr', body(60_000));
  t.equal(first.current, 1);
  t.ok(first.ttl > 0 && first.ttl <= 60_000);
  t.equal((await counters.count('read', body(60_000))).current, 1, 'a read does not count');
  t.equal((await counters.count('incr', body(60_000))).current, 2);
  t.equal((await counters.count('incr', body(0))).current, 1, 'a window that has ended starts over');
  await t.rejects(counters.count('incr', { limiter: 'x' }), /malformed/);
  await t.rejects(counters.count('incr', null), /malformed/);
  t.equal(counters.size, 1);
});

t.test('API limits: windows are durations on the monotonic clock, whatever the wall clock does (patches/@fastify+rate-limit)', async (t) => {
  const counters = new ApiLimitCounters();
  const body = { limiter: 'GET /x', continueExceeding: false, exponentialBackoff: false, cache: null, key: 'k', timeWindow: 60_000, max: 1 };
  const wall = Date.now;
  t.teardown(() => (Date.now = wall));
  t.equal((await counters.count('incr', body)).current, 1);
  Date.now = () => wall() - 3_600_000;
  const back = await counters.count('incr', body);
  t.equal(back.current, 2, 'stepped an hour back: the same window');
  t.ok(back.ttl <= 60_000, `and it ends when it would have (ttl ${back.ttl} ms), not an hour later`);
  Date.now = () => wall() + 3_600_000;
  t.equal((await counters.count('incr', body)).current, 3, 'stepped an hour forward: still the same window, not a new one');
});

t.test('API limits without a supervisor: counted in the worker alone, logged once', async (t) => {
  const log = new Log();
  const store = new (remoteRateLimitStore(orphan(), log))({}).child({ routeInfo: { method: 'GET', url: '/x' } } as never);
  t.equal((await incr(store, 'k')).current, 1);
  t.equal((await incr(store, 'k')).current, 2, 'still limited: a local count');
  t.equal(log.warned.length, 1, 'one warning for the outage');
});

t.test('the edge limiter: one bucket across workers; served when the supervisor does not answer', async (t) => {
  const c = cluster(t);
  const log = new Log();
  const l1 = new RemoteEdgeLimiter(c.w1.channel, log);
  const l2 = new RemoteEdgeLimiter(c.w2.channel, log);
  const results = [];
  for (const l of [l1, l2, l1, l2, l1, l2]) results.push(await l.take('host-1', '203.0.113.7', RULE));
  t.same(results.map((r) => r.ok), [true, true, true, false, false, false], 'a burst of 3 is 3 across workers');
  t.same(results[3], { ok: false, reason: 'rate-limited', retryAfterSeconds: 1000 });
  t.same(await l2.take('host-1', '203.0.113.8', RULE), { ok: true }, 'another client has its own bucket');
  await t.rejects(c.w1.channel.request('limits.edge.take', { scope: 'h', ip: '1.2.3.4', rule: { burst: 'x' } }), /malformed/);

  const lonely = new RemoteEdgeLimiter(orphan(), log);
  t.same(await lonely.take('host-1', '203.0.113.7', RULE), { ok: true }, 'fails open');
  t.same(await lonely.take('host-1', '203.0.113.7', RULE), { ok: true });
  t.equal(log.warned.length, 1, 'one warning for the outage');
});

t.test('one anomaly monitor sees every worker’s traffic', async (t) => {
  const c = cluster(t);
  const log = new Log();
  const f1 = new MonitorForwarder(c.w1.channel, log);
  const f2 = new MonitorForwarder(c.w2.channel, log);
  const r = (clientIp: string): ObservedRequest => ({
    time: Date.now(),
    hostname: 'app.example.com',
    ownerId: 'u1',
    clientIp,
    country: 'US',
    status: 200,
    decision: 'allowed',
    bytesOut: 10,
  });
  for (let i = 0; i < 3; i++) f1.observe(r('203.0.113.1'));
  for (let i = 0; i < 2; i++) f2.observe(r('203.0.113.2'));
  await f2.evaluate();
  await f1.evaluate();
  t.same(c.monitor.stats(), { hostnames: 1, openEvents: 0, observed: 5, dropped: 0 }, 'the batches reached the one monitor');
  c.w1.channel.note('monitor.observed', [{ hostname: '', time: 'x' }, 'junk']);
  await f1.evaluate();
  t.equal(c.monitor.stats().dropped, 1, 'a malformed record is dropped, not fatal');
  const lonely = new MonitorForwarder(orphan(), log);
  lonely.observe(r('203.0.113.3'));
  await lonely.evaluate();
  t.equal(log.warned.length, 1, 'an evaluation without a supervisor is logged, not thrown');
  f1.close();
  f2.close();
});

t.test('blob removal waits for every worker’s lease, then the grace', async (t) => {
  const removed: string[] = [];
  const leases = new BlobLeases(async (id) => {
    removed.push(id);
  });
  const timers: (() => void)[] = [];
  const cl = new ClusterLeases(leases, 2000, (_ms, fn) => {
    timers.push(fn);
    return { cancel: () => undefined };
  });
  cl.held(1, ['a', 'b']);
  cl.held(2, ['a']);
  cl.held(1, ['a']);
  t.equal(cl.heldBy(1), 2, 'a repeated note is one hold');
  await cl.remove('a');
  await cl.remove('c');
  t.same(removed, [], 'nothing goes before its grace');
  t.ok(leases.isLeased('a'), 'the blob collector sees the workers’ leases');
  for (const fire of timers.splice(0)) fire();
  t.same(removed, ['c'], 'an unheld blob goes when its grace is over');
  cl.freed(1, ['a']);
  t.same(removed, ['c'], 'worker 2 still streams a');
  cl.workerExited(2);
  t.same(removed, ['c', 'a'], 'a worker that exited holds nothing');
  cl.freed(2, ['a']);
  t.same(removed, ['c', 'a'], 'a late note changes nothing');

  await cl.remove('b');
  cl.freed(1, ['b']);
  t.same(removed, ['c', 'a'], 'the grace holds b after its last lease');
  cl.close();
  t.same(removed, ['c', 'a', 'b'], 'at close (the workers have stopped), pending removals go');
  await t.rejects(cl.remove(''), /malformed/);
});

t.test('workers report first and last leases over the channel; removal is the supervisor’s', async (t) => {
  const c = cluster(t);
  const log = new Log();
  const mk = (l: Link): BlobLeases => {
    const w = workerLeases(l.channel, log);
    return new BlobLeases(w.remove, w.observer);
  };
  const reader = mk(c.w1);
  const writer = mk(c.w2);
  const lease = reader.acquire(['blob-1']);
  // A round trip on the reader's channel: its earlier note has arrived.
  await c.w1.channel.request('monitor.evaluate', null);
  await writer.removeWhenFree('blob-1');
  t.ok(c.leases.isLeased('blob-1'));
  lease.release();
  await c.w1.channel.request('monitor.evaluate', null);
  t.same(c.removed, [], 'released, but within its grace');
  c.shared.close();
  t.same(c.removed, ['blob-1'], 'gone once free and past the grace');

  const again = reader.acquire(['blob-2']);
  await c.w1.channel.request('monitor.evaluate', null);
  await writer.removeWhenFree('blob-2');
  c.w1.exit();
  c.shared.close();
  t.same(c.removed, ['blob-1', 'blob-2'], 'the reader’s exit dropped its lease');
  again.release();

  // A small object's inline blob is read in its lookup's tick and dropped in the overwrite's transaction:
  // its leases stay in the worker (no message on the hot path of small GETs).
  const small = writer.acquire(['inline-0123456789abcdef']);
  await c.w2.channel.request('monitor.evaluate', null);
  t.notOk(c.leases.isLeased('inline-0123456789abcdef'), 'an inline blob lease is not reported');
  small.release();
  t.same(log.warned, []);
});
