// The row cache of nodes on one PostgreSQL (src/db/metadata-cache.ts, migration 005's notes, the change
// feed of src/db/store/pg-change-feed.ts): two stores on one database stand for two nodes. A write
// through one is read through the other as soon as it is acknowledged; a change made by any other
// client (plain SQL) reaches the cache by its note, whether it names one key, a long key, a whole
// bucket or everything; a load overtaken by a change keeps nothing; while the feed's connection is
// down nothing is served from the cache, and it starts empty when the connection is back. SQLite's row
// cache is test/unit/sqlite-row-cache.test.ts.
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
import { ObjectsRepo } from '../../src/db/repos/objects.js';
import type { MetadataCache } from '../../src/db/metadata-cache.js';
import type { PgStore } from '../../src/db/store/pg-store.js';
import type { SqlStore } from '../../src/db/store/types.js';
import { startPostgres } from '../helpers/postgres.js';
import { bucketChangesSeen, inlineBody, putInline, readsAfterWrites } from '../helpers/row-cache.js';
import { openPgStore } from '../../src/db/store/open-pg.js';
import { pgStore, sqliteStore } from '../helpers/stores.js';

const postgres = await startPostgres(t);

interface Node {
  store: PgStore;
  repos: Repos;
  cache: MetadataCache;
}

async function node(t: Test, url: string): Promise<Node> {
  const store = await pgStore(postgres, t, url);
  const cache = store.readCache;
  if (!cache) throw new Error('a PostgreSQL store has a row cache by default');
  return { store, repos: createRepos(store), cache };
}

/** Two nodes on a fresh database, a user, a bucket, and a plain client (another process's writes). */
async function cluster(t: Test): Promise<{ a: Node; b: Node; bucketId: string; sql: pg.Client; url: string }> {
  const url = await postgres.database();
  const a = await node(t, url);
  const b = await node(t, url);
  const userId = randomUUID();
  await a.repos.store.run('INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)', [userId, 'u', 0]);
  const bucket = await a.repos.buckets.insert({ name: 'shared', ownerId: userId, region: 'us-east-1' });
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  t.teardown(() => sql.end());
  return { a, b, bucketId: bucket.id, sql, url };
}

async function until(check: () => boolean | Promise<boolean>, what: string, boundMs = 10_000): Promise<void> {
  const end = Date.now() + boundMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${boundMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const put = (n: Node, bucketId: string, key: string, text: string): Promise<void> => putInline(n, bucketId, key, text);
const body = (n: Node, bucketId: string, key: string): Promise<string | undefined> => inlineBody(n, bucketId, key);

t.test('a write acknowledged on one node is read on the other at once, both caches warm', async (t) => {
  const { a, b, bucketId } = await cluster(t);
  await put(a, bucketId, 'k', 'v0');
  for (const n of [a, b]) t.equal(await body(n, bucketId, 'k'), 'v0');
  // The note of a's write reaches b some time after the write was acknowledged and drops what b loaded
  // meanwhile (a change note always wins over a load): b's row is cached to stay once it has come.
  const hitOnce = async (): Promise<boolean> => {
    const before = b.cache.stats.hits;
    await body(b, bucketId, 'k');
    return b.cache.stats.hits === before + 1;
  };
  await until(hitOnce, "b's row cached after a's note");
  const hits = b.cache.stats.hits;
  t.equal(await body(b, bucketId, 'k'), 'v0');
  t.equal(b.cache.stats.hits, hits + 1, 'a read with nothing changed is a hit, no round trip');

  await readsAfterWrites(t, a, b, bucketId);
  t.ok(b.cache.stats.invalidations > 0);
});

t.test('buckets by name: made public, versioned and deleted on one node, seen on the other at once', async (t) => {
  const { a, b, bucketId } = await cluster(t);
  await bucketChangesSeen(t, a, b, bucketId);
});

t.test('changes made by any client reach the cache by their notes: one key, a long key, a bucket, everything', async (t) => {
  const { b, bucketId, sql } = await cluster(t);
  const update = (key: string, type: string): Promise<unknown> =>
    sql.query('UPDATE objects SET content_type = $1 WHERE bucket_id = $2 AND key = $3', [type, bucketId, key]);
  const typeOn = async (key: string): Promise<string | null | undefined> => (await b.repos.objects.get(bucketId, key))?.contentType;

  await put(b, bucketId, 'plain', 'x');
  t.equal(await typeOn('plain'), 'text/plain');
  await update('plain', 'image/png');
  await until(async () => (await typeOn('plain')) === 'image/png', 'an UPDATE by another client');

  // 1024 bytes, each escaped as six in the note's JSON: still under NOTIFY's limit, one key's note.
  const long = '\u0001'.repeat(1024);
  await put(b, bucketId, long, 'x');
  t.equal(await typeOn(long), 'text/plain');
  const dropped = b.cache.stats.invalidations;
  await update(long, 'image/gif');
  await until(async () => (await typeOn(long)) === 'image/gif', 'the longest key');
  t.ok(b.cache.stats.invalidations > dropped);

  // One statement over more than 64 rows of a bucket: one note for the bucket.
  for (let i = 0; i < 70; i++) await put(b, bucketId, `bulk/${i}`, 'x');
  for (let i = 0; i < 70; i++) await typeOn(`bulk/${i}`);
  const resets = b.cache.stats.resets;
  await sql.query("UPDATE objects SET content_type = 'text/csv' WHERE bucket_id = $1 AND key LIKE 'bulk/%'", [bucketId]);
  await until(async () => (await typeOn('bulk/69')) === 'text/csv', 'a bulk UPDATE');
  for (let i = 0; i < 70; i++) t.equal(await typeOn(`bulk/${i}`), 'text/csv');
  t.equal(b.cache.stats.resets, resets, 'a bucket-wide note is not a reset');

  // TRUNCATE names nothing: everything goes. Waited for by its reset: the row's absence alone can be
  // read from the database before the note arrives, when the row had already left the cache.
  await sql.query('TRUNCATE objects CASCADE');
  await until(() => b.cache.stats.resets > resets, 'a TRUNCATE: a reset');
  t.equal(await typeOn('plain'), undefined, 'the row is gone');
});

t.test('a load that a change overtakes is answered but not kept', async (t) => {
  const { a, b, bucketId } = await cluster(t);
  await put(a, bucketId, 'raced', 'old');
  const direct = new ObjectsRepo(b.store);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  // B reads the row (the old one), then is held before the answer reaches the cache.
  let read = false;
  const slow = b.cache.object(bucketId, 'raced', async () => {
    const value = await direct.getWithInline(bucketId, 'raced');
    read = true;
    await gate;
    return value;
  });
  await until(() => read, 'the slow read');
  const dropped = b.cache.stats.invalidations;
  await put(a, bucketId, 'raced', 'new');
  await until(() => b.cache.stats.invalidations > dropped, "the change's note on B");
  release();
  t.equal((await slow)?.inline?.toString(), 'old', 'its caller gets what it read');
  t.equal(await body(b, bucketId, 'raced'), 'new', 'the old answer was not kept');
});

t.test('the feed lost: nothing served from the cache; back: everything dropped, then served again', async (t) => {
  const { a, b, bucketId, sql, url } = await cluster(t);
  const db = new URL(url).pathname.slice(1);
  await put(a, bucketId, 'k', 'v1');
  t.equal(await body(b, bucketId, 'k'), 'v1');
  t.equal(await body(b, bucketId, 'k'), 'v1');
  // No new connection to this database for a while (the pools keep the ones they have), and the feeds' cut.
  await postgres.admin(`ALTER DATABASE ${db} ALLOW_CONNECTIONS false`);
  let allowed = false;
  t.teardown(async () => {
    if (!allowed) await postgres.admin(`ALTER DATABASE ${db} ALLOW_CONNECTIONS true`);
  });
  const resets = b.cache.stats.resets;
  await postgres.admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 's3edge-changes' AND datname = $1", [db]);
  await until(() => !b.cache.serving && !a.cache.serving, 'the feeds seen lost');
  // A change whose note nobody hears: the cache must not answer with what it had.
  await sql.query("UPDATE inline_blobs SET data = 'v2' WHERE blob_id = (SELECT blob_id FROM objects WHERE bucket_id = $1 AND key = 'k')", [bucketId]);
  await sql.query("UPDATE objects SET etag = 'v2' WHERE bucket_id = $1 AND key = 'k'", [bucketId]);
  const hits = b.cache.stats.hits;
  t.equal(await body(b, bucketId, 'k'), 'v2', 'read from the database while the feed is down');
  t.equal(await body(b, bucketId, 'k'), 'v2');
  t.equal(b.cache.stats.hits, hits, 'no hit while down');
  // A write while down is acknowledged without waiting for a note nobody would hear.
  await put(a, bucketId, 'other', 'w');
  await postgres.admin(`ALTER DATABASE ${db} ALLOW_CONNECTIONS true`);
  allowed = true;
  await until(() => b.cache.serving, 'the feed back');
  t.ok(b.cache.stats.resets >= resets + 2, 'reset when lost and when regained');
  t.equal(await body(b, bucketId, 'k'), 'v2');
  t.equal(await body(b, bucketId, 'k'), 'v2');
  t.equal(b.cache.stats.hits, hits + 1, 'served from the cache again');
  t.equal(await body(b, bucketId, 'other'), 'w');
});

t.test('metadataCacheBytes 0: no row cache on PostgreSQL either', async (t) => {
  const store = await openPgStore(await postgres.database(), { max: 2, readCacheBytes: 0, coherenceLease: false });
  t.teardown(() => store.close());
  t.equal(store.readCache, undefined);
  t.equal(createRepos(store).buckets.cachedReads, false);
});

t.test('SQLite: no row cache, the repositories read the database', async (t) => {
  const store: SqlStore = await sqliteStore(t);
  t.equal(store.readCache, undefined);
  t.equal(createRepos(store).buckets.cachedReads, false);
});
