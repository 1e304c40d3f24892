// The node's cache of hot rows (src/db/metadata-cache.ts) over a feed driven by the test: what it keeps,
// what a change note drops, that a hit waits for the feed's confirmation (and a note that comes before
// it counts), that a load overtaken by a change or a reset keeps nothing, that nothing is served or
// kept while the feed is not live, its byte bound, and that what it hands out cannot be changed by a
// caller. test/contract/metadata-cache.test.ts runs it on a real PostgreSQL.
import t from 'tap';
import { MetadataCache, type CachedObject, type RowChangeListener, type RowChangeSource } from '../../src/db/metadata-cache.js';
import type { Bucket } from '../../src/db/repos/buckets.js';
import type { ObjectRecord } from '../../src/db/repos/objects.js';

class TestFeed implements RowChangeSource {
  live = true;
  readonly leaseMs = 10;
  /** Whether every note so far has been confirmed applied (a round trip ended). */
  confirmed = true;
  private waiting: Array<() => void> = [];
  listener: RowChangeListener | undefined;
  subscribe(listener: RowChangeListener): void {
    this.listener = listener;
  }
  confirmedAfter(): boolean {
    return this.live && this.confirmed;
  }
  confirmAfter(): Promise<void> {
    if (this.confirmed || !this.live) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  /** A round trip ends: whatever notes were sent before it have been handed to the listener. */
  confirm(): void {
    this.confirmed = true;
    for (const resolve of this.waiting.splice(0)) resolve();
  }
  lose(): void {
    this.live = false;
    this.listener?.reset();
    this.confirm();
  }
  regain(): void {
    this.listener?.reset();
    this.live = true;
  }
}

function record(bucketId: string, key: string, etag: string): ObjectRecord {
  return {
    bucketId,
    key,
    blobId: `blob-${etag}`,
    size: 4,
    etag,
    sha256: 'x',
    checksumAlgorithm: null,
    checksumValue: null,
    checksumType: null,
    contentType: 'text/plain',
    contentEncoding: null,
    contentDisposition: null,
    contentLanguage: null,
    cacheControl: null,
    expires: null,
    userMetadata: { a: 'b' },
    lastModified: 1,
    tagging: [['k', 'v']],
    versionId: null,
  };
}

/** A database of one table, counting reads; `gate` holds a read's answer until released. */
class Rows {
  readonly objects = new Map<string, CachedObject>();
  reads = 0;
  gate: Promise<void> | undefined;

  load(bucketId: string, key: string): () => Promise<CachedObject | undefined> {
    return async () => {
      this.reads++;
      const value = this.objects.get(`${bucketId}/${key}`);
      const answer = value && { rec: { ...value.rec }, ...(value.inline ? { inline: value.inline } : {}) };
      if (this.gate) await this.gate;
      return answer;
    };
  }

  put(bucketId: string, key: string, etag: string, inline?: Buffer): void {
    this.objects.set(`${bucketId}/${key}`, { rec: record(bucketId, key, etag), ...(inline ? { inline } : {}) });
  }
}

function setup(maxBytes = 1 << 20): { feed: TestFeed; cache: MetadataCache; rows: Rows } {
  const feed = new TestFeed();
  return { feed, cache: new MetadataCache(feed, { maxBytes }), rows: new Rows() };
}

t.test('a found row and a missing one are both kept until a note names them', async (t) => {
  const { feed, cache, rows } = setup();
  rows.put('b1', 'k', 'e1');
  t.equal((await cache.object('b1', 'k', rows.load('b1', 'k')))?.rec.etag, 'e1');
  t.equal((await cache.object('b1', 'k', rows.load('b1', 'k')))?.rec.etag, 'e1');
  t.equal(await cache.object('b1', 'gone', rows.load('b1', 'gone')), undefined);
  t.equal(await cache.object('b1', 'gone', rows.load('b1', 'gone')), undefined);
  t.equal(rows.reads, 2, 'one read per key');
  t.match(cache.stats, { hits: 2, misses: 2 });

  rows.put('b1', 'k', 'e2');
  rows.put('b1', 'gone', 'e3');
  feed.listener?.changed({ kind: 'object', bucketId: 'b1', key: 'k' });
  feed.listener?.changed({ kind: 'object', bucketId: 'b1', key: 'gone' });
  t.equal((await cache.object('b1', 'k', rows.load('b1', 'k')))?.rec.etag, 'e2', 'read again after its note');
  t.equal((await cache.object('b1', 'gone', rows.load('b1', 'gone')))?.rec.etag, 'e3', 'a cached miss goes too');
  t.equal(rows.reads, 4);
});

t.test('a bucket-wide note drops that bucket\'s keys only; "all" drops everything', async (t) => {
  const { feed, cache, rows } = setup();
  for (const [b, k] of [['b1', 'x'], ['b1', 'y'], ['b10', 'x'], ['b2', 'x']] as const) {
    rows.put(b, k, 'e');
    await cache.object(b, k, rows.load(b, k));
  }
  t.equal(rows.reads, 4);
  feed.listener?.changed({ kind: 'bucket-objects', bucketId: 'b1' });
  for (const [b, k] of [['b1', 'x'], ['b1', 'y'], ['b10', 'x'], ['b2', 'x']] as const) await cache.object(b, k, rows.load(b, k));
  t.equal(rows.reads, 6, "b1's two keys read again, not b10's (a prefix of the id is not the bucket)");
  feed.listener?.changed({ kind: 'all' });
  for (const [b, k] of [['b1', 'x'], ['b2', 'x']] as const) await cache.object(b, k, rows.load(b, k));
  t.equal(rows.reads, 8);
});

t.test('buckets by name, dropped by their note', async (t) => {
  const { feed, cache } = setup();
  let reads = 0;
  let isPublic = false;
  const load = async (): Promise<Bucket | undefined> => {
    reads++;
    return { id: 'b1', name: 'pics', ownerId: 'u', region: 'r', createdAt: 0, public: isPublic, versioning: null };
  };
  t.equal((await cache.bucket('pics', load))?.public, false);
  t.equal((await cache.bucket('pics', load))?.public, false);
  t.equal(reads, 1);
  isPublic = true;
  feed.listener?.changed({ kind: 'bucket', name: 'other' });
  t.equal((await cache.bucket('pics', load))?.public, false, 'a note for another name changes nothing');
  feed.listener?.changed({ kind: 'bucket', name: 'pics' });
  t.equal((await cache.bucket('pics', load))?.public, true);
  t.equal(reads, 2);
});

t.test('a hit is served only under a confirmation; a note that arrives before it is applied first', async (t) => {
  const { feed, cache, rows } = setup();
  rows.put('b1', 'k', 'v1');
  await cache.object('b1', 'k', rows.load('b1', 'k'));
  // The feed has not confirmed the notes of the last lease (another node's write may be in flight).
  feed.confirmed = false;
  const unchanged = cache.object('b1', 'k', rows.load('b1', 'k'));
  feed.confirm();
  t.equal((await unchanged)?.rec.etag, 'v1', 'no note came: the entry is served');
  t.equal(rows.reads, 1, 'without a read');
  t.equal(cache.stats.waits, 1);

  feed.confirmed = false;
  const changed = cache.object('b1', 'k', rows.load('b1', 'k'));
  // A write acknowledged elsewhere: its note comes before the confirmation's answer.
  rows.put('b1', 'k', 'v2');
  feed.listener?.changed({ kind: 'object', bucketId: 'b1', key: 'k' });
  feed.confirm();
  t.equal((await changed)?.rec.etag, 'v2', 'the entry the note dropped is read again');
  t.equal(rows.reads, 2);

  feed.confirmed = false;
  const lost = cache.object('b1', 'k', rows.load('b1', 'k'));
  feed.lose();
  t.equal((await lost)?.rec.etag, 'v2', 'the feed lost while waiting: read from the database');
  t.equal(rows.reads, 3);
});

t.test('a load overtaken by a note of its key is answered but not kept', async (t) => {
  const { feed, cache, rows } = setup();
  rows.put('b1', 'k', 'old');
  let release!: () => void;
  rows.gate = new Promise((resolve) => (release = resolve));
  const first = cache.object('b1', 'k', rows.load('b1', 'k'));
  const joined = cache.object('b1', 'k', rows.load('b1', 'k'));
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(rows.reads, 1, 'concurrent misses share one read');
  // The row changes and its note arrives while the read (which saw the old row) is still in flight.
  rows.put('b1', 'k', 'new');
  feed.listener?.changed({ kind: 'object', bucketId: 'b1', key: 'k' });
  // A read that starts after the note does not join the stale load.
  const after = cache.object('b1', 'k', rows.load('b1', 'k'));
  rows.gate = undefined;
  release();
  t.equal((await first)?.rec.etag, 'old', 'the callers of before the change get what was read');
  t.equal((await joined)?.rec.etag, 'old');
  t.equal((await after)?.rec.etag, 'new', 'a read begun after the note gets the new row');
  t.equal((await cache.object('b1', 'k', rows.load('b1', 'k')))?.rec.etag, 'new', 'and the old answer was never kept');
});

t.test('a load overtaken by a reset is not kept; a failed load is not kept', async (t) => {
  const { feed, cache, rows } = setup();
  rows.put('b1', 'k', 'old');
  let release!: () => void;
  rows.gate = new Promise((resolve) => (release = resolve));
  const pending = cache.object('b1', 'k', rows.load('b1', 'k'));
  await new Promise((resolve) => setImmediate(resolve));
  feed.lose();
  feed.regain();
  rows.put('b1', 'k', 'new');
  rows.gate = undefined;
  release();
  t.equal((await pending)?.rec.etag, 'old');
  t.equal((await cache.object('b1', 'k', rows.load('b1', 'k')))?.rec.etag, 'new', 'read again: the load began before the reset');

  const failing = async (): Promise<CachedObject | undefined> => {
    throw new Error('connection refused');
  };
  await t.rejects(cache.object('b1', 'f', failing), /connection refused/);
  rows.put('b1', 'f', 'ok');
  t.equal((await cache.object('b1', 'f', rows.load('b1', 'f')))?.rec.etag, 'ok');
});

t.test('while the feed is not live nothing is served or kept; regained, it starts empty', async (t) => {
  const { feed, cache, rows } = setup();
  rows.put('b1', 'k', 'v1');
  await cache.object('b1', 'k', rows.load('b1', 'k'));
  t.equal(rows.reads, 1);
  feed.lose();
  t.equal(cache.serving, false);
  rows.put('b1', 'k', 'v2');
  t.equal((await cache.object('b1', 'k', rows.load('b1', 'k')))?.rec.etag, 'v2', 'read from the database');
  t.equal((await cache.object('b1', 'k', rows.load('b1', 'k')))?.rec.etag, 'v2');
  t.equal(rows.reads, 3, 'every read goes to the database');
  // A change made while the feed was down (its note lost): regained, the cache holds nothing older.
  rows.put('b1', 'k', 'v3');
  feed.regain();
  t.equal(cache.serving, true);
  t.equal((await cache.object('b1', 'k', rows.load('b1', 'k')))?.rec.etag, 'v3');
  t.equal((await cache.object('b1', 'k', rows.load('b1', 'k')))?.rec.etag, 'v3');
  t.equal(rows.reads, 4, 'kept again once live');
  t.equal(cache.stats.resets, 2, 'lost and regained: two resets');
});

t.test('bounded by bytes: inline bodies count, the least recently used go first', async (t) => {
  const { cache, rows } = setup(64 * 1024);
  const body = Buffer.alloc(4096, 1);
  for (let i = 0; i < 40; i++) {
    rows.put('b1', `k${i}`, `e${i}`, body);
    await cache.object('b1', `k${i}`, rows.load('b1', `k${i}`));
  }
  t.equal(rows.reads, 40);
  await cache.object('b1', 'k39', rows.load('b1', 'k39'));
  t.equal(rows.reads, 40, 'a recent one is kept');
  await cache.object('b1', 'k0', rows.load('b1', 'k0'));
  t.equal(rows.reads, 41, 'the first was pushed out: 40 x 4 KiB is more than 64 KiB');
  rows.put('b1', 'big', 'e', Buffer.alloc(16 * 1024));
  await cache.object('b1', 'big', rows.load('b1', 'big'));
  await cache.object('b1', 'big', rows.load('b1', 'big'));
  t.equal(rows.reads, 43, 'an entry above an eighth of the bound is not kept');
});

t.test('what is handed out cannot be changed by a caller', async (t) => {
  const { cache, rows } = setup();
  rows.put('b1', 'k', 'e');
  await cache.object('b1', 'k', rows.load('b1', 'k'));
  const got = await cache.object('b1', 'k', rows.load('b1', 'k'));
  t.ok(got && Object.isFrozen(got) && Object.isFrozen(got.rec) && Object.isFrozen(got.rec.userMetadata) && Object.isFrozen(got.rec.tagging));
  t.throws(() => {
    (got as { rec: { etag: string } }).rec.etag = 'changed';
  }, TypeError);
});
