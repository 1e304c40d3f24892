import t from 'tap';
import { createHash } from 'node:crypto';
import { createChecksum, isValidChecksumValue, CHECKSUM_ALGORITHMS } from '../../src/hashing/checksums.js';
import { UploadHasher } from '../../src/hashing/upload-hasher.js';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';

// Check values of the catalogue of CRCs ("123456789") and the CRC64/NVME value from the AWS SDKs.
const CHECK_123456789: Record<string, string> = {
  CRC32: 'cbf43926',
  CRC32C: 'e3069283',
  CRC64NVME: 'ae8b14860a799888',
  SHA1: createHash('sha1').update('123456789').digest('hex'),
  SHA256: createHash('sha256').update('123456789').digest('hex'),
};

t.test('check values of every algorithm, fed whole and byte by byte', async (t) => {
  for (const algo of CHECKSUM_ALGORITHMS) {
    const whole = createChecksum(algo);
    whole.update(Buffer.from('123456789'));
    t.equal(Buffer.from(await whole.digestBase64(), 'base64').toString('hex'), CHECK_123456789[algo], algo);
    const split = createChecksum(algo);
    for (const b of Buffer.from('123456789')) split.update(Buffer.from([b]));
    t.equal(Buffer.from(await split.digestBase64(), 'base64').toString('hex'), CHECK_123456789[algo], `${algo} incremental`);
  }
});

t.test('AWS documented values for "Hello world" style payloads are stable', async (t) => {
  // Empty input: CRC32 of nothing is 0 -> AAAAAA==, as S3 returns for empty objects.
  const empty = createChecksum('CRC32');
  t.equal(await empty.digestBase64(), 'AAAAAA==');
  const crc64 = createChecksum('CRC64NVME');
  t.equal(await crc64.digestBase64(), 'AAAAAAAAAAA=');
});

t.test('checksum value validation', async (t) => {
  t.ok(isValidChecksumValue('CRC32', 'AAAAAA=='));
  t.notOk(isValidChecksumValue('CRC32', 'AAAAAAAAAAA='));
  t.notOk(isValidChecksumValue('SHA256', 'not base64!'));
  t.ok(isValidChecksumValue('SHA256', createHash('sha256').update('x').digest('base64')));
});

t.test('UploadHasher passes bytes through and computes md5, sha256 and the named checksum', async (t) => {
  const data = Buffer.alloc(3 * 1024 * 1024 + 7, 'abc');
  const hasher = new UploadHasher({ checksumAlgorithm: 'CRC32C', maxSize: 10 * 1024 * 1024 });
  const seen: Buffer[] = [];
  await pipeline(Readable.from([data.subarray(0, 5), data.subarray(5)]), hasher, new Writable({
    write(chunk: Buffer, _e, cb) { seen.push(chunk); cb(); },
  }));
  const d = await hasher.digests();
  t.equal(d.size, data.length);
  t.equal(d.md5Hex, createHash('md5').update(data).digest('hex'));
  t.equal(d.sha256Hex, createHash('sha256').update(data).digest('hex'));
  t.equal(d.checksum?.algorithm, 'CRC32C');
  t.ok(Buffer.concat(seen).equals(data));
});

t.test('UploadHasher refuses more than maxSize', async (t) => {
  const hasher = new UploadHasher({ maxSize: 10 });
  await t.rejects(
    pipeline(Readable.from([Buffer.alloc(11)]), hasher, new Writable({ write(_c, _e, cb) { cb(); } })),
    { code: 'EntityTooLarge' },
  );
});
