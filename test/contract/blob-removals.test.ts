// Blob removals held for a grace period (db/repos/blob-removals.ts, storage/blob-removals.ts) on both
// stores, with real blobs on a real disk backend: a freed blob stays readable until due, then the
// removal round takes it; a later schedule wins; a failed removal stays recorded and is tried again.
import t from 'tap';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { BlobRemovalsRepo } from '../../src/db/repos/blob-removals.js';
import { BlobRemovals } from '../../src/storage/blob-removals.js';
import { DiskStorage } from '../../src/storage/disk.js';
import { storeMatrix } from '../helpers/stores.js';
import { tempDir } from '../helpers/temp-data.js';

const stores = storeMatrix(t);
const GRACE = 60_000;

stores.each('freed blobs are removed once due, not before', async (t, open) => {
  const store = await open(t);
  const repo = new BlobRemovalsRepo(store);
  const storage = new DiskStorage(join(tempDir(t), 'storage'));
  await storage.init();
  const blob = async (text: string): Promise<string> => {
    const staged = await storage.stage(Readable.from([Buffer.from(text.repeat(20_000))]));
    await staged.commit();
    return staged.blobId;
  };
  const readable = (id: string): Promise<boolean> => storage.read(id).then((s) => (s.destroy(), true), () => false);
  let now = 1_000_000;
  let failNext = false;
  const removals = new BlobRemovals({
    repo,
    storage: {
      remove: async (id) => {
        if (failNext) {
          failNext = false;
          throw new Error('upstream unavailable');
        }
        await storage.remove(id);
      },
    },
    now: () => now,
    log: pino({ level: 'silent' }),
    graceMs: GRACE,
  });
  const a = await blob('a');
  const b = await blob('b');
  await removals.schedule(a);
  now += GRACE / 2;
  await removals.schedule(b);
  t.equal(await removals.removeDue(), 0, 'nothing due yet');
  t.ok(await readable(a), 'a freed blob stays readable during the grace');
  now += GRACE / 2;
  t.equal(await removals.removeDue(), 1, 'the first one is due');
  t.notOk(await readable(a), 'and gone');
  t.ok(await readable(b));
  await removals.schedule(b);
  now += GRACE / 2;
  t.equal(await removals.removeDue(), 0, 'scheduled again: the later due time holds');
  now += GRACE / 2;
  failNext = true;
  t.equal(await removals.removeDue(), 0, 'a failed removal');
  t.same(await repo.due(now, 10), [b], 'stays recorded');
  t.equal(await removals.removeDue(), 1, 'and is done on the next round');
  t.notOk(await readable(b));
  t.same(await repo.due(now, 10), []);
});
