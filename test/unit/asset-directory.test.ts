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
  const repos = { assets: { get: (id: string) => (reads++, rows.get(id)) } } as unknown as ConstructorParameters<typeof AssetDirectory>[0];
  let now = 5000; // lru-cache treats a start time of 0 as "no TTL"
  const dir = new AssetDirectory(repos, { ttlMs: 1000, now: () => now });

  t.equal(dir.byId('a'), undefined, 'unknown');
  rows.set('a', record('a'));
  t.equal(dir.byId('a')?.id, 'a', 'a miss was not remembered: the new row is found at once');
  t.equal(reads, 2);
  dir.byId('a');
  t.equal(reads, 2, 'the found row is reused');
  now += 1001;
  dir.byId('a');
  t.equal(reads, 3, 'read again after the TTL');
  rows.delete('a');
  dir.forget('a');
  t.equal(dir.byId('a'), undefined, 'forgotten at once after a delete here');
});
