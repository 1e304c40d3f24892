// The worker-thread hasher: the same digests as node:crypto and checksums.ts, whatever the sizes and
// chunk boundaries; no hash state left in the worker after a finished, failed or aborted upload.
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { PassThrough, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HashPool, RING_SLOTS, SLOT_BYTES } from '../../src/hashing/hash-pool.js';
import { UploadHasher, type UploadDigests } from '../../src/hashing/upload-hasher.js';
import { createChecksum, type ChecksumAlgorithm } from '../../src/hashing/checksums.js';
import { isS3Error } from '../../src/errors/s3-errors.js';

const MiB = 1024 * 1024;

function chunksOf(data: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; at += size) out.push(data.subarray(at, at + size));
  return out;
}

async function hashThrough(hasher: UploadHasher, chunks: Buffer[]): Promise<{ digests: UploadDigests; passed: Buffer }> {
  const seen: Buffer[] = [];
  await pipeline(
    Readable.from(chunks),
    hasher,
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        seen.push(chunk);
        cb();
      },
    }),
  );
  return { digests: await hasher.digests(), passed: Buffer.concat(seen) };
}

async function expected(data: Buffer, algo?: ChecksumAlgorithm): Promise<UploadDigests> {
  const out: UploadDigests = {
    size: data.length,
    md5Hex: createHash('md5').update(data).digest('hex'),
    sha256Hex: createHash('sha256').update(data).digest('hex'),
  };
  if (algo) {
    const c = createChecksum(algo);
    c.update(data);
    out.checksum = { algorithm: algo, value: await c.digestBase64() };
  }
  return out;
}

t.test('worker digests equal node:crypto for sizes around batch and ring boundaries', async (t) => {
  const pool = new HashPool({ threshold: 1 });
  t.teardown(() => pool.close());
  const data = randomBytes(RING_SLOTS * SLOT_BYTES * 2 + 12345);
  const sizes = [0, 1, 65535, SLOT_BYTES - 1, SLOT_BYTES, SLOT_BYTES + 1, RING_SLOTS * SLOT_BYTES, RING_SLOTS * SLOT_BYTES + 1, data.length];
  const chunkSizes = [1000, 65536, SLOT_BYTES + 7, 3 * SLOT_BYTES];
  const algos: (ChecksumAlgorithm | undefined)[] = [undefined, 'CRC32', 'CRC32C', 'CRC64NVME', 'SHA1', 'SHA256'];
  let i = 0;
  for (const size of sizes) {
    for (const chunkSize of chunkSizes) {
      const algo = algos[i++ % algos.length];
      const body = data.subarray(0, size);
      const hasher = new UploadHasher({ maxSize: data.length, pool, expectedSize: size, ...(algo ? { checksumAlgorithm: algo } : {}) });
      const { digests, passed } = await hashThrough(hasher, chunksOf(body, chunkSize));
      t.same(digests, await expected(body, algo), `${size} bytes in ${chunkSize}-byte chunks, ${algo ?? 'no checksum'}`);
      t.ok(passed.equals(body), 'the bytes pass through unchanged');
    }
  }
  t.equal(await pool.openSessions(), 0, 'every finished upload left the worker');
});

t.test('the threshold picks inline or worker; both agree', async (t) => {
  const pool = new HashPool({ threshold: MiB });
  t.teardown(() => pool.close());
  t.notOk(pool.wants(MiB - 1), 'below the threshold: inline');
  t.ok(pool.wants(MiB), 'at the threshold: worker');
  t.ok(pool.wants(undefined), 'unknown length: worker');
  const body = randomBytes(3 * MiB + 5);
  const inline = await hashThrough(new UploadHasher({ maxSize: 10 * MiB, checksumAlgorithm: 'CRC32C' }), chunksOf(body, 65536));
  const worker = await hashThrough(new UploadHasher({ maxSize: 10 * MiB, checksumAlgorithm: 'CRC32C', pool }), chunksOf(body, 65536));
  t.same(worker.digests, inline.digests);
});

t.test('an aborted upload frees its worker state, also with batches still queued', async (t) => {
  const pool = new HashPool({ threshold: 1 });
  t.teardown(() => pool.close());
  const hasher = new UploadHasher({ maxSize: 100 * MiB, pool });
  const source = new PassThrough();
  const done = pipeline(source, hasher, new Writable({ write: (_c, _e, cb) => cb() }));
  for (let i = 0; i < 6; i++) source.write(randomBytes(SLOT_BYTES));
  await new Promise((resolve) => setImmediate(resolve));
  source.destroy(new Error('client went away'));
  await t.rejects(done, /client went away/);
  // The abort was queued behind the upload's batches, and this query behind the abort (one thread, FIFO).
  t.equal(await pool.openSessions(), 0);
  await t.rejects(hasher.digests(), /before the upload stream finished/);
});

t.test('EntityTooLarge past maxSize, in worker mode, and no state left behind', async (t) => {
  const pool = new HashPool({ threshold: 1 });
  t.teardown(() => pool.close());
  const hasher = new UploadHasher({ maxSize: 2 * SLOT_BYTES, pool });
  const err = await hashThrough(hasher, chunksOf(randomBytes(3 * SLOT_BYTES), 65536)).catch((e: unknown) => e);
  t.ok(isS3Error(err) && err.code === 'EntityTooLarge', 'EntityTooLarge');
  t.equal(await pool.openSessions(), 0);
});

t.test('a closed pool fails the upload instead of hanging it', async (t) => {
  const pool = new HashPool({ threshold: 1 });
  const hasher = new UploadHasher({ maxSize: 10 * MiB, pool });
  await pool.close();
  t.notOk(pool.wants(undefined), 'a closed pool takes no new uploads');
  await t.rejects(hashThrough(hasher, chunksOf(randomBytes(2 * SLOT_BYTES), 65536)), /closed/);
});

t.test('two lanes: concurrent uploads keep their batches in order on their own thread', async (t) => {
  const pool = new HashPool({ threshold: 1, threads: 2 });
  t.teardown(() => pool.close());
  const bodies = Array.from({ length: 5 }, (_, i) => randomBytes(3 * SLOT_BYTES + i * 4099));
  const results = await Promise.all(
    bodies.map((body, i) => hashThrough(new UploadHasher({ maxSize: 10 * MiB, pool, checksumAlgorithm: i % 2 ? 'CRC32' : 'SHA256' }), chunksOf(body, 65536 + i))),
  );
  for (const [i, body] of bodies.entries()) t.same(results[i]?.digests, await expected(body, i % 2 ? 'CRC32' : 'SHA256'), `upload ${i}`);
  t.equal(await pool.openSessions(), 0, 'no state left on either thread');
});


t.test('the threads start with the first task, not with the pool; a pool never used closes at once', async (t) => {
  const idle = new HashPool({ threshold: 1 });
  t.equal(idle.started, false, 'no thread for a pool nothing was hashed in');
  t.equal(idle.queued, 0);
  t.equal(await idle.openSessions(), 0);
  await idle.close();
  t.equal(idle.started, false, 'closed without ever starting one');

  const pool = new HashPool({ threshold: 1 });
  t.teardown(() => pool.close());
  const data = randomBytes(3 * SLOT_BYTES + 123);
  // Several batches handed over before the threads exist: they run in order once they do.
  const { digests } = await hashThrough(new UploadHasher({ maxSize: Number.MAX_SAFE_INTEGER, pool, expectedSize: data.length }), chunksOf(data, 64 * 1024));
  t.equal(pool.started, true, 'started by the first upload');
  t.same(digests, await expected(data));
});
