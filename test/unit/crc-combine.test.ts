// crc(A || B) from crc(A), crc(B) and len(B), checked against computing the CRC of the concatenation
// directly with independent implementations (node's zlib, @node-rs/crc32, the test helper's CRC64).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { crc32c } from '@node-rs/crc32';
import { crcCombine, crcCombineAll, type CombinableCrc } from '../../src/hashing/crc-combine.js';
import { crc64nvme } from '../helpers/checksums.js';

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

const direct: Record<CombinableCrc, (data: Buffer) => Buffer> = {
  CRC32: (d) => u32(zlib.crc32(d)),
  CRC32C: (d) => u32(crc32c(d)),
  CRC64NVME: (d) => crc64nvme(d),
};

const ALGOS: CombinableCrc[] = ['CRC32', 'CRC32C', 'CRC64NVME'];

t.test('check values ("123456789")', async (t) => {
  const data = Buffer.from('123456789');
  t.equal(direct.CRC32(data).toString('hex'), 'cbf43926');
  t.equal(direct.CRC32C(data).toString('hex'), 'e3069283');
  t.equal(direct.CRC64NVME(data).toString('hex'), 'ae8b14860a799888');
});

for (const algo of ALGOS) {
  t.test(`${algo}: combine two pieces equals the CRC of the concatenation`, async (t) => {
    const data = randomBytes(70_000);
    for (const cut of [0, 1, 2, 3, 7, 8, 100, 4096, 65_535, 69_999, 70_000]) {
      const a = data.subarray(0, cut);
      const b = data.subarray(cut);
      t.equal(crcCombine(algo, direct[algo](a), direct[algo](b), b.length).toString('hex'), direct[algo](data).toString('hex'), `cut at ${cut}`);
    }
  });

  t.test(`${algo}: many parts, including empty ones, in order`, async (t) => {
    const sizes = [5000, 5000, 5000, 0, 1, 12_345, 5000, 17];
    const parts = sizes.map((n) => randomBytes(n));
    const whole = Buffer.concat(parts);
    const combined = crcCombineAll(algo, parts.map((p) => ({ crc: direct[algo](p), size: p.length })));
    t.equal(combined.toString('hex'), direct[algo](whole).toString('hex'));
    t.equal(crcCombineAll(algo, []).toString('hex'), direct[algo](Buffer.alloc(0)).toString('hex'), 'no parts: the CRC of nothing');
    t.equal(crcCombineAll(algo, [{ crc: direct[algo](parts[0] as Buffer), size: 5000 }]).toString('hex'), direct[algo](parts[0] as Buffer).toString('hex'), 'one part');
  });

  t.test(`${algo}: combining is associative at multi-GiB lengths (high powers of x)`, async (t) => {
    // Values as if of parts of 5 GiB, 3 TiB and 7 bytes: (a.b).c must equal a.(b.c).
    const a = direct[algo](randomBytes(32));
    const b = direct[algo](randomBytes(32));
    const c = direct[algo](randomBytes(32));
    const lb = 5 * 1024 ** 3;
    const lc = 3 * 1024 ** 4 + 7;
    const left = crcCombine(algo, crcCombine(algo, a, b, lb), c, lc);
    const right = crcCombine(algo, a, crcCombine(algo, b, c, lc), lb + lc);
    t.equal(left.toString('hex'), right.toString('hex'));
  });
}

t.test('CRC32 of a 20 MiB concatenation of 5 MiB parts', async (t) => {
  const parts = [randomBytes(5 << 20), randomBytes(5 << 20), randomBytes(5 << 20), randomBytes(5 << 20)];
  const combined = crcCombineAll('CRC32', parts.map((p) => ({ crc: direct.CRC32(p), size: p.length })));
  t.equal(combined.toString('hex'), direct.CRC32(Buffer.concat(parts)).toString('hex'));
});
