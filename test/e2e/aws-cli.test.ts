// aws-cli (v1, the real `aws` binary) against the real server, over HTTP and over HTTPS with a
// certificate generated for this run. One server for the whole file; the same assertions run for
// both transports. aws-cli sends checksum trailers (STREAMING-UNSIGNED-PAYLOAD-TRAILER) only over TLS,
// so the HTTPS pass exercises the trailer decoder and the HTTP pass the signed-payload path.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startServer } from '../helpers/server.js';
import { runAws, writeAwsConfig, type AwsTarget } from '../helpers/aws-cli.js';
import { checksumBase64, md5Hex, sha256Hex } from '../helpers/checksums.js';
import { randomData } from '../helpers/s3-client.js';
import { parseS3Error } from '../helpers/xml.js';

const server = await startServer({ tls: true });
t.teardown(() => server.stop());
const awsFiles = await writeAwsConfig(server.tmpRoot);

// The files uploaded by `aws s3 cp --recursive`: 0 B, 1 KiB, 5 MiB (below the 8 MiB multipart
// threshold, so one PutObject) and a small tree for the delimiter listing.
const files: Record<string, Buffer> = {
  'empty.bin': Buffer.alloc(0),
  'one-kib.bin': randomData(1024),
  'five-mib.bin': randomData(5 * 1024 * 1024),
  'nested/a.txt': Buffer.from('a\n'),
  'nested/sub1/b.txt': Buffer.from('b\n'),
  'nested/sub2/c.txt': Buffer.from('c\n'),
  // A name that aws cli must escape: space, non-ASCII, and URL metacharacters.
  'spaced ünï+&=.txt': randomData(333),
};
const metaBody = randomData(4096 + 3);

function curl(url: string, outFile: string, caFile?: string): Promise<{ status: number; stderr: string }> {
  const args = ['-sS', '-o', outFile, '-w', '%{http_code}'];
  if (caFile) args.push('--cacert', caFile);
  args.push(url);
  return new Promise((resolve) => {
    execFile('curl', args, { timeout: 60_000 }, (_err, stdout, stderr) => resolve({ status: Number(stdout.trim()), stderr }));
  });
}

function asRecord(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

const transports = [
  { name: 'http', endpoint: server.url, caFile: undefined },
  { name: 'https', endpoint: server.tlsUrl ?? '', caFile: server.caFile },
] as const;

for (const transport of transports) {
  t.test(`aws cli over ${transport.name}`, async (t) => {
    const bucket = `cli-${transport.name}`;
    const work = join(server.tmpRoot, `work-${transport.name}`);
    const upDir = join(work, 'up');
    const downDir = join(work, 'down');
    for (const [name, bytes] of Object.entries(files)) {
      await mkdir(join(upDir, name, '..'), { recursive: true });
      await writeFile(join(upDir, name), bytes);
    }
    await writeFile(join(work, 'meta-body.bin'), metaBody);
    const target: AwsTarget = { endpoint: transport.endpoint, caFile: transport.caFile, credentials: server.rootKey, files: awsFiles };
    const aws = (args: string[]) => runAws(target, args, work);
    const ok = (r: { code: number; stdout: string; stderr: string }, what: string): boolean =>
      t.equal(r.code, 0, r.code === 0 ? `${what}: exit 0` : `${what}: exit 0\nstdout: ${r.stdout.slice(0, 2000)}\nstderr: ${r.stderr.slice(0, 4000)}`);

    const mb = await aws(['s3', 'mb', `s3://${bucket}`]);
    ok(mb, 's3 mb');
    t.match(mb.stdout, `make_bucket: ${bucket}`);

    const up = await aws(['s3', 'cp', upDir, `s3://${bucket}/up/`, '--recursive']);
    ok(up, 's3 cp --recursive (upload)');

    // An already-expiring presigned URL, checked at the end of this pass (>= 2 s later).
    const expiring = await aws(['s3', 'presign', `s3://${bucket}/up/one-kib.bin`, '--expires-in', '1']);
    const expiringAt = Date.now();
    ok(expiring, 's3 presign --expires-in 1');

    const [down, singleUp] = await Promise.all([
      aws(['s3', 'cp', `s3://${bucket}/up/`, downDir, '--recursive']),
      aws(['s3', 'cp', join(upDir, 'five-mib.bin'), `s3://${bucket}/single/five.bin`]),
    ]);
    ok(down, 's3 cp --recursive (download)');
    ok(singleUp, 's3 cp (single upload)');
    for (const [name, bytes] of Object.entries(files)) {
      let got: Buffer | undefined;
      try {
        got = await readFile(join(downDir, name));
      } catch {
        got = undefined;
      }
      t.equal(got === undefined ? 'missing' : sha256Hex(got), sha256Hex(bytes), `downloaded ${name} (${bytes.length} B) equals the upload`);
    }
    const singleDown = await aws(['s3', 'cp', `s3://${bucket}/single/five.bin`, join(work, 'five-down.bin')]);
    ok(singleDown, 's3 cp (single download)');
    t.equal(sha256Hex(await readFile(join(work, 'five-down.bin')).catch(() => Buffer.from('missing'))), sha256Hex(files['five-mib.bin'] ?? Buffer.alloc(0)), 'single 5 MiB round trip');

    const [lsBuckets, lsObjects, put] = await Promise.all([
      aws(['s3', 'ls']),
      aws(['s3', 'ls', `s3://${bucket}/up/`]),
      aws([
        's3api', 'put-object', '--bucket', bucket, '--key', 'meta/obj.bin', '--body', 'meta-body.bin',
        '--metadata', JSON.stringify({ color: 'blue', note: 'hello world' }),
        '--content-type', 'application/x-e2e', '--cache-control', 'max-age=60, public',
      ]),
    ]);
    ok(lsBuckets, 's3 ls');
    t.ok(lsBuckets.stdout.split('\n').some((l) => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d /.test(l) && l.trim().endsWith(` ${bucket}`)), `s3 ls lists ${bucket}:\n${lsBuckets.stdout}`);
    ok(lsObjects, 's3 ls s3://bucket/up/');
    const lsLines = lsObjects.stdout.split('\n').map((l) => l.trim()).filter(Boolean);
    t.ok(lsLines.includes('PRE nested/'), `PRE nested/ in:\n${lsObjects.stdout}`);
    const sizes: Record<string, number> = {};
    for (const line of lsLines) {
      const m = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+(\d+) (.+)$/.exec(line);
      if (m?.[1] && m[2]) sizes[m[2]] = Number(m[1]);
    }
    t.same(sizes, { 'empty.bin': 0, 'five-mib.bin': 5 * 1024 * 1024, 'one-kib.bin': 1024, 'spaced ünï+&=.txt': 333 }, 'object names and sizes listed');
    ok(put, 's3api put-object');
    t.equal(asRecord(put.json)['ETag'], `"${md5Hex(metaBody)}"`, 'put-object ETag is the quoted MD5');

    const [head, range, suffix, listed] = await Promise.all([
      aws(['s3api', 'head-object', '--bucket', bucket, '--key', 'meta/obj.bin', '--checksum-mode', 'ENABLED']),
      aws(['s3api', 'get-object', '--bucket', bucket, '--key', 'meta/obj.bin', '--range', 'bytes=100-199', 'range.bin']),
      aws(['s3api', 'get-object', '--bucket', bucket, '--key', 'meta/obj.bin', '--range', 'bytes=-10', 'suffix.bin']),
      aws(['s3api', 'list-objects-v2', '--bucket', bucket, '--prefix', 'up/nested/', '--delimiter', '/']),
    ]);
    ok(head, 's3api head-object');
    const h = asRecord(head.json);
    t.equal(h['ContentLength'], metaBody.length, 'head-object ContentLength');
    t.equal(h['ETag'], `"${md5Hex(metaBody)}"`, 'head-object ETag');
    t.same(h['Metadata'], { color: 'blue', note: 'hello world' }, 'metadata round trip, exactly');
    t.equal(h['ContentType'], 'application/x-e2e', 'ContentType');
    t.equal(h['CacheControl'], 'max-age=60, public', 'CacheControl');
    t.equal(h['ContentEncoding'], undefined, 'no Content-Encoding stored (aws-chunked is transport framing)');
    // botocore >= 1.36 sends a CRC32 with every PutObject (a trailer over TLS, a header over HTTP).
    t.equal(h['ChecksumCRC32'], checksumBase64('CRC32', metaBody), 'the CRC32 aws cli sent is stored and returned');

    ok(range, 'get-object --range bytes=100-199');
    const r = asRecord(range.json);
    t.equal(r['ContentRange'], `bytes 100-199/${metaBody.length}`, 'ContentRange');
    t.equal(r['ContentLength'], 100, 'ContentLength of the range');
    t.equal(sha256Hex(await readFile(join(work, 'range.bin')).catch(() => Buffer.alloc(0))), sha256Hex(metaBody.subarray(100, 200)), 'range bytes');

    ok(suffix, 'get-object --range bytes=-10');
    const s = asRecord(suffix.json);
    t.equal(s['ContentRange'], `bytes ${metaBody.length - 10}-${metaBody.length - 1}/${metaBody.length}`, 'suffix ContentRange');
    t.equal(sha256Hex(await readFile(join(work, 'suffix.bin')).catch(() => Buffer.alloc(0))), sha256Hex(metaBody.subarray(-10)), 'suffix bytes');

    ok(listed, 'list-objects-v2 --prefix --delimiter');
    const l = asRecord(listed.json);
    const contents = Array.isArray(l['Contents']) ? (l['Contents'] as unknown[]).map((c) => asRecord(c)['Key']) : [];
    const prefixes = Array.isArray(l['CommonPrefixes']) ? (l['CommonPrefixes'] as unknown[]).map((c) => asRecord(c)['Prefix']) : [];
    t.same(contents, ['up/nested/a.txt'], 'Contents');
    t.same(prefixes, ['up/nested/sub1/', 'up/nested/sub2/'], 'CommonPrefixes');

    const presigned = await aws(['s3', 'presign', `s3://${bucket}/up/one-kib.bin`, '--expires-in', '600']);
    ok(presigned, 's3 presign');
    const presignedUrl = presigned.stdout.trim();
    t.ok(presignedUrl.startsWith(`${transport.endpoint}/${bucket}/up/one-kib.bin?`), `path-style presigned URL: ${presignedUrl}`);
    const fetched = await curl(presignedUrl, join(work, 'presigned.bin'), transport.caFile);
    t.equal(fetched.status, 200, `curl presigned URL ${fetched.stderr}`);
    t.equal(sha256Hex(await readFile(join(work, 'presigned.bin'))), sha256Hex(files['one-kib.bin'] ?? Buffer.alloc(0)), 'presigned GET bytes');

    const rm = await aws(['s3', 'rm', `s3://${bucket}/up/one-kib.bin`]);
    ok(rm, 's3 rm');
    t.match(rm.stdout, `delete: s3://${bucket}/up/one-kib.bin`);
    const [afterRm, headGone] = await Promise.all([
      // --page-size 2: aws cli follows continuation tokens and merges the pages.
      aws(['s3api', 'list-objects-v2', '--bucket', bucket, '--prefix', 'up/', '--page-size', '2']),
      aws(['s3api', 'head-object', '--bucket', bucket, '--key', 'up/one-kib.bin']),
    ]);
    ok(afterRm, 'list-objects-v2 after rm');
    const keysAfter = Array.isArray(asRecord(afterRm.json)['Contents'])
      ? (asRecord(afterRm.json)['Contents'] as unknown[]).map((c) => asRecord(c)['Key'])
      : [];
    t.same(
      keysAfter,
      ['up/empty.bin', 'up/five-mib.bin', 'up/nested/a.txt', 'up/nested/sub1/b.txt', 'up/nested/sub2/c.txt', 'up/spaced ünï+&=.txt'],
      'keys after rm, in order, across pages of 2',
    );
    t.not(headGone.code, 0, 'head-object of the removed key fails');
    t.match(headGone.stderr, /\(404\)/, `head-object of the removed key: 404 (${headGone.stderr.trim()})`);

    // The 1-second presigned URL, now at least 2 s old.
    const wait = expiringAt + 2100 - Date.now();
    if (wait > 0) await sleep(wait);
    // The key was removed above; the URL must fail on its signature's age first. Re-create it so
    // only the expiry can explain a refusal.
    const reput = await aws(['s3', 'cp', join(upDir, 'one-kib.bin'), `s3://${bucket}/up/one-kib.bin`]);
    ok(reput, 're-upload for the expired URL check');
    const expired = await curl(expiring.stdout.trim(), join(work, 'expired.xml'), transport.caFile);
    t.equal(expired.status, 403, 'expired presigned URL -> 403');
    t.equal(parseS3Error(await readFile(join(work, 'expired.xml'), 'utf8')).code, 'AccessDenied', 'expired presigned URL -> AccessDenied');
  });
}
