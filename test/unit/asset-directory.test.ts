import t from 'tap';
import { AssetDirectory } from '../../src/cdn/asset-directory.js';
import type { AssetRecord } from '../../src/db/repos/index.js';

function record(id: string): AssetRecord {
  return {
    id, userId: 'u', projectId: null, deploymentId: null, blobId: 'b', crc32c: null, fileName: 'f.txt', contentType: 'text/plain', size: 1,
    sha256: 's', etag: '"e"', visibility: 'public', kind: 'file', activeContent: false, createdAt: 0, updatedAt: 0,
  };
}

t.test('found rows are reused for the TTL, misses are not cached, forget() drops at once', async (t) => {
  const rows = new Map<string, AssetRecord>();
  let reads = 0;
  const repos = { assets: { get: async (id: string) => (reads++, rows.get(id)) } } as unknown as ConstructorParameters<typeof AssetDirectory>[0];
  let now = 5000; // lru-cache treats a start time of 0 as "no TTL"
  const dir = new AssetDirectory(repos, { ttlMs: 1000, now: () => now });

  t.equal(await dir.byId('a'), undefined, 'unknown');
  rows.set('a', record('a'));
  t.equal((await dir.byId('a'))?.id, 'a', 'a miss was not remembered: the new row is found at once');
  t.equal(reads, 2);
  await dir.byId('a');
  t.equal(reads, 2, 'the found row is reused');
  now += 1001;
  await dir.byId('a');
  t.equal(reads, 3, 'read again after the TTL');
  rows.delete('a');
  dir.forget('a');
  t.equal(await dir.byId('a'), undefined, 'forgotten at once after a delete here');
});

t.test('concurrent misses share one load; a forget() during a load keeps its answer out of the cache', async (t) => {
  const rows = new Map<string, AssetRecord>([['a', record('a')]]);
  let reads = 0;
  const pending: Array<() => void> = [];
  const load = async (id: string): Promise<AssetRecord | undefined> => {
    reads++;
    const row = rows.get(id);
    await new Promise<void>((resolve) => pending.push(resolve));
    return row;
  };
  const release = (): void => {
    for (const go of pending.splice(0)) go();
  };
  const dir = new AssetDirectory({ assets: { get: load } } as unknown as ConstructorParameters<typeof AssetDirectory>[0], { ttlMs: 60_000, now: () => 5000 });

  const both = Promise.all([dir.byId('a'), dir.byId('a')]);
  release();
  t.same((await both).map((r) => r?.id), ['a', 'a']);
  t.equal(reads, 1, 'one load for both');

  dir.forget('a');
  const stale = dir.byId('a');
  // Deleted here while that read was in flight: its row must not be remembered.
  rows.delete('a');
  dir.forget('a');
  release();
  t.equal((await stale)?.id, 'a', 'the read in flight answers what it read');
  const fresh = dir.byId('a');
  release();
  t.equal(await fresh, undefined, 'the next lookup reads again and finds it gone');
  t.equal(reads, 3);

  const failing = new AssetDirectory({ assets: { get: async () => { throw new Error('db down'); } } } as unknown as ConstructorParameters<typeof AssetDirectory>[0]);
  await t.rejects(failing.byId('x'), /db down/, 'a failed load rejects');
  await t.rejects(failing.byId('x'), /db down/, 'and is not remembered');
});
