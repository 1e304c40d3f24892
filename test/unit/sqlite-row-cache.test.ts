// The row cache on SQLite (src/db/store/sqlite-store.ts SqliteRowChanges, src/db/metadata-cache.ts):
// two stores on one file stand for two workers of a data directory, each with its cache and the write
// lease, as db/data-dir.ts opens them. A write through one is read through the other as soon as it is
// acknowledged, though a worker looks at data_version at most once a lease; without the lease a worker
// whose last look was recent serves what it had.
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../../src/db/open.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import { SqliteStore } from '../../src/db/store/sqlite-store.js';
import { bucketChangesSeen, inlineBody, putInline, readsAfterWrites } from '../helpers/row-cache.js';
import { tempDir } from '../helpers/temp-data.js';

interface Worker {
  store: SqliteStore;
  repos: Repos;
}

/** How long a look serves in the test that shows what the lease prevents. */
const LONG_LOOK_MS = 1000;

function worker(t: Test, file: string, coherenceLease = true, leaseMs?: number): Worker {
  const store = new SqliteStore(openDatabase(file), { readCacheBytes: 1 << 20, coherenceLease, ...(leaseMs === undefined ? {} : { leaseMs }) });
  t.teardown(() => store.close());
  return { store, repos: createRepos(store) };
}

const put = (w: Worker, bucketId: string, key: string, text: string): Promise<void> => putInline(w, bucketId, key, text);
const body = (w: Worker, bucketId: string, key: string): Promise<string | undefined> => inlineBody(w, bucketId, key);

async function pair(t: Test, coherenceLease = true, leaseMs?: number): Promise<{ a: Worker; b: Worker; bucketId: string }> {
  const file = join(tempDir(t), 'meta.db');
  const a = worker(t, file, coherenceLease, leaseMs);
  const b = worker(t, file, coherenceLease, leaseMs);
  const userId = randomUUID();
  await a.store.run('INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)', [userId, 'u', 0]);
  const bucket = await a.repos.buckets.insert({ name: 'shared', ownerId: userId, region: 'us-east-1' });
  return { a, b, bucketId: bucket.id };
}

t.test('a write acknowledged by one worker is read by the other at once, both caches warm', async (t) => {
  const { a, b, bucketId } = await pair(t);
  const cache = b.store.readCache!;
  await put(a, bucketId, 'k', 'v0');
  // Twice: a worker's first look finds everything new (it has seen nothing) and drops what it holds.
  for (const w of [a, b, a, b]) t.equal(await body(w, bucketId, 'k'), 'v0');
  const hits = cache.stats.hits;
  for (let i = 0; i < 100; i++) t.equal(await body(b, bucketId, 'k'), 'v0');
  t.equal(cache.stats.hits, hits + 100, 'reads with nothing changed are hits');

  await readsAfterWrites(t, a, b, bucketId);
});

t.test('buckets by name: made public, versioned and deleted by one worker, seen by the other at once', async (t) => {
  const { a, b, bucketId } = await pair(t);
  await bucketChangesSeen(t, a, b, bucketId);
});

t.test('the lease is what makes it exact: without it a recent look serves the old row', async (t) => {
  // A look that serves for a second and writes not held for it: what the 1 ms lease prevents, shown
  // without racing the clock (a write on a loaded machine can take longer than 1 ms by itself).
  const { a, b, bucketId } = await pair(t, false, LONG_LOOK_MS);
  await put(a, bucketId, 'k', 'v0');
  // Twice: B's first look finds everything new (it has seen nothing); the second read caches the row.
  for (let i = 0; i < 2; i++) t.equal(await body(b, bucketId, 'k'), 'v0', 'B looks and caches');
  await put(a, bucketId, 'k', 'v1');
  t.equal(await body(b, bucketId, 'k'), 'v0', 'acknowledged by A, yet B, within its look, serves the old row');
  await sleep(LONG_LOOK_MS + 50);
  t.equal(await body(b, bucketId, 'k'), 'v1', 'past the look: B looks again and reads the write');
});
