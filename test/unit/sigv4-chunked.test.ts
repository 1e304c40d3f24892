import t from 'tap';
import { createHash, createHmac } from 'node:crypto';
import { crc32, crc32c } from '@node-rs/crc32';
import { S3Error, type S3ErrorCode } from '../../src/errors/s3-errors.js';
import {
  ChunkDecoder,
  EMPTY_SHA256,
  computeSigningKey,
  verifyRequest,
  type ChunkDecoderOptions,
  type PayloadMode,
  type SigV4Request,
  type VerifiedAuth,
} from '../../src/auth/sigv4/index.js';

// AWS documentation example values (sigv4-streaming / sigv4-streaming-trailers).
const AKID = 'AKIAIOSFODNN7EXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const AMZ_DATE = '20130524T000000Z';
const SCOPE = '20130524/us-east-1/s3/aws4_request';
const KEY = computeSigningKey(SECRET, '20130524', 'us-east-1', 's3');

const DOC_SEED = '4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9';
const DOC_SIGS = [
  'ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648',
  '0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497',
  'b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9',
];
const TRAILER_SEED = '106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e';
const TRAILER_SIGS = [
  'b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2',
  '1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7',
  '2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992',
];
const TRAILER_SIGNATURE = 'd81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435';

const DATA = Buffer.alloc(66560, 'a');

function sha256(b: Buffer | string): string {
  return createHash('sha256').update(b).digest('hex');
}
function hmacHex(s: string): string {
  return createHmac('sha256', KEY).update(s).digest('hex');
}
/** Independent implementation of the documented formulas. */
function chunkSignature(prev: string, data: Buffer): string {
  return hmacHex(['AWS4-HMAC-SHA256-PAYLOAD', AMZ_DATE, SCOPE, prev, EMPTY_SHA256, sha256(data)].join('\n'));
}
function trailerSignature(prev: string, trailers: ReadonlyArray<readonly [string, string]>): string {
  const canonical = trailers.map(([n, v]) => `${n}:${v}\n`).join('');
  return hmacHex(['AWS4-HMAC-SHA256-TRAILER', AMZ_DATE, SCOPE, prev, sha256(canonical)].join('\n'));
}

function auth(payload: PayloadMode, seed: string): VerifiedAuth {
  return { accessKeyId: AKID, method: 'header', payload, signingKey: KEY, signature: seed, amzDate: AMZ_DATE, scope: SCOPE };
}
const SIGNED = auth({ kind: 'streaming-signed', trailer: false }, DOC_SEED);
const SIGNED_TRAILER = auth({ kind: 'streaming-signed', trailer: true }, TRAILER_SEED);
const UNSIGNED_TRAILER = auth({ kind: 'streaming-unsigned-trailer' }, TRAILER_SEED);

function splitSizes(total: number, chunk: number): number[] {
  const out: number[] = [];
  for (let off = 0; off < total; off += chunk) out.push(Math.min(chunk, total - off));
  return out;
}

interface FrameOpts {
  seed: string;
  trailers?: ReadonlyArray<readonly [string, string]>;
  /** 'docs': empty line between the final chunk and the trailers, no final empty line (as in the AWS docs). */
  style?: 'sdk' | 'docs';
  /** Replace the n-th chunk signature (0-based; sizes.length is the final chunk). */
  badSig?: { index: number; sig: string };
  badTrailerSig?: string;
  omitTrailerSig?: boolean;
}

function frameSigned(data: Buffer, sizes: readonly number[], o: FrameOpts): { body: Buffer; sigs: string[] } {
  const parts: Buffer[] = [];
  const sigs: string[] = [];
  let prev = o.seed;
  let off = 0;
  const all = [...sizes, 0];
  all.forEach((size, i) => {
    const chunk = data.subarray(off, off + size);
    off += size;
    prev = chunkSignature(prev, chunk);
    sigs.push(prev);
    const sent = o.badSig?.index === i ? o.badSig.sig : prev;
    parts.push(Buffer.from(`${size.toString(16)};chunk-signature=${sent}\r\n`));
    if (size > 0) parts.push(chunk, Buffer.from('\r\n'));
  });
  if (o.trailers) {
    if (o.style === 'docs') parts.push(Buffer.from('\r\n'));
    for (const [n, v] of o.trailers) parts.push(Buffer.from(`${n}:${v}\r\n`));
    const ts = trailerSignature(prev, o.trailers);
    sigs.push(ts);
    if (!o.omitTrailerSig) parts.push(Buffer.from(`x-amz-trailer-signature:${o.badTrailerSig ?? ts}\r\n`));
    if (o.style !== 'docs') parts.push(Buffer.from('\r\n'));
  } else {
    parts.push(Buffer.from('\r\n'));
  }
  return { body: Buffer.concat(parts), sigs };
}

function frameUnsigned(data: Buffer, sizes: readonly number[], trailers: ReadonlyArray<readonly [string, string]>, finalEmptyLine = true): Buffer {
  const parts: Buffer[] = [];
  let off = 0;
  for (const size of sizes) {
    parts.push(Buffer.from(`${size.toString(16)}\r\n`), data.subarray(off, off + size), Buffer.from('\r\n'));
    off += size;
  }
  parts.push(Buffer.from('0\r\n'));
  for (const [n, v] of trailers) parts.push(Buffer.from(`${n}:${v}\r\n`));
  if (finalEmptyLine) parts.push(Buffer.from('\r\n'));
  return Buffer.concat(parts);
}

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

interface Decoded {
  out: Buffer;
  err: unknown;
  trailers: Record<string, string>;
  pushes: number;
}

/** Feeds body to a ChunkDecoder in slices of the given sizes (repeating the last function). */
async function decode(body: Buffer, opts: ChunkDecoderOptions, nextSlice: () => number = () => body.length): Promise<Decoded> {
  const dec = new ChunkDecoder(opts);
  const parts: Buffer[] = [];
  dec.on('data', (b: Buffer) => parts.push(b));
  const done = new Promise<unknown>((resolve) => {
    dec.on('end', () => resolve(undefined));
    dec.on('error', (e: unknown) => resolve(e));
  });
  let off = 0;
  while (off < body.length && !dec.destroyed) {
    const n = Math.max(1, nextSlice());
    dec.write(body.subarray(off, off + n));
    off += n;
  }
  if (!dec.destroyed) dec.end();
  const err = await done;
  return { out: Buffer.concat(parts), err, trailers: dec.trailers, pushes: parts.length };
}

function isCode(err: unknown, code: S3ErrorCode): boolean {
  return err instanceof S3Error && err.code === code;
}
function codeOf(err: unknown): string {
  return err instanceof S3Error ? err.code : err === undefined ? 'none' : `non-S3Error ${String(err)}`;
}

function crc32b64(b: Buffer): string {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(crc32(b) >>> 0);
  return out.toString('base64');
}

// ---------------------------------------------------------------------------------------------------------

t.test('the AWS documentation example (66560 bytes, 64 KiB chunks)', async (t) => {
  const { body, sigs } = frameSigned(DATA, [65536, 1024], { seed: DOC_SEED });
  t.same(sigs, DOC_SIGS, 'documented chunk signatures');
  t.equal(body.length, 66824, 'documented Content-Length');

  // The seed signature really comes from the documented request.
  const req: SigV4Request = {
    method: 'PUT', rawPath: '/examplebucket/chunkObject.txt', rawQuery: '',
    headers: {
      host: 's3.amazonaws.com', 'x-amz-date': AMZ_DATE, 'x-amz-storage-class': 'REDUCED_REDUNDANCY', 'content-encoding': 'aws-chunked',
      'x-amz-decoded-content-length': '66560', 'content-length': '66824', 'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
      authorization: `AWS4-HMAC-SHA256 Credential=${AKID}/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=${DOC_SEED}`,
    },
  };
  const verified = verifyRequest(req, { region: 'us-east-1', now: new Date('2013-05-24T00:00:00Z'), getSecret: () => SECRET });
  if (!verified) throw new Error('not verified');
  t.same(verified.signingKey, KEY);

  const whole = await decode(body, { auth: verified, decodedContentLength: 66560 });
  t.equal(whole.err, undefined, 'no error');
  t.ok(whole.out.equals(DATA), 'decoded payload');
  t.equal(whole.pushes, 2, 'one push per verified chunk');

  const bytewise = await decode(body, { auth: verified, decodedContentLength: 66560 }, () => 1);
  t.equal(bytewise.err, undefined, '1-byte slices: no error');
  t.ok(bytewise.out.equals(DATA), '1-byte slices: payload');

  for (const seed of [1, 2, 3, 4, 5]) {
    const r = rng(seed);
    const res = await decode(body, { auth: verified, decodedContentLength: 66560 }, () => 1 + Math.floor(r() * (r() < 0.5 ? 10 : 20000)));
    t.equal(res.err, undefined, `random slicing #${seed}`);
    t.ok(res.out.equals(DATA), `random slicing #${seed} payload`);
  }
  // Each split point around the framing.
  for (const cut of [1, 10, 85, 86, 87, 88, 65536 + 87, 65536 + 88, 65536 + 89, 65536 + 90, 65536 + 91, body.length - 90, body.length - 2, body.length - 1]) {
    let first = true;
    const res = await decode(body, { auth: verified }, () => (first ? ((first = false), cut) : body.length));
    t.equal(res.err, undefined, `split at ${cut}`);
    t.ok(res.out.equals(DATA));
  }
});

t.test('the AWS documentation trailer example', async (t) => {
  const trailers = [['x-amz-checksum-crc32c', 'sOO8/Q=='] as const];
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32c(DATA) >>> 0);
  t.equal(crc.toString('base64'), 'sOO8/Q==', 'the trailer value is the CRC32C of the payload');
  for (const style of ['sdk', 'docs'] as const) {
    const { body, sigs } = frameSigned(DATA, [65536, 1024], { seed: TRAILER_SEED, trailers, style });
    t.same(sigs, [...TRAILER_SIGS, TRAILER_SIGNATURE], `${style}: documented chunk and trailer signatures`);
    for (const slicing of ['whole', 'bytes', 'random'] as const) {
      const r = rng(7);
      const next = slicing === 'whole' ? undefined : slicing === 'bytes' ? () => 1 : () => 1 + Math.floor(r() * 5000);
      const res = await decode(body, { auth: SIGNED_TRAILER, decodedContentLength: 66560 }, next);
      t.equal(res.err, undefined, `${style}/${slicing}: no error`);
      t.ok(res.out.equals(DATA), `${style}/${slicing}: payload`);
      t.same({ ...res.trailers }, { 'x-amz-checksum-crc32c': 'sOO8/Q==' }, `${style}/${slicing}: trailers`);
    }
  }
});

t.test('a bad chunk signature fails and no unverified byte is emitted', async (t) => {
  const good = frameSigned(DATA, [65536, 1024], { seed: DOC_SEED });
  for (const [index, expectOut] of [[0, 0], [1, 65536], [2, 66560]] as const) {
    const bad = frameSigned(DATA, [65536, 1024], { seed: DOC_SEED, badSig: { index, sig: 'f'.repeat(64) } }).body;
    for (const next of [undefined, () => 1, () => 777]) {
      const res = await decode(bad, { auth: SIGNED }, next);
      t.ok(isCode(res.err, 'SignatureDoesNotMatch'), `chunk ${index}: ${codeOf(res.err)}`);
      t.equal(res.out.length, expectOut, `chunk ${index}: only verified chunks came out`);
    }
  }
  // Malformed chunk signatures: never anything but SignatureDoesNotMatch.
  for (const sig of ['', 'ad80', DOC_SIGS[0]?.slice(0, 63), `${DOC_SIGS[0]}0`, 'z'.repeat(64), DOC_SIGS[0]?.toUpperCase(), 'a'.repeat(1000)]) {
    const body = Buffer.from(good.body.toString('latin1').replace(DOC_SIGS[0] ?? '', sig ?? ''), 'latin1');
    const res = await decode(body, { auth: SIGNED });
    t.ok(isCode(res.err, 'SignatureDoesNotMatch'), `signature ${JSON.stringify(sig?.slice(0, 10))}… of length ${sig?.length}: ${codeOf(res.err)}`);
    t.equal(res.out.length, 0);
  }
  // Chunks replayed in another order / the seed of another request.
  const swapped = frameSigned(DATA, [1024, 65536], { seed: DOC_SEED }).body;
  const other = await decode(swapped, { auth: auth({ kind: 'streaming-signed', trailer: false }, TRAILER_SEED) });
  t.ok(isCode(other.err, 'SignatureDoesNotMatch'), 'other seed');
  // A chunk without a signature in signed mode.
  const unsignedChunk = Buffer.from(`5\r\nhello\r\n0;chunk-signature=${'0'.repeat(64)}\r\n\r\n`);
  t.ok(isCode((await decode(unsignedChunk, { auth: SIGNED })).err, 'SignatureDoesNotMatch'), 'missing chunk-signature');
  // Data tampered with.
  const tampered = Buffer.from(good.body);
  tampered[100] = 0x62;
  const tr = await decode(tampered, { auth: SIGNED });
  t.ok(isCode(tr.err, 'SignatureDoesNotMatch'), 'tampered data');
  t.equal(tr.out.length, 0);
});

t.test('trailer signature checks (signed trailer mode)', async (t) => {
  const data = Buffer.from('hello world, trailer signatures');
  const crc = crc32b64(data);
  const trailers = [['x-amz-checksum-crc32', crc] as const];
  const ok = frameSigned(data, [10, 10, 11], { seed: TRAILER_SEED, trailers });
  const res = await decode(ok.body, { auth: SIGNED_TRAILER, decodedContentLength: data.length }, () => 3);
  t.equal(res.err, undefined);
  t.ok(res.out.equals(data));
  t.same({ ...res.trailers }, { 'x-amz-checksum-crc32': crc });

  // Expected trailer signature per the formula, computed step by step here once more.
  let prev = TRAILER_SEED;
  for (const part of [data.subarray(0, 10), data.subarray(10, 20), data.subarray(20), Buffer.alloc(0)]) prev = chunkSignature(prev, part);
  const expected = hmacHex(`AWS4-HMAC-SHA256-TRAILER\n${AMZ_DATE}\n${SCOPE}\n${prev}\n${sha256(`x-amz-checksum-crc32:${crc}\n`)}`);
  t.equal(ok.sigs[4], expected, 'trailer signature formula');

  const bad = frameSigned(data, [10, 10, 11], { seed: TRAILER_SEED, trailers, badTrailerSig: 'a'.repeat(64) });
  t.ok(isCode((await decode(bad.body, { auth: SIGNED_TRAILER })).err, 'SignatureDoesNotMatch'), 'bad trailer signature');
  const badLen = frameSigned(data, [10, 10, 11], { seed: TRAILER_SEED, trailers, badTrailerSig: 'abc' });
  t.ok(isCode((await decode(badLen.body, { auth: SIGNED_TRAILER })).err, 'SignatureDoesNotMatch'), 'short trailer signature');
  const missing = frameSigned(data, [10, 10, 11], { seed: TRAILER_SEED, trailers, omitTrailerSig: true });
  t.ok(isCode((await decode(missing.body, { auth: SIGNED_TRAILER })).err, 'SignatureDoesNotMatch'), 'missing trailer signature');
  // A trailer value changed in flight.
  const changed = Buffer.from(ok.body.toString('latin1').replace(`x-amz-checksum-crc32:${crc}`, 'x-amz-checksum-crc32:AAAAAA=='), 'latin1');
  t.ok(isCode((await decode(changed, { auth: SIGNED_TRAILER })).err, 'SignatureDoesNotMatch'), 'tampered trailer');
  // An extra trailer injected after the signature.
  const injected = Buffer.concat([ok.body.subarray(0, ok.body.length - 2), Buffer.from('x-amz-meta-x:1\r\n\r\n')]);
  t.ok((await decode(injected, { auth: SIGNED_TRAILER })).err instanceof S3Error, 'trailer after the signature');
  // Several trailers, one with spaces around the value.
  const multi = [['x-amz-checksum-crc32', crc], ['x-amz-meta-a', 'b c']] as const;
  const m = frameSigned(data, [31], { seed: TRAILER_SEED, trailers: multi });
  const mres = await decode(m.body, { auth: SIGNED_TRAILER });
  t.equal(mres.err, undefined);
  t.same({ ...mres.trailers }, { 'x-amz-checksum-crc32': crc, 'x-amz-meta-a': 'b c' });
});

t.test('unsigned trailer mode (STREAMING-UNSIGNED-PAYLOAD-TRAILER) with a crc32 trailer', async (t) => {
  const r = rng(99);
  const data = Buffer.alloc(200_000);
  for (let i = 0; i < data.length; i++) data[i] = Math.floor(r() * 256);
  const crc = crc32b64(data);
  const trailers = [['x-amz-checksum-crc32', crc] as const];
  const body = frameUnsigned(data, splitSizes(data.length, 65536), trailers);
  for (const next of [undefined, () => 1, () => 1 + Math.floor(r() * 9000)]) {
    const res = await decode(body, { auth: UNSIGNED_TRAILER, decodedContentLength: data.length }, next);
    t.equal(res.err, undefined);
    t.ok(res.out.equals(data));
    t.same({ ...res.trailers }, { 'x-amz-checksum-crc32': crc });
  }
  // Tolerated: no final empty line at EOF; chunk extensions; a stray trailer signature (ignored).
  const noFinal = frameUnsigned(data, splitSizes(data.length, 8192), trailers, false);
  const nf = await decode(noFinal, { auth: UNSIGNED_TRAILER, decodedContentLength: data.length }, () => 4096);
  t.equal(nf.err, undefined, 'missing final empty line');
  t.same({ ...nf.trailers }, { 'x-amz-checksum-crc32': crc });
  const lastNoCrlf = noFinal.subarray(0, noFinal.length - 2);
  const lnc = await decode(lastNoCrlf, { auth: UNSIGNED_TRAILER });
  t.equal(lnc.err, undefined, 'last trailer line without CRLF at EOF');
  t.same({ ...lnc.trailers }, { 'x-amz-checksum-crc32': crc });
  const ext = Buffer.from('3;foo=bar\r\nabc\r\n0\r\nx-amz-checksum-crc32:' + crc32b64(Buffer.from('abc')) + '\r\nx-amz-trailer-signature:00\r\n\r\n');
  const er = await decode(ext, { auth: UNSIGNED_TRAILER });
  t.equal(er.err, undefined, 'extensions and stray trailer signature');
  t.equal(er.out.toString(), 'abc');
  t.same(Object.keys(er.trailers), ['x-amz-checksum-crc32']);
  // No trailers at all.
  const none = await decode(Buffer.from('3\r\nabc\r\n0\r\n\r\n'), { auth: UNSIGNED_TRAILER });
  t.equal(none.err, undefined);
  t.same({ ...none.trailers }, {});
  // Unsigned chunks stream through as they arrive (nothing to verify per chunk).
  const streamed = await decode(body, { auth: UNSIGNED_TRAILER }, () => 1000);
  t.ok(streamed.pushes > 4, 'streamed in slices');
  // Proto-pollution attempts are plain trailer names.
  const proto = await decode(Buffer.from('0\r\n__proto__:x\r\nconstructor:y\r\n\r\n'), { auth: UNSIGNED_TRAILER });
  t.equal(proto.err, undefined);
  t.equal(proto.trailers['__proto__'], 'x');
  t.equal(Object.getPrototypeOf(proto.trailers), null);
});

t.test('truncated streams are IncompleteBody', async (t) => {
  const data = Buffer.from('The quick brown fox jumps over the lazy dog. 0123456789');
  const cases: Array<[string, Buffer, ChunkDecoderOptions, number]> = [
    // name, body, options, how many bytes may be missing at the end and still be accepted (line ends after
    // the last, verified, line)
    ['signed', frameSigned(data, [20, 20, 15], { seed: DOC_SEED }).body, { auth: SIGNED }, 2],
    ['signed trailer', frameSigned(data, [20, 35], { seed: TRAILER_SEED, trailers: [['x-amz-checksum-crc32', crc32b64(data)]] }).body, { auth: SIGNED_TRAILER }, 4],
    ['unsigned trailer', frameUnsigned(data, [7, 48], [['x-amz-checksum-crc32', crc32b64(data)]]), { auth: UNSIGNED_TRAILER }, 2],
  ];
  for (const [name, body, opts, tolerated] of cases) {
    let wrong = 0;
    for (let cut = 0; cut < body.length; cut++) {
      const res = await decode(body.subarray(0, cut), opts);
      const missing = body.length - cut;
      if (missing <= tolerated) {
        if (res.err !== undefined || !res.out.equals(data)) wrong++;
      } else if (!(res.err instanceof S3Error)) {
        // A cut inside the last trailer line can look complete in unsigned mode only if no byte of payload is lost.
        if (!(name === 'unsigned trailer' && res.out.equals(data))) {
          wrong++;
          t.fail(`${name}: cut at ${cut} gave ${codeOf(res.err)}`);
        }
      } else if (res.err.code !== 'IncompleteBody' && res.err.code !== 'SignatureDoesNotMatch') {
        wrong++;
        t.fail(`${name}: cut at ${cut} gave ${res.err.code}`);
      }
    }
    t.equal(wrong, 0, `${name}: every truncation point`);
  }
  // The big example truncated mid-chunk.
  const { body } = frameSigned(DATA, [65536, 1024], { seed: DOC_SEED });
  for (const cut of [0, 50, 86, 1000, 65536 + 86, 65536 + 87, 65536 + 88, 66000, body.length - 3]) {
    const res = await decode(body.subarray(0, cut), { auth: SIGNED }, () => 4096);
    t.ok(isCode(res.err, 'IncompleteBody'), `cut at ${cut}: ${codeOf(res.err)}`);
  }
  t.ok(isCode((await decode(Buffer.alloc(0), { auth: SIGNED })).err, 'IncompleteBody'), 'empty body');
});

t.test('decoded length must match x-amz-decoded-content-length', async (t) => {
  const { body } = frameSigned(DATA, [65536, 1024], { seed: DOC_SEED });
  const shorter = await decode(body, { auth: SIGNED, decodedContentLength: 66561 });
  t.ok(isCode(shorter.err, 'IncompleteBody'), `body shorter than declared: ${codeOf(shorter.err)}`);
  const longer = await decode(body, { auth: SIGNED, decodedContentLength: 66559 });
  t.ok(isCode(longer.err, 'IncompleteBody'), `body longer than declared: ${codeOf(longer.err)}`);
  t.equal(longer.out.length, 65536, 'the overflowing chunk is rejected before it is emitted');
  const zero = await decode(frameSigned(Buffer.alloc(0), [], { seed: DOC_SEED }).body, { auth: SIGNED, decodedContentLength: 0 });
  t.equal(zero.err, undefined, 'empty payload');
  t.equal(zero.out.length, 0);
  const unsigned = await decode(frameUnsigned(DATA, [66560], []), { auth: UNSIGNED_TRAILER, decodedContentLength: 100 });
  t.ok(isCode(unsigned.err, 'IncompleteBody'), 'unsigned mode too');
  for (const bad of [NaN, -1, 1.5, Infinity]) {
    t.throws(() => new ChunkDecoder({ auth: SIGNED, decodedContentLength: bad }), S3Error, `decodedContentLength ${bad}`);
  }
});

t.test('garbage framing', async (t) => {
  const sig0 = chunkSignature(DOC_SEED, Buffer.from('hello'));
  const cases: Array<[string, Buffer, VerifiedAuth, S3ErrorCode]> = [
    ['non-hex size', Buffer.from(`zz;chunk-signature=${sig0}\r\nhello\r\n`), SIGNED, 'IncompleteBody'],
    ['empty size', Buffer.from(`;chunk-signature=${sig0}\r\nhello\r\n`), SIGNED, 'IncompleteBody'],
    ['negative size', Buffer.from('-5\r\nhello\r\n0\r\n\r\n'), UNSIGNED_TRAILER, 'IncompleteBody'],
    ['size too long', Buffer.from('00000000000000005\r\nhello\r\n0\r\n\r\n'), UNSIGNED_TRAILER, 'IncompleteBody'],
    ['line too long', Buffer.alloc(5000, '1'), UNSIGNED_TRAILER, 'IncompleteBody'],
    ['chunk too large', Buffer.from('1000001\r\n'), UNSIGNED_TRAILER, 'InvalidArgument'],
    ['huge size', Buffer.from('ffffffffffffffff\r\n'), UNSIGNED_TRAILER, 'InvalidArgument'],
    ['no CRLF after data', Buffer.from(`5;chunk-signature=${sig0}\r\nhelloXX`), SIGNED, 'IncompleteBody'],
    ['LF only after data', Buffer.from('5\r\nhello\n0\r\n\r\n'), UNSIGNED_TRAILER, 'IncompleteBody'],
    ['data after the end', Buffer.from('5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n'), UNSIGNED_TRAILER, 'IncompleteBody'],
    ['bad trailer line', Buffer.from('5\r\nhello\r\n0\r\nnot a header\r\n\r\n'), UNSIGNED_TRAILER, 'IncompleteBody'],
    ['empty trailer name', Buffer.from('5\r\nhello\r\n0\r\n:x\r\n\r\n'), UNSIGNED_TRAILER, 'IncompleteBody'],
    ['duplicate trailer', Buffer.from('0\r\na:1\r\na:2\r\n\r\n'), UNSIGNED_TRAILER, 'InvalidArgument'],
    ['huge trailer', Buffer.concat([Buffer.from('0\r\n'), Buffer.from(Array.from({ length: 100 }, (_, i) => `x-amz-meta-${i}:${'v'.repeat(200)}\r\n`).join(''))]), UNSIGNED_TRAILER, 'IncompleteBody'],
    ['trailers without trailer mode', Buffer.concat([frameSigned(Buffer.from('hello'), [5], { seed: DOC_SEED }).body.subarray(0, -2), Buffer.from('x-amz-checksum-crc32:AAAAAA==\r\n\r\n')]), SIGNED, 'IncompleteBody'],
  ];
  for (const [name, body, a, code] of cases) {
    for (const next of [undefined, () => 1]) {
      const res = await decode(body, { auth: a }, next);
      t.ok(isCode(res.err, code), `${name}: ${codeOf(res.err)}`);
    }
  }
  t.ok(isCode((await decode(Buffer.from('5\r\nhello\r\n0\r\n\r\n'), { auth: UNSIGNED_TRAILER, maxChunkSize: 4 })).err, 'InvalidArgument'), 'maxChunkSize option');
  t.throws(() => new ChunkDecoder({ auth: auth({ kind: 'unsigned' }, DOC_SEED) }), S3Error, 'non-streaming payload');
  t.throws(() => new ChunkDecoder({ auth: auth({ kind: 'signed', sha256: EMPTY_SHA256 }, DOC_SEED) }), S3Error, 'signed payload');
});

t.test('fuzz: corrupted bodies never yield a non-S3Error or wrong data', async (t) => {
  const r = rng(2024);
  const data = Buffer.from('fuzzing the aws-chunked decoder with corrupted framing and payload bytes!');
  const trailers = [['x-amz-checksum-crc32', crc32b64(data)] as const];
  const bodies: Array<[Buffer, VerifiedAuth]> = [
    [frameSigned(data, [30, 30, 14], { seed: DOC_SEED }).body, SIGNED],
    [frameSigned(data, [50, 24], { seed: TRAILER_SEED, trailers }).body, SIGNED_TRAILER],
    [frameUnsigned(data, [10, 64], trailers), UNSIGNED_TRAILER],
  ];
  let problems = 0;
  for (let i = 0; i < 3000; i++) {
    const [orig, a] = bodies[i % bodies.length] as [Buffer, VerifiedAuth];
    const body = Buffer.from(orig);
    const flips = 1 + Math.floor(r() * 3);
    for (let f = 0; f < flips; f++) body[Math.floor(r() * body.length)] = Math.floor(r() * 256);
    const res = await decode(body, { auth: a, decodedContentLength: r() < 0.5 ? data.length : undefined }, () => 1 + Math.floor(r() * 40));
    if (res.err === undefined) {
      // A harmless change (e.g. hex case of a size, a trailer in unsigned mode) may pass; signed data never changes.
      if (a !== UNSIGNED_TRAILER && !res.out.equals(data)) {
        problems++;
        t.fail(`#${i}: corrupted signed body accepted with different data`);
      }
    } else if (!(res.err instanceof S3Error)) {
      problems++;
      t.fail(`#${i}: ${String(res.err)}`);
    }
  }
  t.equal(problems, 0);
});

t.test('throughput smoke test: 32 MiB signed upload in socket-sized slices', async (t) => {
  const data = Buffer.alloc(32 * 1024 * 1024, 7);
  const { body } = frameSigned(data, splitSizes(data.length, 64 * 1024), { seed: DOC_SEED });
  const start = process.hrtime.bigint();
  const res = await decode(body, { auth: SIGNED, decodedContentLength: data.length }, () => 65536);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  t.equal(res.err, undefined);
  t.equal(res.out.length, data.length);
  t.ok(res.out.equals(data));
  t.comment(`decoded 32 MiB in ${ms.toFixed(0)} ms (${((32 / ms) * 1000).toFixed(0)} MiB/s)`);
});
