// FileBody: the bytes of a range, sent straight to a destination or read as a stream; a destination
// that goes away mid-body rejects the send and closes the file.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { BufferPool } from '../../src/storage/buffer-pool.js';
import { FileBody } from '../../src/storage/file-body.js';
import { Crc32c, DigestCheck } from '../../src/storage/blob-digest.js';
import { tempDir } from '../helpers/temp-data.js';

const MiB = 1024 * 1024;

async function fileOf(t: { teardown(fn: () => void): void }, data: Buffer): Promise<string> {
  const file = join(tempDir(t), 'blob');
  await writeFile(file, data);
  return file;
}

async function fileBody(t: { teardown(fn: () => void): void }, data: Buffer, start: number, end: number): Promise<FileBody> {
  return new FileBody(await open(await fileOf(t, data), 'r'), start, end, new BufferPool(4));
}

function collector(): { dest: Writable; bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  // Copies: the sender reuses its buffers once a write's callback has run.
  const dest = new Writable({ write: (c: Buffer, _e, cb) => (chunks.push(Buffer.from(c)), cb()) });
  return { dest, bytes: () => Buffer.concat(chunks) };
}

t.test('sendTo writes exactly the range, then closes the body', async (t) => {
  const data = randomBytes(9 * MiB + 333);
  for (const [start, end] of [[0, data.length], [5, 5 + MiB], [MiB - 1, 7 * MiB + 2], [data.length - 1, data.length]] as const) {
    const body = await fileBody(t, data, start, end);
    const closed = new Promise((resolve) => body.once('close', resolve));
    const { dest, bytes } = collector();
    await body.sendTo(dest);
    t.ok(bytes().equals(data.subarray(start, end)), `[${start}, ${end})`);
    await closed;
  }
});

t.test('read as a stream, the body yields the same bytes', async (t) => {
  const data = randomBytes(3 * MiB + 17);
  const body = await fileBody(t, data, 100, data.length - 100);
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  t.ok(Buffer.concat(chunks).equals(data.subarray(100, data.length - 100)));
});

t.test('a destination that fails mid-body rejects sendTo and closes the file', async (t) => {
  const data = randomBytes(12 * MiB);
  const body = await fileBody(t, data, 0, data.length);
  const closed = new Promise((resolve) => body.once('close', resolve));
  let seen = 0;
  const dest = new Writable({
    write(c: Buffer, _e, cb) {
      seen += c.length;
      if (seen > 3 * MiB) cb(new Error('socket reset'));
      else cb();
    },
  });
  dest.on('error', () => undefined);
  await t.rejects(body.sendTo(dest));
  await closed;
  t.ok(body.destroyed);
});

t.test('with a digest check: every byte on a match; on a mismatch the last read is never handed out', async (t) => {
  const data = randomBytes(3 * MiB + 10);
  const crc = new Crc32c();
  crc.update(data);
  const reported: unknown[] = [];
  const check = (value: number): DigestCheck => new DigestCheck({ expected: { kind: 'crc32c', value }, onMismatch: (err) => reported.push(err) });

  const good = collector();
  await new FileBody(await open(await fileOf(t, data), 'r'), 0, data.length, new BufferPool(4), { check: check(crc.value) }).sendTo(good.dest);
  t.ok(good.bytes().equals(data), 'sendTo: all of it');

  const bad = collector();
  const wrong = new FileBody(await open(await fileOf(t, data), 'r'), 0, data.length, new BufferPool(4), { check: check(crc.value ^ 1) });
  await t.rejects(wrong.sendTo(bad.dest), { code: 'EBADDIGEST' });
  t.equal(bad.bytes().length, 3 * MiB, 'sendTo: the last read (10 bytes) withheld');
  t.ok(wrong.destroyed, 'and the file closed');

  const streamed: Buffer[] = [];
  const asStream = new FileBody(await open(await fileOf(t, data), 'r'), 0, data.length, new BufferPool(4), { check: check(crc.value ^ 1) });
  await t.rejects(
    (async () => {
      for await (const c of asStream) streamed.push(c as Buffer);
    })(),
    { code: 'EBADDIGEST' },
  );
  t.ok(Buffer.concat(streamed).length < data.length, 'read as a stream: it fails before its end');
  t.equal(reported.length, 2, 'each mismatch reported once');
});
