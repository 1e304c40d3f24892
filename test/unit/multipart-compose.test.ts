// The names and sums of a completed multipart object, from its parts alone, against independent
// computations over the bytes (test/helpers/checksums.ts).
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { bareEtag, compositeChecksum, fullObjectChecksum, multipartEtag, objectChecksum } from '../../src/s3/operations/multipart/compose.js';
import { checksumBase64, checksumBytes, md5Hex, type ChecksumAlgorithm } from '../helpers/checksums.js';

// Sizes do not matter to these computations; small parts keep the JS reference CRCs quick.
const parts = [randomBytes(100_000), randomBytes(100_000), randomBytes(1234)];

t.test('ETag: md5 of the concatenated binary part MD5s, then -N, quoted', async (t) => {
  const expected = createHash('md5').update(Buffer.concat(parts.map((p) => createHash('md5').update(p).digest()))).digest('hex');
  t.equal(multipartEtag(parts.map((p) => `"${md5Hex(p)}"`)), `"${expected}-3"`);
  t.equal(multipartEtag(parts.map((p) => md5Hex(p))), `"${expected}-3"`, 'quotes are optional');
  t.equal(multipartEtag([`"${md5Hex(parts[0] as Buffer)}"`]), `"${createHash('md5').update(createHash('md5').update(parts[0] as Buffer).digest()).digest('hex')}-1"`);
  t.equal(bareEtag(' W/"abc" '), 'abc');
  t.equal(bareEtag('abc'), 'abc');
});

for (const algo of ['CRC32', 'CRC32C', 'SHA1', 'SHA256'] as ChecksumAlgorithm[]) {
  t.test(`COMPOSITE ${algo}: checksum of the concatenated part checksums, -N`, async (t) => {
    const partSums = parts.map((p) => checksumBase64(algo, p));
    const expected = checksumBytes(algo, Buffer.concat(parts.map((p) => checksumBytes(algo, p)))).toString('base64');
    t.equal(compositeChecksum(algo, partSums), `${expected}-3`);
    t.equal(objectChecksum(algo, 'COMPOSITE', parts.map((p) => ({ checksum: checksumBase64(algo, p), size: p.length }))), `${expected}-3`);
  });
}

for (const algo of ['CRC32', 'CRC32C', 'CRC64NVME'] as ChecksumAlgorithm[]) {
  t.test(`FULL_OBJECT ${algo}: the CRC of the whole object`, async (t) => {
    const sums = parts.map((p) => ({ checksum: checksumBase64(algo, p), size: p.length }));
    t.equal(fullObjectChecksum(algo, sums), checksumBase64(algo, Buffer.concat(parts)));
    t.equal(objectChecksum(algo, 'FULL_OBJECT', sums), checksumBase64(algo, Buffer.concat(parts)));
  });
}

t.test('FULL_OBJECT needs a CRC', async (t) => {
  t.throws(() => fullObjectChecksum('SHA256', [{ checksum: checksumBase64('SHA256', Buffer.from('x')), size: 1 }]));
});
