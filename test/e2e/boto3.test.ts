// boto3 flexible checksums against the real server, over HTTPS (botocore sends
// STREAMING-UNSIGNED-PAYLOAD-TRAILER with the checksum in a trailer) and over HTTP (signed payload,
// checksum in an x-amz-checksum-* header). The Python side is test/python/boto3_checksums.py; this
// file computes every expected checksum itself (test/helpers/checksums.ts) and asserts on its JSON.
//
// botocore computes CRC32C and CRC64NVME only with awscrt. PyPI is out of reach here, so .ci/run
// installs Debian's python3-awscrt (0.16: crc32c, no crc64nvme) and this file lends just that module
// to the machine's python (PYTHONPATH to a folder of symlinks). An algorithm botocore still cannot
// compute is reported "needs-awscrt"; this file uploads CRC32C and CRC64NVME with raw aws-chunked
// trailer requests of its own in any case (unsigned trailer over HTTPS, signed trailer over HTTP),
// and has boto3 read them back with ChecksumMode.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../helpers/server.js';
import { RawS3, randomData, errorCode } from '../helpers/s3-client.js';
import { writeAwsConfig, isolatedAwsEnv } from '../helpers/aws-cli.js';
import { CHECKSUM_ALGORITHMS, checksumBase64, checksumHeaderName, sha256Hex, md5Hex, type ChecksumAlgorithm } from '../helpers/checksums.js';

const SCRIPT = fileURLToPath(new URL('../../../test/python/boto3_checksums.py', import.meta.url));
const BUCKET = 'boto3-checksums';

interface PyPut {
  algorithm: ChecksumAlgorithm;
  key: string;
  status: 'ok' | 'needs-awscrt' | 'error';
  error?: string;
  wire?: { contentSha256?: string; contentEncoding?: string; trailer?: string; sdkChecksumAlgorithm?: string; checksumHeaders: string[] } | null;
  putChecksum?: string | null;
  putETag?: string | null;
  get?: { sha256: string; length: number; contentLength: number; checksum: string | null; checksumHeader: string | null; contentEncoding: string | null; etag: string | null };
  head?: { checksum: string | null; contentLength: number };
}

interface PyOut {
  hasCrt: boolean;
  crtAlgorithms: string[];
  botocore: string;
  dataSha256: string;
  puts: PyPut[];
  gets: Array<{ key: string; algorithm: ChecksumAlgorithm; sha256?: string; checksum?: string | null; contentEncoding?: string | null; error?: string }>;
  wrongChecksum: { key: string; value: string; status: number | null; code: string | null; headAfter: number };
  failures: string[];
}

const server = await startServer({ tls: true });
t.teardown(() => server.stop());
const awsFiles = await writeAwsConfig(server.tmpRoot);

// 1.5 MiB + 7 bytes: more than one aws-chunked chunk for botocore (1 MiB chunks) and for ours (64 KiB).
const data = randomData(1536 * 1024 + 7);
const dataFile = join(server.tmpRoot, 'payload.bin');
await writeFile(dataFile, data);
const expected = Object.fromEntries(CHECKSUM_ALGORITHMS.map((a) => [a, checksumBase64(a, data)])) as Record<ChecksumAlgorithm, string>;

const transports = [
  { name: 'https', endpoint: { url: server.tlsUrl ?? '', caFile: server.caFile } },
  { name: 'http', endpoint: { url: server.url } },
] as const;

t.test('bucket for the run', async (t) => {
  const root = new RawS3({ url: server.url }, server.rootKey);
  const res = await root.createBucket(BUCKET);
  t.equal(res.status, 200, res.status === 200 ? 'CreateBucket' : `CreateBucket: ${res.text}`);
});

/** Debian's awscrt, built for the same CPython minor version, made importable without its neighbours. */
const DEBIAN_DIST_PACKAGES = '/usr/lib/python3/dist-packages';

async function awscrtPath(dir: string): Promise<string | undefined> {
  const entries = await readdir(DEBIAN_DIST_PACKAGES).catch(() => [] as string[]);
  const wanted = entries.filter((e) => e === 'awscrt' || e.startsWith('_awscrt.'));
  if (!wanted.includes('awscrt')) return undefined;
  const target = join(dir, 'awscrt-path');
  await mkdir(target, { recursive: true });
  for (const e of wanted) await symlink(join(DEBIAN_DIST_PACKAGES, e), join(target, e));
  return target;
}

function runPython(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...isolatedAwsEnv(awsFiles, server.rootKey) };
  if (crtPath) env.PYTHONPATH = crtPath;
  return new Promise((resolve) => {
    execFile('python3', [SCRIPT, ...args], { env, maxBuffer: 16 * 1024 * 1024, timeout: 300_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

const crtPath = await awscrtPath(server.tmpRoot);

for (const transport of transports) {
  t.test(`boto3 checksums over ${transport.name}`, async (t) => {
    const prefix = `${transport.name}/`;
    const s3 = new RawS3(transport.endpoint, server.rootKey);

    // Raw trailer uploads for the algorithms botocore cannot compute without awscrt. They are run
    // whether or not awscrt is present: they also pin the trailer wire format independently of botocore.
    const rawKeys: Array<{ key: string; algorithm: ChecksumAlgorithm }> = [];
    for (const algorithm of ['CRC32C', 'CRC64NVME'] as const) {
      const key = `${prefix}raw-trailer-${algorithm.toLowerCase()}`;
      const trailers: Array<[string, string]> = [[checksumHeaderName(algorithm), expected[algorithm]]];
      const headers = { 'x-amz-sdk-checksum-algorithm': algorithm };
      const res =
        transport.name === 'https'
          ? await s3.putUnsignedTrailer(BUCKET, key, data, { chunkSize: 65536, trailers, headers })
          : await s3.putSignedChunks(BUCKET, key, data, { chunkSize: 65536, trailers, headers });
      t.equal(res.status, 200, res.status === 200 ? `raw ${algorithm} trailer PUT` : `raw ${algorithm} trailer PUT: ${res.text}`);
      t.equal(res.headers['etag'], `"${md5Hex(data)}"`, `${algorithm}: ETag is the MD5 of the decoded bytes`);
      const got = await s3.getObject(BUCKET, key, { 'x-amz-checksum-mode': 'ENABLED' });
      t.equal(got.status, 200);
      t.equal(sha256Hex(got.body), sha256Hex(data), `${algorithm}: bytes round trip`);
      t.equal(got.headers[checksumHeaderName(algorithm)], expected[algorithm], `${algorithm}: GET returns the stored checksum`);
      t.notMatch(got.headers['content-encoding'] ?? '', /aws-chunked/, 'aws-chunked is not stored as Content-Encoding');
      const head = await s3.headObject(BUCKET, key, { 'x-amz-checksum-mode': 'ENABLED' });
      t.equal(head.status, 200);
      t.equal(head.headers[checksumHeaderName(algorithm)], expected[algorithm], `${algorithm}: HEAD returns the stored checksum`);
      t.equal(head.headers['content-length'], String(data.length));
      rawKeys.push({ key, algorithm });
    }

    const args = ['--endpoint', transport.endpoint.url, '--bucket', BUCKET, '--data-file', dataFile, '--key-prefix', prefix, '--get-keys', JSON.stringify(rawKeys)];
    if (transport.name === 'https' && server.caFile) args.push('--ca-bundle', server.caFile);
    const py = await runPython(args);
    let out: PyOut;
    try {
      out = JSON.parse(py.stdout) as PyOut;
    } catch {
      t.fail(`boto3 script printed no JSON (exit ${py.code}):\n${py.stdout}\n${py.stderr}`);
      return;
    }
    t.equal(py.code, 0, `boto3 script exit code; failures: ${JSON.stringify(out.failures)}\n${py.stderr.slice(-4000)}`);
    t.equal(out.dataSha256, sha256Hex(data), 'python read the same payload');
    t.comment(`botocore ${out.botocore}, awscrt ${out.hasCrt ? `present (${out.crtAlgorithms.join(', ')})` : 'absent'}`);

    t.same(out.puts.map((p) => p.algorithm).sort(), [...CHECKSUM_ALGORITHMS].sort(), 'every algorithm was tried');
    for (const put of out.puts) {
      const algo = put.algorithm;
      if (put.status === 'needs-awscrt') {
        t.notOk(out.crtAlgorithms.includes(algo), `${algo}: only skipped when awscrt lacks it`);
        t.ok(algo === 'CRC32C' || algo === 'CRC64NVME', `${algo}: botocore needs awscrt only for CRC32C/CRC64NVME`);
        t.ok(rawKeys.some((k) => k.algorithm === algo), `${algo}: covered by the raw trailer upload above`);
        continue;
      }
      t.equal(put.status, 'ok', put.error ? `${algo}: boto3 put/get: ${put.error}` : `${algo}: boto3 put/get succeeded`);
      if (put.status !== 'ok') continue;
      t.equal(put.putChecksum, expected[algo], `${algo}: PutObject response echoes the right checksum`);
      t.equal(put.putETag, `"${md5Hex(data)}"`, `${algo}: ETag`);
      t.equal(put.get?.sha256, sha256Hex(data), `${algo}: bytes round trip`);
      t.equal(put.get?.contentLength, data.length, `${algo}: ContentLength`);
      t.equal(put.get?.checksum, expected[algo], `${algo}: GetObject(ChecksumMode=ENABLED) returns it`);
      t.equal(put.head?.checksum, expected[algo], `${algo}: HeadObject(ChecksumMode=ENABLED) returns it`);
      t.notMatch(put.get?.contentEncoding ?? '', /aws-chunked/, `${algo}: no aws-chunked Content-Encoding stored`);
      if (transport.name === 'https') {
        t.equal(put.wire?.contentSha256, 'STREAMING-UNSIGNED-PAYLOAD-TRAILER', `${algo}: botocore used the trailer path over TLS`);
        t.equal(put.wire?.trailer, checksumHeaderName(algo), `${algo}: x-amz-trailer`);
      } else {
        t.match(put.wire?.contentSha256 ?? '', /^[0-9a-f]{64}$/, `${algo}: botocore signed the payload over HTTP`);
        t.ok(put.wire?.checksumHeaders.includes(checksumHeaderName(algo)), `${algo}: checksum sent as a header over HTTP`);
      }
    }

    t.equal(out.gets.length, rawKeys.length);
    for (const g of out.gets) {
      t.notOk(g.error, g.error ? `boto3 get of ${g.key}: ${g.error}` : `boto3 get of ${g.key}`);
      t.equal(g.sha256, sha256Hex(data), `${g.algorithm}: boto3 reads the raw-uploaded bytes`);
      t.equal(g.checksum, expected[g.algorithm], `${g.algorithm}: boto3 sees the stored checksum`);
    }

    t.equal(out.wrongChecksum.status, 400, 'wrong ChecksumCRC32 -> 400');
    t.equal(out.wrongChecksum.code, 'BadDigest', 'wrong ChecksumCRC32 -> BadDigest');
    t.equal(out.wrongChecksum.headAfter, 404, 'the object with a wrong checksum was not stored');
  });
}

t.test('wrong ChecksumCRC32 header on a raw PUT -> BadDigest, nothing stored', async (t) => {
  const s3 = new RawS3({ url: server.url }, server.rootKey);
  const key = 'raw-wrong-crc32-header';
  const wrong = Buffer.from(expected.CRC32, 'base64');
  wrong[0] = (wrong[0] ?? 0) ^ 0xff;
  const res = await s3.putObject(BUCKET, key, data, { 'x-amz-checksum-crc32': wrong.toString('base64'), 'x-amz-sdk-checksum-algorithm': 'CRC32' });
  t.equal(res.status, 400, res.text);
  t.equal(errorCode(res), 'BadDigest');
  const head = await s3.headObject(BUCKET, key);
  t.equal(head.status, 404);
});
