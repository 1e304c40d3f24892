// The StorageBackend contract. Every backend runs this suite; today that is the disk backend.
import t from 'tap';
import { mkdtemp, readdir, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { DiskStorage } from '../../src/storage/disk.js';
import type { StorageBackend } from '../../src/storage/backend.js';

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

interface Backend {
  name: string;
  make(): Promise<{ storage: StorageBackend; root: string; cleanup(): Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'disk',
    async make() {
      const root = await mkdtemp(join(tmpdir(), 's3edge-storage-'));
      const storage = new DiskStorage(root);
      await storage.init();
      return { storage, root, cleanup: () => rm(root, { recursive: true, force: true }) };
    },
  },
];

for (const backend of backends) {
  t.test(`${backend.name}: staged bytes are invisible until commit, then readable whole and in ranges`, async (t) => {
    const { storage, cleanup } = await backend.make();
    t.teardown(cleanup);
    const data = randomBytes(3 * 1024 * 1024 + 123);
    const staged = await storage.stage(Readable.from([data.subarray(0, 1000), data.subarray(1000)]));
    t.equal(staged.size, data.length);
    await t.rejects(storage.read(staged.blobId), { code: 'ENOENT' }, 'not readable before commit');
    await staged.commit();
    t.ok((await collect(await storage.read(staged.blobId))).equals(data), 'whole');
    const part = await collect(await storage.read(staged.blobId, { range: { start: 10, end: 19 } }));
    t.ok(part.equals(data.subarray(10, 20)), 'range is inclusive');
    await storage.remove(staged.blobId);
    await t.rejects(storage.read(staged.blobId), { code: 'ENOENT' });
    await storage.remove(staged.blobId);
    t.pass('removing twice is not an error');
  });

  t.test(`${backend.name}: abort and failed bodies leave nothing behind`, async (t) => {
    const { storage, root, cleanup } = await backend.make();
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
    t.same(await filesUnder(root), [], 'no file left');
  });

  t.test(`${backend.name}: ids never come from keys and init removes orphaned temp files`, async (t) => {
    const { storage, root, cleanup } = await backend.make();
    t.teardown(cleanup);
    const a = await storage.stage(Readable.from([Buffer.from('a')]));
    const b = await storage.stage(Readable.from([Buffer.from('b')]));
    t.not(a.blobId, b.blobId);
    t.match(a.blobId, /^[0-9a-v]{26}$/);
    await a.commit();
    await mkdir(join(root, 'tmp'), { recursive: true });
    await writeFile(join(root, 'tmp', 'leftover'), 'x');
    const again = new DiskStorage(root);
    await again.init();
    const files = (await filesUnder(root)).map((f) => f.slice(root.length));
    t.notOk(files.some((f) => f.includes('leftover')), 'orphan removed');
    t.ok(files.some((f) => f.endsWith(a.blobId)), 'committed blob kept');
    await t.rejects(storage.read('../../etc/passwd'), 'blob ids are validated');
  });
}
