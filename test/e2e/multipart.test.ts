// Multipart uploads against the real server: `aws s3api` by hand (create, upload-part, upload-part-copy,
// list-parts, complete, get-object --part-number, abort, list-multipart-uploads and the AWS errors),
// `aws s3 cp` of a 20 MiB file up and down over HTTP and HTTPS with the multipart threshold lowered,
// boto3 upload_file/download_file and a FULL_OBJECT CRC32 upload (test/python/boto3_multipart.py),
// raw signed requests for permissions, conditional completes and bucket deletion, and 8 writers
// overwriting one key with multipart objects while 8 readers GET it: every read is one whole version.
import t from 'tap';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBucketKey, startServer } from '../helpers/server.js';
import { isolatedAwsEnv, runAws, type AwsConfigFiles, type AwsResult, type AwsTarget } from '../helpers/aws-cli.js';
import { crc32, md5Hex, sha256Hex } from '../helpers/checksums.js';
import { RawS3, errorCode, randomData } from '../helpers/s3-client.js';
import type { RawResponse } from '../helpers/raw-http.js';
import { xmlText, xmlTexts } from '../helpers/xml.js';

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

const MIB = 1024 * 1024;
const SCRIPT = fileURLToPath(new URL('../../../test/python/boto3_multipart.py', import.meta.url));

const server = await startServer({ tls: true });
t.teardown(() => server.stop());

// aws cli config of our own: path-style, one attempt, multipart from 5 MiB in 5 MiB parts.
const files: AwsConfigFiles = { configFile: join(server.tmpRoot, 'aws-mp-config'), credentialsFile: join(server.tmpRoot, 'aws-mp-credentials') };
await writeFile(
  files.configFile,
  ['[default]', 'region = us-east-1', 'output = json', 'max_attempts = 1', 's3 =', '    addressing_style = path', '    multipart_threshold = 5MB', '    multipart_chunksize = 5MB', ''].join('\n'),
);
await writeFile(files.credentialsFile, '');
const work = server.tmpRoot;
const http: AwsTarget = { endpoint: server.url, credentials: server.rootKey, files };
const https: AwsTarget = { endpoint: server.tlsUrl ?? '', caFile: server.caFile, credentials: server.rootKey, files };
const aws = (target: AwsTarget, args: string[]): Promise<AwsResult> => runAws(target, args, work);
const raw = new RawS3({ url: server.url }, server.rootKey);

const BUCKET = 'multipart';

function asRecord(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function ok(t: TapTest, r: AwsResult, what: string): boolean {
  return t.equal(r.code, 0, r.code === 0 ? `${what}: exit 0` : `${what}: exit 0\nstdout: ${r.stdout.slice(0, 2000)}\nstderr: ${r.stderr.slice(0, 4000)}`);
}

function fails(t: TapTest, r: AwsResult, code: string, what: string): void {
  t.not(r.code, 0, `${what}: fails`);
  t.match(r.stderr, code, `${what}: ${code}\n${r.stderr.slice(0, 2000)}`);
}

/** The ETag S3 gives an object uploaded in these parts. */
function multipartEtag(parts: Buffer[]): string {
  const md5 = createHash('md5');
  for (const p of parts) md5.update(createHash('md5').update(p).digest());
  return `"${md5.digest('hex')}-${parts.length}"`;
}

function completeXml(parts: Array<{ n: number; etag: string }>): Buffer {
  return Buffer.from(
    `<CompleteMultipartUpload>${parts.map((p) => `<Part><PartNumber>${p.n}</PartNumber><ETag>${p.etag}</ETag></Part>`).join('')}</CompleteMultipartUpload>`,
  );
}

/** Create, upload the parts, complete: over raw signed requests. */
async function rawMultipart(s3: RawS3, key: string, parts: Buffer[], headers: Record<string, string> = {}): Promise<RawResponse> {
  const created = await s3.send({ method: 'POST', bucket: BUCKET, key, query: { uploads: '' } });
  if (created.status !== 200) throw new Error(`CreateMultipartUpload ${created.status}: ${created.text}`);
  const uploadId = xmlText(created.text, 'UploadId') ?? '';
  const etags: string[] = [];
  for (const [i, body] of parts.entries()) {
    const res = await s3.send({ method: 'PUT', bucket: BUCKET, key, query: { partNumber: String(i + 1), uploadId }, body });
    if (res.status !== 200) throw new Error(`UploadPart ${res.status}: ${res.text}`);
    etags.push(res.headers['etag'] ?? '');
  }
  return s3.send({ method: 'POST', bucket: BUCKET, key, query: { uploadId }, body: completeXml(etags.map((etag, i) => ({ n: i + 1, etag }))), headers });
}

t.test('bucket', async (t) => {
  ok(t, await aws(http, ['s3', 'mb', `s3://${BUCKET}`]), 's3 mb');
});

t.test('aws s3api multipart by hand', async (t) => {
  // Independent commands run side by side: each aws process takes most of a second to start.
  const key = 'hand/obj.bin';
  const parts = [randomData(5 * MIB), randomData(5 * MIB + 3), randomData(1000)];
  for (const [i, p] of parts.entries()) await writeFile(join(work, `part${i + 1}.bin`), p);
  const whole = Buffer.concat(parts);
  const s3api = (...args: string[]): Promise<AwsResult> => aws(http, ['s3api', ...args]);
  const inUpload = (id: string): string[] => ['--bucket', BUCKET, '--key', key, '--upload-id', id];

  const created = await s3api('create-multipart-upload', '--bucket', BUCKET, '--key', key, '--content-type', 'text/x-hand', '--metadata', 'color=blue');
  ok(t, created, 'create-multipart-upload');
  const uploadId = String(asRecord(created.json)['UploadId'] ?? '');
  t.match(uploadId, /^[0-9a-f]{12}[A-Za-z0-9]{32}$/, 'upload id');

  const uploaded = await Promise.all([1, 2, 3].map((n) => s3api('upload-part', ...inUpload(uploadId), '--part-number', String(n), '--body', `part${n}.bin`)));
  const etags = uploaded.map((up, i) => {
    ok(t, up, `upload-part ${i + 1}`);
    const etag = String(asRecord(up.json)['ETag'] ?? '');
    t.equal(etag, `"${md5Hex(parts[i] as Buffer)}"`, `part ${i + 1} ETag is the quoted MD5`);
    return etag;
  });
  const [again, uploads] = await Promise.all([
    s3api('upload-part', ...inUpload(uploadId), '--part-number', '2', '--body', 'part2.bin'),
    s3api('list-multipart-uploads', '--bucket', BUCKET),
  ]);
  ok(t, again, 'upload-part 2 again (replaces it)');
  ok(t, uploads, 'list-multipart-uploads');
  t.ok(((asRecord(uploads.json)['Uploads'] as Array<Record<string, unknown>> | undefined) ?? []).some((u) => u['UploadId'] === uploadId && u['Key'] === key), 'the upload is listed');

  const [listed, page, page2] = await Promise.all([
    s3api('list-parts', ...inUpload(uploadId)),
    s3api('list-parts', ...inUpload(uploadId), '--max-parts', '2', '--no-paginate'),
    s3api('list-parts', ...inUpload(uploadId), '--part-number-marker', '2', '--no-paginate'),
  ]);
  ok(t, listed, 'list-parts');
  const listedParts = (asRecord(listed.json)['Parts'] as Array<Record<string, unknown>> | undefined) ?? [];
  t.same(listedParts.map((p) => [p['PartNumber'], p['Size'], p['ETag']]), parts.map((p, i) => [i + 1, p.length, etags[i]]), 'parts, sizes, ETags');
  ok(t, page, 'list-parts --max-parts 2');
  t.match(asRecord(page.json), { IsTruncated: true, NextPartNumberMarker: 2, MaxParts: 2 }, 'first page of two');
  t.same(((asRecord(page2.json)['Parts'] as Array<Record<string, unknown>> | undefined) ?? []).map((p) => p['PartNumber']), [3], 'after marker 2');

  await writeFile(join(work, 'complete.json'), JSON.stringify({ Parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag: i === 1 ? ETag.replace(/"/g, '') : ETag })) }));
  const done = await s3api('complete-multipart-upload', ...inUpload(uploadId), '--multipart-upload', 'file://complete.json');
  ok(t, done, 'complete-multipart-upload (one ETag without quotes)');
  t.equal(asRecord(done.json)['ETag'], multipartEtag(parts), 'ETag: md5 of the part MD5s, -3');

  const small = randomData(4321);
  await writeFile(join(work, 'small.bin'), small);
  const [retry, head, got, part2, headPart, tooFar, across, after, putSmall, copyCreated] = await Promise.all([
    s3api('complete-multipart-upload', ...inUpload(uploadId), '--multipart-upload', 'file://complete.json'),
    s3api('head-object', '--bucket', BUCKET, '--key', key),
    s3api('get-object', '--bucket', BUCKET, '--key', key, 'whole.bin'),
    s3api('get-object', '--bucket', BUCKET, '--key', key, '--part-number', '2', 'p2.bin'),
    s3api('head-object', '--bucket', BUCKET, '--key', key, '--part-number', '3'),
    s3api('get-object', '--bucket', BUCKET, '--key', key, '--part-number', '4', 'p4.bin'),
    s3api('get-object', '--bucket', BUCKET, '--key', key, '--range', `bytes=${5 * MIB - 10}-${10 * MIB + 10}`, 'across.bin'),
    s3api('list-multipart-uploads', '--bucket', BUCKET),
    s3api('put-object', '--bucket', BUCKET, '--key', 'hand/small.bin', '--body', 'small.bin'),
    s3api('create-multipart-upload', '--bucket', BUCKET, '--key', 'hand/copied.bin'),
  ]);
  ok(t, retry, 'completing again answers like the first time (AWS)');
  t.equal(asRecord(retry.json)['ETag'], multipartEtag(parts));
  ok(t, head, 'head-object');
  t.match(asRecord(head.json), { ContentLength: whole.length, ETag: multipartEtag(parts), ContentType: 'text/x-hand', Metadata: { color: 'blue' } });
  ok(t, got, 'get-object');
  t.equal(sha256Hex(await readFile(join(work, 'whole.bin'))), sha256Hex(whole), 'whole object bytes');
  ok(t, part2, 'get-object --part-number 2');
  t.match(asRecord(part2.json), { ContentLength: parts[1]?.length, PartsCount: 3, ContentRange: `bytes ${5 * MIB}-${10 * MIB + 2}/${whole.length}` });
  t.equal(sha256Hex(await readFile(join(work, 'p2.bin'))), sha256Hex(parts[1] as Buffer), 'part 2 bytes');
  t.match(asRecord(headPart.json), { ContentLength: 1000, PartsCount: 3 }, 'head-object --part-number 3');
  fails(t, tooFar, 'InvalidPartNumber', 'get-object --part-number 4 of 3');
  ok(t, across, 'get-object --range across three parts');
  t.equal(sha256Hex(await readFile(join(work, 'across.bin'))), sha256Hex(whole.subarray(5 * MIB - 10, 10 * MIB + 11)), 'range bytes');
  t.notOk(((asRecord(after.json)['Uploads'] as Array<Record<string, unknown>> | undefined) ?? []).some((u) => u['UploadId'] === uploadId), 'a completed upload is not listed');
  ok(t, putSmall, 'put-object small');

  // UploadPartCopy: a 5 MiB range across the parts of the object above, then all of a small object.
  const copyUpload = String(asRecord(copyCreated.json)['UploadId'] ?? '');
  const inCopy = ['--bucket', BUCKET, '--key', 'hand/copied.bin', '--upload-id', copyUpload];
  const rangeStart = 5 * MIB - 100;
  const [c1, c2, unknown] = await Promise.all([
    s3api('upload-part-copy', ...inCopy, '--part-number', '1', '--copy-source', `${BUCKET}/${key}`, '--copy-source-range', `bytes=${rangeStart}-${rangeStart + 5 * MIB - 1}`),
    s3api('upload-part-copy', ...inCopy, '--part-number', '2', '--copy-source', `${BUCKET}/hand/small.bin`),
    s3api('upload-part-copy', '--bucket', BUCKET, '--key', 'hand/copied.bin', '--upload-id', 'nope', '--part-number', '1', '--copy-source', `${BUCKET}/hand/small.bin`),
  ]);
  ok(t, c1, 'upload-part-copy with a range');
  ok(t, c2, 'upload-part-copy of a whole object');
  fails(t, unknown, 'NoSuchUpload', 'upload-part-copy to an unknown upload');
  const copiedParts = [whole.subarray(rangeStart, rangeStart + 5 * MIB), small];
  const e1 = String(asRecord(asRecord(c1.json)['CopyPartResult'])['ETag'] ?? '');
  const e2 = String(asRecord(asRecord(c2.json)['CopyPartResult'])['ETag'] ?? '');
  t.equal(e1, `"${md5Hex(copiedParts[0] as Buffer)}"`, 'copied part ETag');
  await writeFile(join(work, 'complete-copy.json'), JSON.stringify({ Parts: [{ PartNumber: 1, ETag: e1 }, { PartNumber: 2, ETag: e2 }] }));
  ok(t, await s3api('complete-multipart-upload', ...inCopy, '--multipart-upload', 'file://complete-copy.json'), 'complete the copy');
  ok(t, await s3api('get-object', '--bucket', BUCKET, '--key', 'hand/copied.bin', 'copied.bin'), 'get the copy');
  t.equal(sha256Hex(await readFile(join(work, 'copied.bin'))), sha256Hex(Buffer.concat(copiedParts)), 'copied bytes');
});

t.test('aws s3api: abort and the errors of complete', async (t) => {
  const s3api = (...args: string[]): Promise<AwsResult> => aws(http, ['s3api', ...args]);
  const create = async (key: string): Promise<string> => {
    const r = await s3api('create-multipart-upload', '--bucket', BUCKET, '--key', key);
    ok(t, r, `create ${key}`);
    return String(asRecord(r.json)['UploadId'] ?? '');
  };
  const upload = async (key: string, id: string, n: number, file: string): Promise<string> => {
    const r = await s3api('upload-part', '--bucket', BUCKET, '--key', key, '--upload-id', id, '--part-number', String(n), '--body', file);
    ok(t, r, `upload-part ${n} of ${key}`);
    return String(asRecord(r.json)['ETag'] ?? '');
  };
  let completes = 0;
  const complete = async (key: string, id: string, parts: Array<{ PartNumber: number; ETag: string }>): Promise<AwsResult> => {
    const file = `complete-${completes++}.json`;
    await writeFile(join(work, file), JSON.stringify({ Parts: parts }));
    return s3api('complete-multipart-upload', '--bucket', BUCKET, '--key', key, '--upload-id', id, '--multipart-upload', `file://${file}`);
  };
  await writeFile(join(work, 'tiny.bin'), randomData(1024));
  await writeFile(join(work, 'five.bin'), randomData(5 * MIB));

  const [ab, small, big] = await Promise.all([create('aborted'), create('too-small'), create('five-then-tiny')]);
  const [, s1, s2, b1, b2] = await Promise.all([
    upload('aborted', ab, 1, 'tiny.bin'),
    upload('too-small', small, 1, 'tiny.bin'),
    upload('too-small', small, 2, 'tiny.bin'),
    upload('five-then-tiny', big, 1, 'five.bin'),
    upload('five-then-tiny', big, 2, 'tiny.bin'),
  ]);
  ok(t, await s3api('abort-multipart-upload', '--bucket', BUCKET, '--key', 'aborted', '--upload-id', ab), 'abort-multipart-upload');

  const [abortTwice, partsOfAborted, listed, partToAborted, tooSmall, outOfOrder, twice, wrongEtag, unknownPart, tooHigh, unknownUpload] = await Promise.all([
    s3api('abort-multipart-upload', '--bucket', BUCKET, '--key', 'aborted', '--upload-id', ab),
    s3api('list-parts', '--bucket', BUCKET, '--key', 'aborted', '--upload-id', ab),
    s3api('list-multipart-uploads', '--bucket', BUCKET),
    s3api('upload-part', '--bucket', BUCKET, '--key', 'aborted', '--upload-id', ab, '--part-number', '1', '--body', 'tiny.bin'),
    complete('too-small', small, [{ PartNumber: 1, ETag: s1 }, { PartNumber: 2, ETag: s2 }]),
    complete('too-small', small, [{ PartNumber: 2, ETag: s2 }, { PartNumber: 1, ETag: s1 }]),
    complete('too-small', small, [{ PartNumber: 1, ETag: s1 }, { PartNumber: 1, ETag: s1 }]),
    complete('too-small', small, [{ PartNumber: 1, ETag: `"${'0'.repeat(32)}"` }]),
    complete('too-small', small, [{ PartNumber: 3, ETag: s1 }]),
    s3api('upload-part', '--bucket', BUCKET, '--key', 'too-small', '--upload-id', small, '--part-number', '10001', '--body', 'tiny.bin'),
    complete('too-small', 'no-such-upload-id', [{ PartNumber: 1, ETag: s1 }]),
  ]);
  fails(t, abortTwice, 'NoSuchUpload', 'abort twice');
  fails(t, partsOfAborted, 'NoSuchUpload', 'list-parts of an aborted upload');
  t.notOk(((asRecord(listed.json)['Uploads'] as Array<Record<string, unknown>> | undefined) ?? []).some((u) => u['UploadId'] === ab), 'an aborted upload is not listed');
  fails(t, partToAborted, 'NoSuchUpload', 'upload-part to an aborted upload');
  fails(t, tooSmall, 'EntityTooSmall', 'a part under 5 MiB that is not the last');
  fails(t, outOfOrder, 'InvalidPartOrder', 'parts out of order');
  fails(t, twice, 'InvalidPartOrder', 'a part listed twice');
  fails(t, wrongEtag, 'InvalidPart', 'a wrong ETag');
  fails(t, unknownPart, 'InvalidPart', 'an unknown part');
  fails(t, tooHigh, 'InvalidArgument', 'part number 10001');
  fails(t, unknownUpload, 'NoSuchUpload', 'an unknown upload');

  // The failed completes changed nothing: valid ones still work.
  const [fixed, bigDone] = await Promise.all([
    complete('too-small', small, [{ PartNumber: 1, ETag: s1 }]),
    complete('five-then-tiny', big, [{ PartNumber: 1, ETag: b1 }, { PartNumber: 2, ETag: b2 }]),
  ]);
  ok(t, fixed, 'complete with one small part (the last may be small)');
  ok(t, bigDone, 'exactly 5 MiB then a small last part');
});

for (const [name, target] of [['http', http], ['https', https]] as const) {
  t.test(`aws s3 cp of 20 MiB goes multipart over ${name}`, async (t) => {
    const data = randomData(20 * MIB + 4097);
    const src = join(work, `cp-${name}.bin`);
    const dst = join(work, `cp-${name}-down.bin`);
    await writeFile(src, data);
    ok(t, await aws(target, ['s3', 'cp', src, `s3://${BUCKET}/cp/${name}.bin`, '--only-show-errors']), 's3 cp up');
    ok(t, await aws(target, ['s3', 'cp', `s3://${BUCKET}/cp/${name}.bin`, dst, '--only-show-errors']), 's3 cp down (ranged GETs across parts)');
    t.equal(sha256Hex(await readFile(dst)), sha256Hex(data), 'bytes round trip');
    const head = await aws(target, ['s3api', 'head-object', '--bucket', BUCKET, '--key', `cp/${name}.bin`, '--checksum-mode', 'ENABLED']);
    ok(t, head, 'head-object --checksum-mode ENABLED');
    const chunks = [0, 1, 2, 3, 4].map((i) => data.subarray(i * 5 * MIB, (i + 1) * 5 * MIB));
    t.match(asRecord(head.json), { ContentLength: data.length, ETag: multipartEtag(chunks), ChecksumType: 'COMPOSITE', ChecksumCRC32: /-5$/ });
  });
}

t.test('boto3 upload_file/download_file and a FULL_OBJECT CRC32 upload', async (t) => {
  for (const [name, endpoint, ca] of [['https', server.tlsUrl ?? '', server.caFile], ['http', server.url, undefined]] as const) {
    const args = [SCRIPT, '--endpoint', endpoint, '--bucket', BUCKET, '--prefix', `boto3-${name}/`, '--work-dir', work];
    if (ca) args.push('--ca-bundle', ca);
    const res = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile('python3', args, { env: isolatedAwsEnv(files, server.rootKey), maxBuffer: 16 * MIB, timeout: 240_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      );
    });
    if (!t.equal(res.code, 0, `boto3 script over ${name}\n${res.stderr.slice(-4000)}`)) continue;
    const out = JSON.parse(res.stdout) as {
      transfer: { srcSha256: string; dstSha256: string; getSha256: string; etag: string; contentLength: number; checksumCRC32: string | null; checksumType: string | null; partCrcs: string[] };
      fullObject: Record<string, unknown> & { partCrcs: string[]; expectedPartCrcs: string[] };
      badDigest: { code: string | null; status?: number };
    };
    t.equal(out.transfer.dstSha256, out.transfer.srcSha256, `${name}: download_file bytes equal upload_file bytes`);
    t.equal(out.transfer.getSha256, out.transfer.srcSha256, `${name}: get_object with ChecksumMode (composite checksum) reads fine`);
    t.match(out.transfer.etag, /^"[0-9a-f]{32}-3"$/, `${name}: three parts`);
    // COMPOSITE CRC32: the CRC32 of the concatenated part CRC32s, -N.
    const composite = Buffer.alloc(4);
    composite.writeUInt32BE(crc32(Buffer.concat(out.transfer.partCrcs.map((c) => Buffer.from(c, 'base64')))));
    t.equal(out.transfer.checksumCRC32, `${composite.toString('base64')}-3`, `${name}: composite CRC32 of the default checksums`);
    t.equal(out.transfer.checksumType, 'COMPOSITE');
    t.same(out.fullObject.partCrcs, out.fullObject.expectedPartCrcs, `${name}: part CRC32s`);
    t.match(out.fullObject, {
      createChecksumAlgorithm: 'CRC32',
      createChecksumType: 'FULL_OBJECT',
      completeChecksumCRC32: out.fullObject['expectedCRC32'],
      completeChecksumType: 'FULL_OBJECT',
      getChecksumCRC32: out.fullObject['expectedCRC32'],
      getChecksumType: 'FULL_OBJECT',
      getOk: true,
    }, `${name}: FULL_OBJECT CRC32 combined from the parts, validated by botocore on GET`);
    t.same(out.badDigest, { code: 'BadDigest', status: 400 }, `${name}: a wrong whole-object CRC32 is BadDigest`);
  }
});

t.test('permissions, conditional completes, bucket deletion (raw requests)', async (t) => {
  const reader = raw.as(await createBucketKey(server, BUCKET, 'read'));
  const listed = await reader.send({ method: 'GET', bucket: BUCKET, query: { uploads: '' } });
  t.equal(listed.status, 200, 'a read key lists uploads');
  const created = await reader.send({ method: 'POST', bucket: BUCKET, key: 'ro', query: { uploads: '' } });
  t.equal(errorCode(created), 'AccessDenied', 'a read key cannot create an upload');

  const existing = await rawMultipart(raw, 'cond/exists', [randomData(100)]);
  t.equal(existing.status, 200, 'first complete');
  const refused = await rawMultipart(raw, 'cond/exists', [randomData(100)], { 'if-none-match': '*' });
  t.equal(refused.status, 412, 'If-None-Match: * on an existing key: 412');
  const matched = await rawMultipart(raw, 'cond/exists', [randomData(100)], { 'if-match': xmlText(existing.text, 'ETag') ?? '' });
  t.equal(matched.status, 200, 'If-Match with the current ETag');
  const fresh = await rawMultipart(raw, 'cond/new', [randomData(100)], { 'if-none-match': '*' });
  t.equal(fresh.status, 200, 'If-None-Match: * on a new key');

  // A bucket with only pending uploads can be deleted; the uploads go with it.
  const other = 'multipart-pending';
  t.equal((await raw.createBucket(other)).status, 200);
  const up = await raw.send({ method: 'POST', bucket: other, key: 'k', query: { uploads: '' } });
  const uploadId = xmlText(up.text, 'UploadId') ?? '';
  t.equal((await raw.send({ method: 'PUT', bucket: other, key: 'k', query: { partNumber: '1', uploadId }, body: randomData(10) })).status, 200);
  t.equal((await raw.send({ method: 'DELETE', bucket: other })).status, 204, 'DeleteBucket ignores pending uploads');
  t.equal((await raw.createBucket(other)).status, 200, 'recreated');
  const again = await raw.send({ method: 'GET', bucket: other, query: { uploads: '' } });
  t.same(xmlTexts(again.text, 'UploadId'), [], 'the old uploads are gone');

  // ListMultipartUploads: prefix, delimiter, paging.
  for (const key of ['lmu/a/1', 'lmu/a/2', 'lmu/b', 'lmu/b', 'lmu/c']) {
    t.equal((await raw.send({ method: 'POST', bucket: BUCKET, key, query: { uploads: '' } })).status, 200);
  }
  const rolled = await raw.send({ method: 'GET', bucket: BUCKET, query: { uploads: '', prefix: 'lmu/', delimiter: '/' } });
  t.same(xmlTexts(rolled.text, 'Key'), ['lmu/b', 'lmu/b', 'lmu/c']);
  t.same(xmlTexts(rolled.text, 'Prefix').filter((p) => p !== 'lmu/'), ['lmu/a/']);
  const seen: string[] = [];
  let markers: Record<string, string> = {};
  for (let i = 0; i < 10; i++) {
    const page = await raw.send({ method: 'GET', bucket: BUCKET, query: { uploads: '', prefix: 'lmu/', 'max-uploads': '2', ...markers } });
    seen.push(...xmlTexts(page.text, 'Key'));
    if (xmlText(page.text, 'IsTruncated') !== 'true') break;
    markers = { 'key-marker': xmlText(page.text, 'NextKeyMarker') ?? '', 'upload-id-marker': xmlText(page.text, 'NextUploadIdMarker') ?? '' };
  }
  t.same(seen, ['lmu/a/1', 'lmu/a/2', 'lmu/b', 'lmu/b', 'lmu/c'], 'pages of 2 list every upload once');
});

t.test('8 writers and 8 readers on one key: every read is one whole version', async (t) => {
  const key = 'torn/key';
  const PART = 5 * MIB;
  const writers = 8;
  const rounds = 2;
  // Distinct last-part sizes: the body length alone tells versions apart, the ETag checks the bytes.
  const seed = await rawMultipart(raw, key, [randomData(PART), randomData(1)]);
  t.equal(seed.status, 200, 'first version');
  let writing = true;
  let reads = 0;
  const problems: string[] = [];
  const writerLoops = Array.from({ length: writers }, async (_, w) => {
    for (let round = 0; round < rounds; round++) {
      const res = await rawMultipart(raw, key, [randomData(PART), randomData(1 + w * 1000 + round * 100)]);
      if (res.status !== 200) problems.push(`writer ${w}: ${res.status} ${res.text.slice(0, 200)}`);
    }
  });
  const readerLoops = Array.from({ length: 8 }, async () => {
    while (writing) {
      const res = await raw.getObject(BUCKET, key);
      reads++;
      if (res.status !== 200) {
        problems.push(`GET ${res.status} ${res.text.slice(0, 200)}`);
        continue;
      }
      const etag = res.headers['etag'] ?? '';
      const body = res.body;
      const expected = multipartEtag([body.subarray(0, PART), body.subarray(PART)]);
      if (Number(res.headers['content-length']) !== body.length) problems.push(`short body: ${body.length} of ${res.headers['content-length']}`);
      else if (etag !== expected) problems.push(`torn read: ETag ${etag}, bytes ${expected}, length ${body.length}`);
    }
  });
  await Promise.all(writerLoops);
  writing = false;
  await Promise.all(readerLoops);
  t.same(problems, [], `no torn reads, no errors (${reads} reads during ${writers * rounds} overwrites)`);
  t.ok(reads > 0, 'readers ran');
});

t.test('no 5xx from any raw request', async (t) => {
  t.same(raw.log.filter((l) => l.status >= 500), []);
});
