// The shared rate-limit counters (db/repos/rate-limits.ts, migration 019) on both stores: fixed windows
// as @fastify/rate-limit's LocalStore counts them, continueExceeding, reads without a hit, pruning; and
// on PostgreSQL, hits from two nodes at once counted exactly. Also the plugin store over them
// (cluster/store-rate-limits.ts): its answers, and the child stores' names.
import t from 'tap';
import pino from 'pino';
import { RateLimitsRepo } from '../../src/db/repos/rate-limits.js';
import { storeRateLimitStore } from '../../src/cluster/store-rate-limits.js';
import { pgStore, sqliteStore, storeMatrix } from '../helpers/stores.js';

const stores = storeMatrix(t);
const WINDOW = 60_000;

stores.each('fixed windows, continueExceeding, read, prune', async (t, open) => {
  const store = await open(t);
  let now = 1_000_000;
  const repo = new RateLimitsRepo(store, () => now);
  const opts = { window: WINDOW, max: 3, restartWhenExceeded: false };
  t.same(await repo.read('GET /x', 'k'), { count: 0, ttl: 0 }, 'no window yet');
  t.same(await repo.hit('GET /x', 'k', opts), { count: 1, ttl: WINDOW });
  now += 1000;
  t.same(await repo.hit('GET /x', 'k', opts), { count: 2, ttl: WINDOW - 1000 });
  t.same(await repo.hit('GET /x', 'other', opts), { count: 1, ttl: WINDOW }, 'keys count apart');
  t.same(await repo.hit('POST /y', 'k', opts), { count: 1, ttl: WINDOW }, 'limiters count apart');
  t.same(await repo.read('GET /x', 'k'), { count: 2, ttl: WINDOW - 1000 }, 'a read does not count');
  now += WINDOW;
  t.same(await repo.hit('GET /x', 'k', opts), { count: 1, ttl: WINDOW }, 'a hit after the window starts a new one');
  const restart = { window: WINDOW, max: 1, restartWhenExceeded: true };
  t.same(await repo.hit('sign-in', 'ip', restart), { count: 1, ttl: WINDOW });
  now += 5000;
  t.same(await repo.hit('sign-in', 'ip', restart), { count: 2, ttl: WINDOW }, 'over the limit: the window starts again');
  now += 2 * WINDOW;
  t.equal(await repo.prune(), 4, 'every ended window removed');
  t.same(await repo.read('sign-in', 'ip'), { count: 0, ttl: 0 });

  // The clock stepped an hour back: a window that began "after now" is over, not open an hour longer.
  t.same(await repo.hit('GET /x', 'back', opts), { count: 1, ttl: WINDOW });
  now -= 3_600_000;
  t.same(await repo.read('GET /x', 'back'), { count: 0, ttl: 0 }, 'read: no window');
  t.same(await repo.hit('GET /x', 'back', opts), { count: 1, ttl: WINDOW }, 'a hit starts a new window of its length');
});

stores.each('a hit that read its clock before the one that started the window counts in it', async (t, open) => {
  // Concurrent hits wait for the counter's row lock: a statement that read its clock first may update after
  // one that read a later clock and started the window. That is the same window, not a stepped-back clock.
  const store = await open(t);
  const early = new RateLimitsRepo(store, () => 1_000_000);
  const late = new RateLimitsRepo(store, () => 1_000_250);
  const opts = { window: WINDOW, max: 3, restartWhenExceeded: false };
  t.same(await late.hit('GET /race', 'k', opts), { count: 1, ttl: WINDOW });
  t.same(await early.hit('GET /race', 'k', opts), { count: 2, ttl: WINDOW }, 'counted, its ttl no longer than the window');
  t.same(await early.read('GET /race', 'k'), { count: 2, ttl: WINDOW });
});

t.test('postgres: the windows count on the database\'s clock, not a node\'s', async (t) => {
  const server = await stores.postgres();
  const store = await pgStore(server, t, await server.database());
  const repo = new RateLimitsRepo(store);
  const opts = { window: WINDOW, max: 3, restartWhenExceeded: false };
  // A node whose wall clock is an hour off counts in the same windows: its clock is not asked.
  const wall = Date.now;
  t.teardown(() => (Date.now = wall));
  const first = await repo.hit('GET /db', 'k', opts);
  Date.now = () => wall() - 3_600_000;
  const second = await repo.hit('GET /db', 'k', opts);
  Date.now = () => wall() + 3_600_000;
  const third = await repo.hit('GET /db', 'k', opts);
  Date.now = wall;
  t.same([first.count, second.count, third.count], [1, 2, 3], 'one window across the steps');
  t.ok(third.ttl > 0 && third.ttl <= WINDOW, `ending when the database says (ttl ${third.ttl} ms)`);
  // The database host's clock stepped back: its window began "after now", so it is over.
  await store.run("UPDATE rate_limit_counters SET started_at = started_at + 3600000 WHERE limiter = 'GET /db'");
  t.same(await repo.read('GET /db', 'k'), { count: 0, ttl: 0 }, 'read: no window');
  t.equal((await repo.hit('GET /db', 'k', opts)).count, 1, 'a hit starts a new one');
  t.equal(await repo.prune(), 0, 'the new window is not pruned');
});

t.test('postgres: hits through two nodes at once are counted exactly', async (t) => {
  const server = await stores.postgres();
  const url = await server.database();
  const a = new RateLimitsRepo(await pgStore(server, t, url));
  const b = new RateLimitsRepo(await pgStore(server, t, url));
  const opts = { window: WINDOW, max: 30, restartWhenExceeded: false };
  const counts = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).hit('GET /z', 'key', opts)));
  t.same(counts.map((c) => c.count).sort((x, y) => x - y), Array.from({ length: 40 }, (_, i) => i + 1), 'each hit got its own number: 30 allowed, 10 refused');
});

t.test('the plugin store answers from the counters, one child per route', async (t) => {
  const store = await sqliteStore(t);
  const Store = storeRateLimitStore(new RateLimitsRepo(store), pino({ level: 'silent' }));
  const root = new Store({} as never);
  const route = root.child({ routeInfo: { method: 'GET', url: '/api/v3/x' } } as never);
  const call = (fn: (cb: (err: Error | null, r?: { current: number; ttl: number }) => void) => void): Promise<{ current: number; ttl: number } | undefined> =>
    new Promise((resolve, reject) => fn((err, r) => (err ? reject(err) : resolve(r))));
  t.match(await call((cb) => route.incr('key', cb, WINDOW, 2)), { current: 1 });
  t.match(await call((cb) => route.incr('key', cb, WINDOW, 2)), { current: 2 });
  t.match(await call((cb) => root.child({} as never).incr('key', cb, WINDOW, 2)), { current: 1 }, 'an unnamed limiter counts apart');
  const row = await store.get<{ limiter: string; count: number }>("SELECT limiter, count FROM rate_limit_counters WHERE limiter = 'GET /api/v3/x'");
  t.same(row, { limiter: 'GET /api/v3/x', count: 2 }, 'named by its route, as in every other node');
});
