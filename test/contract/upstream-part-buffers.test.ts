// The upstream backend's part buffers under the upload budget (src/storage/upstream/multipart-writer.ts),
// against a real moto server: the caller's reservation covers one buffer; the second is taken only if
// the budget has room right then, and given back when the stage ends. With no room the upload goes on
// with one buffer (never waiting while it holds one), and the bytes round-trip either way. A body
// longer than its declared size (sizeHint) fails without leaving anything upstream.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { S3Storage } from '../../src/storage/upstream/s3-storage.js';
import { UploadBudget } from '../../src/storage/upload-budget.js';
import { listKeys, startMoto } from '../helpers/moto.js';

const MiB = 1024 * 1024;
const PART = 5 * MiB;

const moto = await startMoto();
t.teardown(() => moto.stop());

/** Objects and pending multipart uploads under a prefix. */
async function leftovers(storage: S3Storage, prefix: string): Promise<string[]> {
  const keys = (await listKeys(moto)).filter((k) => k.startsWith(prefix));
  return [...keys, ...(await storage.listUploads()).map((u) => `upload:${u.key}`)];
}

async function collect(r: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** `data` in 256 KiB chunks. */
function body(data: Buffer): Readable {
  return Readable.from(
    (function* () {
      for (let at = 0; at < data.length; at += 256 * 1024) yield data.subarray(at, at + 256 * 1024);
    })(),
  );
}

t.test('with room, a second part buffer is borrowed while staging and given back after', async (t) => {
  const budget = new UploadBudget({ capBytes: 64 * MiB, waitMs: 1000 });
  const storage = new S3Storage({ ...moto.storageOptions('room/'), partBytes: PART, budget });
  t.teardown(() => storage.close());
  const first = await budget.reserve(PART);
  const data = randomBytes(3 * PART + 12345);
  const staged = await storage.stage(body(data));
  t.equal(budget.stats().peakBytes, 2 * PART, 'two buffers while the parts go up');
  t.equal(budget.stats().reservedBytes, PART, 'the second given back when the stage ends');
  first.release();
  await staged.commit();
  t.ok((await collect(await storage.read(staged.blobId))).equals(data), 'round-trips');
  await storage.remove(staged.blobId);
});

t.test('with a declared size, the second buffer holds only what is left of it', async (t) => {
  const budget = new UploadBudget({ capBytes: 64 * MiB, waitMs: 1000 });
  const storage = new S3Storage({ ...moto.storageOptions('tail/'), partBytes: PART, budget });
  t.teardown(() => storage.close());
  const first = await budget.reserve(PART);
  const data = randomBytes(PART + 512 * 1024);
  const staged = await storage.stage(body(data), { sizeHint: data.length });
  t.equal(budget.stats().peakBytes, PART + 512 * 1024, 'one part buffer and 512 KiB for the last part');
  first.release();
  t.equal(budget.stats().reservedBytes, 0);
  await staged.commit();
  t.ok((await collect(await storage.read(staged.blobId))).equals(data), 'round-trips');
  await storage.remove(staged.blobId);
  const longer = randomBytes(PART + 600 * 1024);
  await t.rejects(storage.stage(body(longer), { sizeHint: PART + 512 * 1024 }), { code: 'IncompleteBody' }, 'past the declared size');
  t.same(await leftovers(storage, 'tail/'), [], 'nothing left upstream');
});

t.test('with the budget spent, the upload goes on with its one buffer and never waits', async (t) => {
  // No deadline to speak of: a wait would fail the stage.
  const budget = new UploadBudget({ capBytes: PART, waitMs: 1 });
  const storage = new S3Storage({ ...moto.storageOptions('spent/'), partBytes: PART, budget });
  t.teardown(() => storage.close());
  const first = await budget.reserve(PART);
  const data = randomBytes(3 * PART + 777);
  const staged = await storage.stage(body(data));
  t.equal(budget.stats().reservedBytes, PART);
  t.same({ waits: budget.stats().waits, refusals: budget.stats().refusals }, { waits: 0, refusals: 0 }, 'nothing waited');
  first.release();
  await staged.commit();
  t.ok((await collect(await storage.read(staged.blobId))).equals(data), 'round-trips with one buffer');
  await storage.remove(staged.blobId);
});

t.test('a failed stage gives its second buffer back too', async (t) => {
  const budget = new UploadBudget({ capBytes: 64 * MiB, waitMs: 1000 });
  const storage = new S3Storage({ ...moto.storageOptions('fail/'), partBytes: PART, budget });
  t.teardown(() => storage.close());
  const data = randomBytes(3 * PART);
  const broken = Readable.from(
    (function* () {
      yield data.subarray(0, 2 * PART + 1);
      throw new Error('client went away');
    })(),
  );
  await t.rejects(storage.stage(broken), /client went away/);
  t.equal(budget.stats().reservedBytes, 0);
  t.same(await leftovers(storage, 'fail/'), [], 'nothing left upstream');
});

t.test('the first buffer is cut to the declared size; a longer body is IncompleteBody and leaves nothing', async (t) => {
  const storage = new S3Storage({ ...moto.storageOptions('hint/'), partBytes: PART });
  t.teardown(() => storage.close());
  t.equal(storage.stageBufferBytes(100_000), 100_000);
  t.equal(storage.stageBufferBytes(undefined), PART);
  t.equal(storage.stageBufferBytes(50 * MiB), PART);
  const data = randomBytes(300_000);
  const ok = await storage.stage(body(data), { sizeHint: data.length });
  await ok.commit();
  t.ok((await collect(await storage.read(ok.blobId))).equals(data));
  await storage.remove(ok.blobId);
  await t.rejects(storage.stage(body(data), { sizeHint: 100_000 }), { code: 'IncompleteBody' });
  t.same(await leftovers(storage, 'hint/'), [], 'nothing left upstream');
});
