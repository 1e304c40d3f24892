// The StorageBackend contract. Every backend runs this suite: disk, and the upstream S3 backend
// against a real moto server (one per file, a key prefix per case).
import t from 'tap';
import { mkdtemp, readdir, rm, utimes, writeFile, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { DiskStorage } from '../../src/storage/disk.js';
import type { StorageBackend } from '../../src/storage/backend.js';
import { S3Storage } from '../../src/storage/upstream/s3-storage.js';
import { listKeys, startMoto, type RunningMoto } from '../helpers/moto.js';
import { request } from 'undici';
import { startServer, type RunningServer } from '../helpers/server.js';
import { RawS3 } from '../helpers/s3-client.js';
import { crc32c, md5Hex } from '../helpers/checksums.js';
import type { BlobDigest, BlobDigestMismatch, ReadVerification } from '../../src/storage/blob-digest.js';

async function collect(r: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) out.push(join(e.parentPath, e.name));
  return out;
}

interface Made {
  storage: StorageBackend;
  /** Everything the backend holds: files, or upstream keys and pending uploads. */
  stored(): Promise<string[]>;
  /** Leaves what a crashed process would: a half-written blob. */
  plantOrphan(): Promise<void>;
  /** A new backend instance on the same place, as after a restart. */
  reopen(): StorageBackend;
  cleanup(): Promise<void>;
}

interface Backend {
  name: string;
  make(): Promise<Made>;
}

let moto: RunningMoto | undefined;
let prefixes = 0;
t.teardown(async () => moto?.stop());
// moto does not check signatures; s3edge itself does (strict SigV4), so it also serves as an upstream.
let gateway: { server: RunningServer; root: RawS3 } | undefined;
t.teardown(async () => gateway?.server.stop());

const backends: Backend[] = [
  {
    name: 'disk',
    async make() {
      const root = await mkdtemp(join(tmpdir(), 's3edge-storage-'));
      const storage = new DiskStorage(root);
      await storage.init();
      return {
        storage,
        stored: () => filesUnder(root),
        plantOrphan: async () => {
          await mkdir(join(root, 'tmp'), { recursive: true });
          await writeFile(join(root, 'tmp', 'leftover'), 'x');
        },
        reopen: () => new DiskStorage(root),
        cleanup: () => rm(root, { recursive: true, force: true }),
      };
    },
  },
  {
    name: 's3',
    async make() {
      moto ??= await startMoto();
      const up = moto;
      const prefix = `case${++prefixes}/`;
      // staleUploadMs 0: every pending upload counts as an orphan when a test calls init again.
      const open = (): S3Storage => new S3Storage({ ...up.storageOptions(prefix), staleUploadMs: 0 });
      const storage = open();
      await storage.init();
      return {
        storage,
        stored: async () => [
          ...(await listKeys(up)).filter((k) => k.startsWith(prefix)),
          ...(await storage.listUploads()).map((u) => `upload:${u.key}`),
        ],
        plantOrphan: async () => {
          const res = await request(`${up.endpoint}/${up.bucket}/${prefix}blobs/leftover?uploads`, { method: 'POST' });
          await res.body.dump();
        },
        reopen: open,
        cleanup: () => storage.close(),
      };
    },
  },
  {
    name: 's3 (signature-checking upstream: an s3edge gateway)',
    async make() {
      if (!gateway) {
        const server = await startServer({ upstream: false });
        const root = new RawS3({ url: server.url }, server.rootKey);
        const made = await root.send({ method: 'PUT', bucket: 'upstream' });
        if (made.status !== 200) throw new Error(`create bucket: ${made.status} ${made.text}`);
        gateway = { server, root };
      }
      const { server, root } = gateway;
      const prefix = `case${++prefixes}/`;
      const open = (): S3Storage =>
        new S3Storage({
          endpoint: server.url,
          region: 'us-east-1',
          bucket: 'upstream',
          accessKeyId: server.rootKey.accessKeyId,
          secretAccessKey: server.rootKey.secretAccessKey,
          forcePathStyle: true,
          prefix,
          staleUploadMs: 0,
        });
      const storage = open();
      await storage.init();
      return {
        storage,
        stored: async () => [
          ...(await root.listAllKeys('upstream', { prefix })),
          ...(await storage.listUploads()).map((u) => `upload:${u.key}`),
        ],
        plantOrphan: async () => {
          const res = await root.send({ method: 'POST', bucket: 'upstream', key: `${prefix}blobs/leftover`, query: { uploads: '' } });
          if (res.status !== 200) throw new Error(`plant orphan: ${res.status}`);
        },
        reopen: open,
        cleanup: () => storage.close(),
      };
    },
  },
];

for (const backend of backends) {
  t.test(`${backend.name}: committed bytes are readable whole and in ranges`, async (t) => {
    const { storage, cleanup } = await backend.make();
    t.teardown(cleanup);
    const data = randomBytes(3 * 1024 * 1024 + 123);
    const staged = await storage.stage(Readable.from([data.subarray(0, 1000), data.subarray(1000)]));
    t.equal(staged.size, data.length);
    await staged.commit();
    t.ok((await collect(await storage.read(staged.blobId))).equals(data), 'whole');
    const part = await collect(await storage.read(staged.blobId, { range: { start: 10, end: 19 } }));
    t.ok(part.equals(data.subarray(10, 20)), 'range is inclusive');
    await storage.remove(staged.blobId);
    await t.rejects(storage.read(staged.blobId), { code: 'ENOENT' });
    await storage.remove(staged.blobId);
    t.pass('removing twice is not an error');
  });

  t.test(`${backend.name}: staging records the CRC32C; a checked read passes intact bytes and fails wrong ones before their end`, async (t) => {
    const { storage, cleanup } = await backend.make();
    t.teardown(cleanup);
    const data = randomBytes(2 * 1024 * 1024 + 99);
    const staged = await storage.stage(Readable.from([data.subarray(0, 5000), data.subarray(5000)]));
    t.equal(staged.crc32c, crc32c(data), 'the CRC32C of the bytes staged');
    await staged.commit();
    const reported: BlobDigestMismatch[] = [];
    const verify = (expected: BlobDigest): ReadVerification => ({ expected, onMismatch: (err) => reported.push(err) });
    t.ok((await collect(await storage.read(staged.blobId, { verify: verify({ kind: 'crc32c', value: staged.crc32c }) }))).equals(data), 'right CRC32C: every byte');
    t.ok((await collect(await storage.read(staged.blobId, { verify: verify({ kind: 'md5', hex: md5Hex(data) }) }))).equals(data), 'right MD5: every byte');
    t.equal(reported.length, 0);

    for (const wrong of [{ kind: 'crc32c', value: (staged.crc32c + 1) >>> 0 }, { kind: 'md5', hex: '0'.repeat(32) }] as const) {
      const body = await storage.read(staged.blobId, { verify: verify(wrong) });
      let got = 0;
      await t.rejects(
        (async () => {
          for await (const c of body) got += (c as Buffer).length;
        })(),
        { code: 'EBADDIGEST' },
        `wrong ${wrong.kind}: the stream fails`,
      );
      t.ok(got < data.length, `wrong ${wrong.kind}: its end is withheld (${got} of ${data.length} bytes)`);
    }
    t.equal(reported.length, 2, 'each mismatch reported once');
    t.match(reported[0], { expected: { kind: 'crc32c' }, actual: { kind: 'crc32c', value: staged.crc32c } });
    await storage.remove(staged.blobId);
  });

  t.test(`${backend.name}: a body larger than one upstream part (17 MiB in odd chunks) is hidden until commit, then round-trips`, async (t) => {
    const { storage, cleanup } = await backend.make();
    t.teardown(cleanup);
    const data = randomBytes(17 * 1024 * 1024 + 7);
    const chunks: Buffer[] = [];
    for (let at = 0; at < data.length; at += 700_001) chunks.push(data.subarray(at, at + 700_001));
    const staged = await storage.stage(Readable.from(chunks));
    t.equal(staged.size, data.length);
    // Disk stages in tmp/; the upstream stages a body this long as a pending multipart upload.
    await t.rejects(storage.read(staged.blobId), { code: 'ENOENT' }, 'not readable before commit');
    await staged.commit();
    t.ok((await collect(await storage.read(staged.blobId))).equals(data), 'whole');
    const tail = await collect(await storage.read(staged.blobId, { range: { start: 8 * 1024 * 1024 - 5, end: data.length - 1 } }));
    t.ok(tail.equals(data.subarray(8 * 1024 * 1024 - 5)), 'range across a part boundary');
    await storage.remove(staged.blobId);
  });

  t.test(`${backend.name}: list() yields every committed blob with its size and time`, async (t) => {
    const { storage, cleanup } = await backend.make();
    t.teardown(cleanup);
    const before = Date.now() - 2000;
    const a = await storage.stage(Readable.from([randomBytes(1000)]));
    await a.commit();
    const b = await storage.stage(Readable.from([randomBytes(70_000)]));
    await b.commit();
    const pending = await storage.stage(Readable.from([randomBytes(10)]));
    const listed: { blobId: string; size: number; modifiedAt: number }[] = [];
    for await (const blob of storage.list()) listed.push(blob);
    // Disk keeps a staged body in tmp/; the upstream writes a short one in place at once, so it may be
    // listed before its commit: the collector's grace period, not the listing, protects it.
    const committed = listed.filter((x) => x.blobId !== pending.blobId);
    t.same(committed.map((x) => [x.blobId, x.size]).sort(), [[a.blobId, 1000], [b.blobId, 70_000]].sort(), 'the committed blobs, sizes right');
    for (const x of listed) t.ok(x.modifiedAt >= before && x.modifiedAt <= Date.now() + 2000, `${x.blobId}: written just now`);
    await pending.abort();
  });

  t.test(`${backend.name}: an empty body is a readable empty blob`, async (t) => {
    const { storage, cleanup } = await backend.make();
    t.teardown(cleanup);
    const staged = await storage.stage(Readable.from([]));
    t.equal(staged.size, 0);
    await staged.commit();
    t.equal((await collect(await storage.read(staged.blobId))).length, 0);
  });

  t.test(`${backend.name}: abort and failed bodies leave nothing behind`, async (t) => {
    const { storage, stored, cleanup } = await backend.make();
    t.teardown(cleanup);
    const staged = await storage.stage(Readable.from([Buffer.from('discard me')]));
    await staged.abort();
    await staged.abort();
    const failing = new Readable({
      read() {
        this.push(Buffer.alloc(1024));
        this.destroy(new Error('client went away'));
      },
    });
    await t.rejects(storage.stage(failing), /client went away/);
    const ac = new AbortController();
    const endless = new Readable({ read() { this.push(Buffer.alloc(65536)); } });
    setTimeout(() => ac.abort(), 20);
    await t.rejects(storage.stage(endless, { signal: ac.signal }));
    t.same(await stored(), [], 'nothing left');
  });

  t.test(`${backend.name}: ids never come from keys; what an earlier process left half-written is removed at start`, async (t) => {
    const { storage, stored, plantOrphan, reopen, cleanup } = await backend.make();
    t.teardown(cleanup);
    const a = await storage.stage(Readable.from([Buffer.from('a')]));
    const b = await storage.stage(Readable.from([Buffer.from('b')]));
    t.not(a.blobId, b.blobId);
    t.match(a.blobId, /^[0-9a-v]{26}$/);
    await a.commit();
    await b.abort();
    await plantOrphan();
    const again = reopen();
    t.teardown(() => again.close());
    await again.init();
    // The disk: the process that runs the jobs sweeps what is older than its start; upstream: init.
    await again.sweepStaged?.(Date.now() + 1000);
    const names = await stored();
    t.notOk(names.some((f) => f.includes('leftover')), 'orphan removed');
    t.ok(names.some((f) => f.endsWith(a.blobId)), 'committed blob kept');
    t.equal(names.length, 1, 'only the committed blob');
    await t.rejects(storage.read('../../etc/passwd'), 'blob ids are validated');
  });
}

t.test('disk: opening never takes another process\'s upload in flight; the start-up sweep takes only what is older than its process', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 's3edge-storage-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const first = new DiskStorage(root);
  await first.init();
  // An upload in flight in one worker: its temp file is being written.
  const body = new Readable({ read() {} });
  const push = (chunk: Buffer | null): boolean => body.push(chunk);
  push(Buffer.from('first half, '));
  const staging = first.stage(body);
  await new Promise((resolve) => setTimeout(resolve, 50));
  // Another worker starts (again, after a crash) and opens the same backend: nothing of the upload goes.
  const restarted = new DiskStorage(root);
  await restarted.init();
  // A leftover of an earlier process: a temp file last written before this process started.
  const stale = join(root, 'tmp', 'f'.repeat(26));
  await writeFile(stale, 'half a body');
  const past = new Date(Date.now() - 60_000);
  await utimes(stale, past, past);
  t.equal(await restarted.sweepStaged(Date.now() - 10_000), 1, 'the sweep took one file');
  t.notOk(existsSync(stale), 'the leftover is gone');
  push(Buffer.from('second half'));
  push(null);
  const staged = await staging;
  await staged.commit();
  const read = await first.read(staged.blobId);
  const chunks: Buffer[] = [];
  for await (const c of read) chunks.push(c as Buffer);
  t.equal(Buffer.concat(chunks).toString(), 'first half, second half', 'the upload in flight committed whole');
});
