// Digests of stored blobs (src/storage/blob-digest.ts): which digest a row is checked against, and the
// checked stream that holds back its last chunk until the whole read matched.
import t from 'tap';
import { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { checkBuffer, expectedDigest, formatDigest, verifiedStream, type BlobDigest, type BlobDigestMismatch } from '../../src/storage/blob-digest.js';
import { crc32c, md5Hex } from '../helpers/checksums.js';

t.test('the digest a row is checked against: its CRC32C, else the MD5 of a one-blob ETag, else none', async (t) => {
  const md5 = '0123456789abcdef0123456789abcdef';
  t.same(expectedDigest(7, `"${md5}"`), { kind: 'crc32c', value: 7 });
  t.same(expectedDigest(0, null), { kind: 'crc32c', value: 0 }, 'a CRC32C of 0 is a digest');
  t.same(expectedDigest(null, `"${md5}"`), { kind: 'md5', hex: md5 });
  t.same(expectedDigest(undefined, md5), { kind: 'md5', hex: md5 });
  t.equal(expectedDigest(null, `"${md5}-3"`), undefined, 'a multipart ETag digests no single blob');
  t.equal(expectedDigest(null, ''), undefined);
  t.equal(formatDigest({ kind: 'crc32c', value: 0xab }), 'crc32c:000000ab');
  t.equal(formatDigest({ kind: 'md5', hex: md5 }), `md5:${md5}`);
});

async function drain(body: Readable): Promise<{ got: Buffer; err?: unknown }> {
  const chunks: Buffer[] = [];
  try {
    for await (const c of body) chunks.push(c as Buffer);
    return { got: Buffer.concat(chunks) };
  } catch (err) {
    return { got: Buffer.concat(chunks), err };
  }
}

t.test('a checked stream: all bytes on a match, all but the last chunk and an error on a mismatch', async (t) => {
  const chunks = [randomBytes(1000), randomBytes(2000), randomBytes(3000)];
  const data = Buffer.concat(chunks);
  const reported: BlobDigestMismatch[] = [];
  const run = (expected: BlobDigest): Promise<{ got: Buffer; err?: unknown }> =>
    drain(verifiedStream(Readable.from(chunks), { expected, onMismatch: (err) => reported.push(err) }));

  for (const right of [{ kind: 'crc32c', value: crc32c(data) }, { kind: 'md5', hex: md5Hex(data) }] as const) {
    const { got, err } = await run(right);
    t.equal(err, undefined, `${right.kind}: no error`);
    t.ok(got.equals(data), `${right.kind}: every byte`);
  }
  const { got, err } = await run({ kind: 'crc32c', value: (crc32c(data) ^ 1) >>> 0 });
  t.match(err, { code: 'EBADDIGEST', message: /expected crc32c:[0-9a-f]{8}, read crc32c:[0-9a-f]{8}/ });
  // What was passed on before the error may be dropped with it; the last chunk never is passed on.
  t.ok(got.length <= 3000 && got.equals(data.subarray(0, got.length)), `the last chunk is withheld (${got.length} bytes passed)`);
  t.equal(reported.length, 1, 'reported once');
  t.same(reported[0]?.actual, { kind: 'crc32c', value: crc32c(data) });
});

t.test('bytes in memory are checked whole', async (t) => {
  const data = randomBytes(4096);
  let reported = 0;
  t.doesNotThrow(() => checkBuffer(data, { expected: { kind: 'crc32c', value: crc32c(data) }, onMismatch: () => reported++ }));
  t.throws(() => checkBuffer(data, { expected: { kind: 'md5', hex: md5Hex(data.subarray(1)) }, onMismatch: () => reported++ }), { code: 'EBADDIGEST' });
  t.equal(reported, 1);
});
