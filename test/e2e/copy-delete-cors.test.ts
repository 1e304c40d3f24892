// CopyObject, DeleteObjects, bucket CORS and the small compatibility operations, driven by clients we
// did not write (aws cli, boto3, curl, s3cmd, rclone) and by raw signed requests for the edges the
// clients never produce (wrong digests, aws-chunked bodies, 1001 keys). One server for the file.
import t from 'tap';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAccountKey, createBucketKey, startServer } from '../helpers/server.js';
import { isolatedAwsEnv, runAws, writeAwsConfig, type AwsResult, type AwsTarget } from '../helpers/aws-cli.js';
import { checksumBase64, md5Base64, md5Hex, sha256Hex } from '../helpers/checksums.js';
import { RawS3, errorCode, randomData } from '../helpers/s3-client.js';
import { encodeSignedChunks, encodeUnsignedTrailerChunks, signedChunksLength, STREAMING_SIGNED_TRAILER, STREAMING_UNSIGNED_TRAILER, type Credentials } from '../helpers/signer.js';
import { xmlBlocks, xmlText, xmlTexts } from '../helpers/xml.js';

const PY_SCRIPT = fileURLToPath(new URL('../../../test/python/boto3_delete_copy.py', import.meta.url));

const server = await startServer();
t.teardown(() => server.stop());
const awsFiles = await writeAwsConfig(server.tmpRoot);
const root = new RawS3({ url: server.url }, server.rootKey);
const work = server.tmpRoot;

const SRC = 'cdc-src';
const DST = 'cdc-dst';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, cwd: work, maxBuffer: 64 * 1024 * 1024, timeout: 240_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

function described(what: string, r: Run): string {
  return r.code === 0 ? what : `${what}\nexit ${r.code}\nstdout: ${r.stdout.slice(-3000)}\nstderr: ${r.stderr.slice(-3000)}`;
}

function asRecord(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function aws(args: string[], credentials: Credentials = server.rootKey): Promise<AwsResult> {
  const target: AwsTarget = { endpoint: server.url, credentials, files: awsFiles };
  return runAws(target, args, work);
}

/** aws cli's error code from stderr: "An error occurred (Code) when calling ...". */
function awsError(r: AwsResult): string | undefined {
  return /An error occurred \(([^)]+)\)/.exec(r.stderr)?.[1];
}

interface CurlResult {
  status: number;
  headers: Record<string, string>;
  body: string;
}

async function curl(args: string[]): Promise<CurlResult> {
  const r = await run('curl', ['-sS', '-i', ...args]);
  // -i: the status line and headers, a blank line, then the body.
  const [head = '', ...rest] = r.stdout.split('\r\n\r\n');
  const lines = head.split('\r\n');
  const status = Number(/^HTTP\/[\d.]+ (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return { status, headers, body: rest.join('\r\n\r\n') };
}

async function putKeys(bucket: string, keys: string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 32) {
    const results = await Promise.all(keys.slice(i, i + 32).map((k) => root.putObject(bucket, k, Buffer.from(k))));
    const bad = results.find((r) => r.status !== 200);
    if (bad) throw new Error(`PUT failed: ${bad.status} ${bad.text}`);
  }
}

function deleteXml(keys: string[], quiet = false): Buffer {
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${quiet ? '<Quiet>true</Quiet>' : ''}${keys
      .map((k) => `<Object><Key>${esc(k)}</Key></Object>`)
      .join('')}</Delete>`,
  );
}

t.before(async () => {
  for (const b of [SRC, DST]) {
    const r = await aws(['s3', 'mb', `s3://${b}`]);
    if (r.code !== 0) throw new Error(`mb ${b}: ${r.stderr}`);
  }
});

t.test('CopyObject with aws cli', async (t) => {
  const body = randomData(300 * 1024 + 5);
  await writeFile(join(work, 'copy-src.bin'), body);
  const key = 'dir/söurce +%#?.bin';
  const put = await aws([
    's3api', 'put-object', '--bucket', SRC, '--key', key, '--body', 'copy-src.bin',
    '--content-type', 'application/x-source', '--cache-control', 'max-age=7', '--content-disposition', 'attachment; filename="s.bin"',
    '--content-language', 'de', '--metadata', JSON.stringify({ color: 'blue', mtime: '1700000000.5' }),
  ]);
  t.equal(put.code, 0, described('put-object', put));
  const etag = `"${md5Hex(body)}"`;

  // COPY (the default): bytes, ETag, content headers and user metadata of the source.
  const copy = await aws(['s3api', 'copy-object', '--bucket', DST, '--key', 'copied.bin', '--copy-source', `${SRC}/${key}`]);
  t.equal(copy.code, 0, described('copy-object (COPY)', copy));
  const result = asRecord(asRecord(copy.json)['CopyObjectResult']);
  t.equal(result['ETag'], etag, 'CopyObjectResult ETag is the MD5 of the bytes');
  t.match(String(result['LastModified']), /^\d{4}-\d\d-\d\dT/, 'CopyObjectResult LastModified');
  t.equal(result['ChecksumCRC32'], checksumBase64('CRC32', body), "the source's CRC32 (sent by aws cli) is kept");
  const head = asRecord((await aws(['s3api', 'head-object', '--bucket', DST, '--key', 'copied.bin', '--checksum-mode', 'ENABLED'])).json);
  t.same(head['Metadata'], { color: 'blue', mtime: '1700000000.5' }, 'user metadata copied exactly');
  t.equal(head['ContentType'], 'application/x-source');
  t.equal(head['CacheControl'], 'max-age=7');
  t.equal(head['ContentDisposition'], 'attachment; filename="s.bin"');
  t.equal(head['ContentLanguage'], 'de');
  t.equal(head['ETag'], etag);
  t.equal(head['ContentLength'], body.length);
  t.equal(head['ChecksumCRC32'], checksumBase64('CRC32', body));
  const got = await root.getObject(DST, 'copied.bin');
  t.equal(sha256Hex(got.body), sha256Hex(body), 'copied bytes');

  // REPLACE: exactly the request's headers and metadata, nothing merged from the source.
  const replace = await aws([
    's3api', 'copy-object', '--bucket', DST, '--key', 'replaced.bin', '--copy-source', `${SRC}/${key}`,
    '--metadata-directive', 'REPLACE', '--content-type', 'text/x-new', '--metadata', JSON.stringify({ fresh: 'yes' }),
  ]);
  t.equal(replace.code, 0, described('copy-object (REPLACE)', replace));
  const rhead = asRecord((await aws(['s3api', 'head-object', '--bucket', DST, '--key', 'replaced.bin'])).json);
  t.same(rhead['Metadata'], { fresh: 'yes' }, 'REPLACE: only the new metadata');
  t.equal(rhead['ContentType'], 'text/x-new');
  t.equal(rhead['CacheControl'], undefined, 'REPLACE: no Cache-Control from the source');
  t.equal(rhead['ContentDisposition'], undefined, 'REPLACE: no Content-Disposition from the source');
  t.equal(rhead['ContentLanguage'], undefined, 'REPLACE: no Content-Language from the source');
  t.equal(rhead['ETag'], etag, 'same bytes, same ETag');

  // aws s3 cp between buckets, plain and with --metadata-directive REPLACE.
  const cp = await aws(['s3', 'cp', `s3://${SRC}/${key}`, `s3://${DST}/cp/y.bin`]);
  t.equal(cp.code, 0, described('aws s3 cp s3:// s3://', cp));
  const cpHead = asRecord((await aws(['s3api', 'head-object', '--bucket', DST, '--key', 'cp/y.bin'])).json);
  t.same(cpHead['Metadata'], { color: 'blue', mtime: '1700000000.5' }, 's3 cp keeps metadata');
  t.equal(cpHead['ContentType'], 'application/x-source', "s3 cp keeps the source's Content-Type (its guess is not a REPLACE)");
  t.equal(sha256Hex((await root.getObject(DST, 'cp/y.bin')).body), sha256Hex(body), 's3 cp bytes');
  const cpReplace = await aws(['s3', 'cp', `s3://${SRC}/${key}`, `s3://${DST}/cp/z.bin`, '--metadata-directive', 'REPLACE', '--content-type', 'text/z', '--metadata', 'a=1']);
  t.equal(cpReplace.code, 0, described('aws s3 cp --metadata-directive REPLACE', cpReplace));
  const zHead = asRecord((await aws(['s3api', 'head-object', '--bucket', DST, '--key', 'cp/z.bin'])).json);
  t.same(zHead['Metadata'], { a: '1' });
  t.equal(zHead['ContentType'], 'text/z');

  // Onto itself: refused without REPLACE, allowed with it (rclone sets modtimes that way).
  const self = await aws(['s3api', 'copy-object', '--bucket', SRC, '--key', key, '--copy-source', `${SRC}/${key}`]);
  t.not(self.code, 0, 'self-copy without REPLACE fails');
  t.equal(awsError(self), 'InvalidRequest', 'self-copy without REPLACE -> InvalidRequest');
  t.match(self.stderr, /trying to copy an object to itself without changing the object's metadata/);
  const selfReplace = await aws([
    's3api', 'copy-object', '--bucket', SRC, '--key', key, '--copy-source', `${SRC}/${key}`,
    '--metadata-directive', 'REPLACE', '--metadata', JSON.stringify({ mtime: '1800000000' }), '--content-type', 'application/x-source',
  ]);
  t.equal(selfReplace.code, 0, described('self-copy with REPLACE', selfReplace));
  const selfHead = asRecord((await aws(['s3api', 'head-object', '--bucket', SRC, '--key', key])).json);
  t.same(selfHead['Metadata'], { mtime: '1800000000' }, 'self-copy REPLACE updated the metadata');
  t.equal(sha256Hex((await root.getObject(SRC, key)).body), sha256Hex(body), 'self-copy kept the bytes');

  // x-amz-copy-source-if-*: 412 for each failed condition, AWS precedence for the pairs.
  const past = 'Mon, 01 Jan 2001 00:00:00 GMT';
  const future = 'Fri, 01 Jan 2100 00:00:00 GMT';
  const conditional = async (extra: string[]) => aws(['s3api', 'copy-object', '--bucket', DST, '--key', 'cond.bin', '--copy-source', `${SRC}/${key}`, ...extra]);
  const cases: Array<[string, string[], string | undefined]> = [
    ['if-match wrong', ['--copy-source-if-match', '"0123"'], 'PreconditionFailed'],
    ['if-none-match current', ['--copy-source-if-none-match', etag], 'PreconditionFailed'],
    ['if-unmodified-since past', ['--copy-source-if-unmodified-since', past], 'PreconditionFailed'],
    ['if-modified-since future', ['--copy-source-if-modified-since', future], 'PreconditionFailed'],
    ['if-match right + if-unmodified-since past', ['--copy-source-if-match', etag, '--copy-source-if-unmodified-since', past], undefined],
    ['if-none-match other + if-modified-since future', ['--copy-source-if-none-match', '"0123"', '--copy-source-if-modified-since', future], undefined],
    ['if-modified-since past', ['--copy-source-if-modified-since', past], undefined],
  ];
  const outcomes = await Promise.all(cases.map(([, extra]) => conditional(extra)));
  cases.forEach(([what, , want], i) => {
    const r = outcomes[i] as AwsResult;
    if (want) t.equal(awsError(r), want, `${what} -> ${want}`);
    else t.equal(r.code, 0, described(`${what} -> copied`, r));
  });
  const raw412 = await root.send({ method: 'PUT', bucket: DST, key: 'cond.bin', headers: { 'x-amz-copy-source': `/${SRC}/${encodeURIComponent(key)}`, 'x-amz-copy-source-if-match': '"nope"' } });
  t.equal(raw412.status, 412, 'raw: 412 status');

  // Missing sources, versions, and the destination's own conditional write.
  const noKey = await aws(['s3api', 'copy-object', '--bucket', DST, '--key', 'x', '--copy-source', `${SRC}/missing`]);
  t.equal(awsError(noKey), 'NoSuchKey');
  const noBucket = await aws(['s3api', 'copy-object', '--bucket', DST, '--key', 'x', '--copy-source', 'cdc-nope/missing']);
  t.equal(awsError(noBucket), 'NoSuchBucket');
  const encodedKey = key.split('/').map(encodeURIComponent).join('/');
  const nullVersion = await root.send({ method: 'PUT', bucket: DST, key: 'v.bin', headers: { 'x-amz-copy-source': `${SRC}/${encodedKey}?versionId=null` } });
  t.equal(nullVersion.status, 200, `versionId=null is the current version: ${nullVersion.text}`);
  const otherVersion = await root.send({ method: 'PUT', bucket: DST, key: 'v.bin', headers: { 'x-amz-copy-source': `${SRC}/${encodedKey}?versionId=${'3HL4kqtJlcpXroDTDmJ'.padEnd(32, 'x')}` } });
  t.equal(errorCode(otherVersion), 'NoSuchVersion', 'a well-formed version id the source does not have');
  t.equal(otherVersion.status, 404);
  const badVersion = await root.send({ method: 'PUT', bucket: DST, key: 'v.bin', headers: { 'x-amz-copy-source': `${SRC}/${encodedKey}?versionId=3HL4kqtJlcpXroDTDmJ` } });
  t.equal(errorCode(badVersion), 'InvalidArgument', 'a version id of no form this server makes (docs/COMPATIBILITY.md "Versioning")');
  const ifNoneMatch = await root.send({ method: 'PUT', bucket: DST, key: 'v.bin', headers: { 'x-amz-copy-source': `${SRC}/${encodedKey}`, 'if-none-match': '*' } });
  t.equal(ifNoneMatch.status, 412, 'If-None-Match: * onto an existing destination -> 412');
  const badDirective = await root.send({ method: 'PUT', bucket: DST, key: 'v.bin', headers: { 'x-amz-copy-source': `${SRC}/${encodedKey}`, 'x-amz-metadata-directive': 'MERGE' } });
  t.equal(errorCode(badDirective), 'InvalidArgument', 'unknown metadata directive');

  // A new checksum algorithm on copy is computed over the bytes; a self-copy may change it.
  const sha = await aws(['s3api', 'copy-object', '--bucket', SRC, '--key', key, '--copy-source', `${SRC}/${key}`, '--checksum-algorithm', 'SHA256']);
  t.equal(sha.code, 0, described('self-copy changing the checksum algorithm', sha));
  t.equal(asRecord(asRecord(sha.json)['CopyObjectResult'])['ChecksumSHA256'], checksumBase64('SHA256', body));
  const shaHead = asRecord((await aws(['s3api', 'head-object', '--bucket', SRC, '--key', key, '--checksum-mode', 'ENABLED'])).json);
  t.equal(shaHead['ChecksumSHA256'], checksumBase64('SHA256', body), 'the stored checksum is now SHA-256');
  t.same(shaHead['Metadata'], { mtime: '1800000000' }, 'a checksum-only self-copy keeps the metadata');

  // An empty object copies too.
  t.equal((await root.putObject(SRC, 'empty', Buffer.alloc(0))).status, 200);
  const empty = await aws(['s3api', 'copy-object', '--bucket', DST, '--key', 'empty-copy', '--copy-source', `${SRC}/empty`]);
  t.equal(asRecord(asRecord(empty.json)['CopyObjectResult'])['ETag'], `"${md5Hex(Buffer.alloc(0))}"`, described('empty object copy', empty));
});

t.test('CopyObject of a multipart object: one new single-part object', async (t) => {
  const big = randomData(9 * 1024 * 1024 + 3); // over aws cli's 8 MiB multipart threshold
  await writeFile(join(work, 'big.bin'), big);
  const up = await aws(['s3', 'cp', 'big.bin', `s3://${SRC}/big.bin`]);
  t.equal(up.code, 0, described('aws s3 cp (multipart upload)', up));
  const srcHead = asRecord((await aws(['s3api', 'head-object', '--bucket', SRC, '--key', 'big.bin'])).json);
  t.match(String(srcHead['ETag']), /-2"$/, 'the source is a two-part object');
  const copy = await aws(['s3api', 'copy-object', '--bucket', DST, '--key', 'big-copy.bin', '--copy-source', `${SRC}/big.bin`]);
  t.equal(copy.code, 0, described('copy-object of a multipart object', copy));
  const result = asRecord(asRecord(copy.json)['CopyObjectResult']);
  t.equal(result['ETag'], `"${md5Hex(big)}"`, 'the copy has the plain MD5 ETag of its bytes');
  t.equal(result['ChecksumCRC32'], checksumBase64('CRC32', big), 'a COMPOSITE source checksum becomes the FULL_OBJECT one');
  t.equal(result['ChecksumType'], 'FULL_OBJECT');
  t.equal(sha256Hex((await root.getObject(DST, 'big-copy.bin')).body), sha256Hex(big), 'bytes');
});

t.test('CopyObject authorization: the source is read like a GET', async (t) => {
  t.equal((await root.putObject(SRC, 'secret.txt', Buffer.from('secret'))).status, 200);
  t.equal((await root.putObject(DST, 'own.txt', Buffer.from('own'))).status, 200);
  const rw = await createBucketKey(server, DST, 'read_write');
  const ro = await createBucketKey(server, DST, 'read');
  const fromOther = await aws(['s3api', 'copy-object', '--bucket', DST, '--key', 'stolen.txt', '--copy-source', `${SRC}/secret.txt`], rw);
  t.equal(awsError(fromOther), 'AccessDenied', 'a read_write key of the destination may not read another bucket');
  const fromMissing = await aws(['s3api', 'copy-object', '--bucket', DST, '--key', 'x.txt', '--copy-source', 'cdc-does-not-exist/x'], rw);
  t.equal(awsError(fromMissing), 'AccessDenied', 'nor learn whether another bucket exists');
  const within = await aws(['s3api', 'copy-object', '--bucket', DST, '--key', 'own-copy.txt', '--copy-source', `${DST}/own.txt`], rw);
  t.equal(within.code, 0, described('a read_write key copies within its bucket', within));
  const readOnly = await aws(['s3api', 'copy-object', '--bucket', DST, '--key', 'ro-copy.txt', '--copy-source', `${DST}/own.txt`], ro);
  t.equal(awsError(readOnly), 'AccessDenied', 'a read key may not write the copy');
  const readOut = await aws(['s3api', 'copy-object', '--bucket', SRC, '--key', 'x.txt', '--copy-source', `${DST}/own.txt`], ro);
  t.equal(awsError(readOut), 'AccessDenied', 'a read key may not copy out of its bucket into another');

  await server.admin(['users', 'create', 'cdc-mallory']);
  const mallory = await createAccountKey(server, 'cdc-mallory');
  const mb = await aws(['s3', 'mb', 's3://cdc-mallory-bucket'], mallory);
  t.equal(mb.code, 0, described('another user creates a bucket', mb));
  const crossAccount = await aws(['s3api', 'copy-object', '--bucket', 'cdc-mallory-bucket', '--key', 'loot.txt', '--copy-source', `${SRC}/secret.txt`], mallory);
  t.equal(awsError(crossAccount), 'AccessDenied', "another account may not copy out of this user's bucket");
  t.equal((await root.headObject('cdc-mallory-bucket', 'loot.txt')).status, 404, 'nothing was written');
});

t.test('DeleteObjects with aws cli: 1000 keys, loud and quiet', async (t) => {
  for (const quiet of [false, true]) {
    const prefix = quiet ? 'quiet/' : 'loud/';
    const keys = Array.from({ length: 1000 }, (_, i) => `${prefix}${String(i).padStart(4, '0')} a&b <c>`);
    await putKeys(DST, keys);
    t.equal((await root.listAllKeys(DST, { prefix })).length, 1000, `${prefix}: 1000 keys before`);
    const file = join(work, `delete-${quiet}.json`);
    await writeFile(file, JSON.stringify({ Objects: keys.map((Key) => ({ Key })), Quiet: quiet }));
    const r = await aws(['s3api', 'delete-objects', '--bucket', DST, '--delete', `file://${file}`]);
    t.equal(r.code, 0, described(`delete-objects quiet=${quiet}`, r));
    const out = asRecord(r.json);
    const deleted = Array.isArray(out['Deleted']) ? (out['Deleted'] as unknown[]).map((d) => asRecord(d)['Key']) : [];
    if (quiet) t.same(deleted, [], 'Quiet: no Deleted entries');
    else t.same([...deleted].sort(), [...keys].sort(), 'every key reported Deleted, exactly as sent');
    t.equal(out['Errors'], undefined, 'no errors');
    t.same(await root.listAllKeys(DST, { prefix }), [], `${prefix}: all gone`);
  }
});

t.test('DeleteObjects with boto3 (CRC32, no Content-MD5) and CopyObject checksums', async (t) => {
  const r = await run('python3', [PY_SCRIPT, '--endpoint', server.url, '--bucket', DST, '--prefix', 'py/'], isolatedAwsEnv(awsFiles, server.rootKey));
  let out: Record<string, unknown>;
  try {
    out = JSON.parse(r.stdout) as Record<string, unknown>;
  } catch {
    t.fail(described('boto3 script printed JSON', r));
    return;
  }
  t.equal(r.code, 0, described('boto3 script', r));
  t.comment(`botocore ${String(out['botocore'])}`);
  t.same(out['loud'], { before: 1000, deleted: true, deletedCount: 1000, errors: [], left: 0 }, 'delete_objects of 1000 keys');
  t.same(out['quiet'], { refused: 'KeyTooLongError', leftAfterRefusal: 999, deletedCount: 0, errors: [], left: 0 },
    'an over-long key refuses the whole request (nothing deleted); Quiet then reports nothing');
  const wire = Array.isArray(out['wire']) ? (out['wire'] as unknown[]).map(asRecord) : [];
  t.equal(wire.length, 3);
  for (const w of wire) {
    t.equal(w['content-md5'], null, 'botocore sent no Content-MD5');
    t.match(w['x-amz-checksum-crc32'], /^[A-Za-z0-9+/]{6}==$/, 'botocore sent a CRC32');
  }
  const copy = asRecord(out['copy']);
  t.equal(copy['resultSha256'], copy['expectedSha256'], 'copy_object(ChecksumAlgorithm=SHA256) computes it');
  t.equal(copy['headSha256'], copy['expectedSha256'], 'and stores it');
  t.equal(copy['copyOfCopySha256'], copy['expectedSha256'], "a COPY keeps the source's algorithm");
  t.equal(copy['getSha256'], copy['expectedSha256']);
  t.equal(copy['resultETag'], copy['md5']);
  t.same(copy['headMetadata'], { origin: 'boto3' });
  t.equal(copy['bytesEqual'], true);
  t.equal(out['selfCopy'], 'InvalidRequest');
});

t.test('DeleteObjects over raw requests: digests, framing, limits, per-key errors', async (t) => {
  const post = (body: Buffer, headers: Record<string, string>, credentials?: Credentials) =>
    root.send({ method: 'POST', bucket: DST, query: { delete: '' }, body, headers, credentials });
  const keys = ['raw/a', 'raw/b', 'raw/ c '];
  await putKeys(DST, keys);
  const body = deleteXml(keys);

  const wrongMd5 = await post(body, { 'content-md5': md5Base64('something else') });
  t.equal(errorCode(wrongMd5), 'BadDigest', 'wrong Content-MD5 -> BadDigest');
  const wrongCrc = await post(body, { 'x-amz-checksum-crc32': checksumBase64('CRC32', Buffer.from('other')) });
  t.equal(errorCode(wrongCrc), 'BadDigest', 'wrong x-amz-checksum-crc32 -> BadDigest');
  const neither = await post(body, {});
  t.equal(errorCode(neither), 'InvalidRequest', 'no digest -> InvalidRequest');
  t.match(neither.text, 'Missing required header for this request: Content-MD5');
  const onlyAlgorithm = await post(body, { 'x-amz-sdk-checksum-algorithm': 'CRC32' });
  t.equal(errorCode(onlyAlgorithm), 'InvalidRequest', 'naming an algorithm without a value is no digest');
  t.same(await root.listAllKeys(DST, { prefix: 'raw/' }), keys.slice().sort(), 'nothing deleted by the refused requests');

  const sha = await post(body, { 'x-amz-checksum-sha256': checksumBase64('SHA256', body) });
  t.equal(sha.status, 200, `x-amz-checksum-sha256 accepted: ${sha.text}`);
  t.same(xmlTexts(sha.text, 'Key').sort(), keys.slice().sort(), 'keys echoed exactly (spaces kept)');
  t.same(await root.listAllKeys(DST, { prefix: 'raw/' }), [], 'deleted');

  // aws-chunked bodies: unsigned chunks with a CRC32 trailer, and signed chunks with a signed trailer.
  await putKeys(DST, keys);
  const trailers: Array<[string, string]> = [['x-amz-checksum-crc32', checksumBase64('CRC32', body)]];
  const unsignedBody = encodeUnsignedTrailerChunks(body, 16, trailers);
  const framing = (length: number) => ({
    'content-encoding': 'aws-chunked',
    'x-amz-decoded-content-length': String(body.length),
    'x-amz-trailer': 'x-amz-checksum-crc32',
    'x-amz-sdk-checksum-algorithm': 'CRC32',
    'content-length': String(length),
  });
  const unsignedReq = await root.sign({ method: 'POST', bucket: DST, query: { delete: '' }, headers: framing(unsignedBody.length), payloadHash: STREAMING_UNSIGNED_TRAILER });
  const unsigned = await root.raw('POST', unsignedReq.target, unsignedReq.headers, unsignedBody);
  t.equal(unsigned.status, 200, `STREAMING-UNSIGNED-PAYLOAD-TRAILER: ${unsigned.text}`);
  t.same(await root.listAllKeys(DST, { prefix: 'raw/' }), [], 'deleted by the trailer request');

  await putKeys(DST, keys);
  const opts = { chunkSize: 16, trailers };
  const signedReq = await root.sign({ method: 'POST', bucket: DST, query: { delete: '' }, headers: framing(signedChunksLength(body, opts)), payloadHash: STREAMING_SIGNED_TRAILER });
  const signedBody = encodeSignedChunks(body, { signingKey: signedReq.signingKey, longDate: signedReq.longDate, scope: signedReq.scope, seedSignature: signedReq.signature }, opts);
  const badTrailer: Array<[string, string]> = [['x-amz-checksum-crc32', checksumBase64('CRC32', Buffer.from('x'))]];
  const signedBad = await root.sign({ method: 'POST', bucket: DST, query: { delete: '' }, headers: framing(signedChunksLength(body, { chunkSize: 16, trailers: badTrailer })), payloadHash: STREAMING_SIGNED_TRAILER });
  const badBody = encodeSignedChunks(body, { signingKey: signedBad.signingKey, longDate: signedBad.longDate, scope: signedBad.scope, seedSignature: signedBad.signature }, { chunkSize: 16, trailers: badTrailer });
  t.equal(errorCode(await root.raw('POST', signedBad.target, signedBad.headers, badBody)), 'BadDigest', 'a wrong trailer CRC32 -> BadDigest');
  const signed = await root.raw('POST', signedReq.target, signedReq.headers, signedBody);
  t.equal(signed.status, 200, `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: ${signed.text}`);
  t.same(await root.listAllKeys(DST, { prefix: 'raw/' }), [], 'deleted by the chunk-signed request');

  // Limits and per-key results.
  const tooMany = deleteXml(Array.from({ length: 1001 }, (_, i) => `k${i}`));
  t.equal(errorCode(await post(tooMany, { 'content-md5': md5Base64(tooMany) })), 'MalformedXML', '1001 keys -> MalformedXML');
  const garbage = Buffer.from('<Delete><Object><Key>a</Key></Object>');
  t.equal(errorCode(await post(garbage, { 'content-md5': md5Base64(garbage) })), 'MalformedXML', 'unclosed XML -> MalformedXML');
  await putKeys(DST, ['raw/exists']);
  // A key past 1024 bytes, literal or grown from character references, refuses the whole request:
  // no per-key error that echoes a huge key, nothing deleted.
  for (const [what, longKey] of [['literal', 'x'.repeat(1025)], ['references', '&#x78;'.repeat(40_000)]] as const) {
    const body = Buffer.from(`<Delete><Object><Key>raw/exists</Key></Object><Object><Key>${longKey}</Key></Object></Delete>`);
    const refused = await post(body, { 'content-md5': md5Base64(body) });
    t.equal(refused.status, 400, `${what}: 400`);
    t.equal(errorCode(refused), 'KeyTooLongError', `${what}: KeyTooLongError`);
    t.match(refused.text, /<MaxSizeAllowed>1024<\/MaxSizeAllowed>/, `${what}: the limit, as AWS gives it`);
    t.ok(refused.body.length < 1024, `${what}: a short answer (${refused.body.length} bytes), no echo`);
  }
  t.same(await root.listAllKeys(DST, { prefix: 'raw/exists' }), ['raw/exists'], 'nothing was deleted');
  const mixed = deleteXml(['raw/exists', 'raw/never-existed', ''], false);
  const res = await post(mixed, { 'content-md5': md5Base64(mixed) });
  t.equal(res.status, 200, 'per-key failures do not fail the request');
  t.same(xmlBlocks(res.text, 'Deleted').map((d) => xmlText(d, 'Key')), ['raw/exists', 'raw/never-existed'], 'a missing key is Deleted too');
  const errs = xmlBlocks(res.text, 'Error').map((e) => ({ code: xmlText(e, 'Code'), keyLength: (xmlText(e, 'Key') ?? '').length }));
  t.same(errs, [{ code: 'InvalidArgument', keyLength: 0 }], 'per-key errors');
  const quietMixed = deleteXml(['raw/q', ''], true);
  const quietRes = await post(quietMixed, { 'content-md5': md5Base64(quietMixed) });
  t.same(xmlBlocks(quietRes.text, 'Deleted'), [], 'Quiet omits Deleted');
  t.equal(xmlBlocks(quietRes.text, 'Error').length, 1, 'Quiet still reports errors');

  const ro = await createBucketKey(server, DST, 'read');
  const small = deleteXml(['raw/x']);
  t.equal(errorCode(await post(small, { 'content-md5': md5Base64(small) }, ro)), 'AccessDenied', 'a read key may not delete');
  t.equal(root.log.filter((l) => l.status >= 500).length, 0, 'no 5xx for any raw request');
});

t.test('bucket CORS: aws cli configures, curl preflights and reads', async (t) => {
  t.equal((await root.putObject(DST, 'cors/obj.txt', Buffer.from('hello cors'))).status, 200);
  const none = await aws(['s3api', 'get-bucket-cors', '--bucket', DST]);
  t.equal(awsError(none), 'NoSuchCORSConfiguration', 'no configuration yet');
  const noCors = await curl(['-X', 'OPTIONS', `${server.url}/${DST}/cors/obj.txt`, '-H', 'Origin: https://app.example.com', '-H', 'Access-Control-Request-Method: GET']);
  t.equal(noCors.status, 403, 'preflight without configuration -> 403');

  const config = {
    CORSRules: [
      {
        ID: 'browser-uploads',
        AllowedOrigins: ['https://app.example.com', 'https://*.example.org'],
        AllowedMethods: ['GET', 'PUT', 'POST', 'HEAD'],
        AllowedHeaders: ['*'],
        ExposeHeaders: ['ETag', 'x-amz-request-id'],
        MaxAgeSeconds: 600,
      },
    ],
  };
  await writeFile(join(work, 'cors.json'), JSON.stringify(config));
  const put = await aws(['s3api', 'put-bucket-cors', '--bucket', DST, '--cors-configuration', 'file://cors.json']);
  t.equal(put.code, 0, described('put-bucket-cors', put));
  const get = await aws(['s3api', 'get-bucket-cors', '--bucket', DST]);
  t.equal(get.code, 0, described('get-bucket-cors', get));
  t.same(get.json, config, 'the configuration reads back as written');

  const rw = await createBucketKey(server, DST, 'read_write');
  const byKey = await aws(['s3api', 'put-bucket-cors', '--bucket', DST, '--cors-configuration', 'file://cors.json'], rw);
  t.equal(awsError(byKey), 'AccessDenied', 'a read_write bucket key may not change CORS');
  const readable = await aws(['s3api', 'get-bucket-cors', '--bucket', DST], rw);
  t.equal(readable.code, 0, described('a bucket key may read CORS', readable));

  const preflight = await curl([
    '-X', 'OPTIONS', `${server.url}/${DST}/cors/new-upload.bin`,
    '-H', 'Origin: https://app.example.com', '-H', 'Access-Control-Request-Method: PUT',
    '-H', 'Access-Control-Request-Headers: content-type, x-amz-date, authorization',
  ]);
  t.equal(preflight.status, 200, 'allowed preflight -> 200 (no signature needed)');
  t.equal(preflight.headers['access-control-allow-origin'], 'https://app.example.com');
  t.equal(preflight.headers['access-control-allow-methods'], 'GET, PUT, POST, HEAD');
  t.equal(preflight.headers['access-control-allow-headers'], 'content-type, x-amz-date, authorization');
  t.equal(preflight.headers['access-control-max-age'], '600');
  t.equal(preflight.headers['access-control-expose-headers'], 'ETag, x-amz-request-id');
  t.match(preflight.headers['vary'] ?? '', /Origin/);
  const wildcard = await curl(['-X', 'OPTIONS', `${server.url}/${DST}`, '-H', 'Origin: https://cdn.example.org', '-H', 'Access-Control-Request-Method: GET']);
  t.equal(wildcard.status, 200, 'wildcard origin on the bucket path');
  const refused = await curl(['-X', 'OPTIONS', `${server.url}/${DST}/cors/obj.txt`, '-H', 'Origin: https://evil.example.com', '-H', 'Access-Control-Request-Method: GET']);
  t.equal(refused.status, 403, 'refused preflight -> 403');
  t.equal(xmlText(refused.body, 'Code'), 'AccessForbidden');
  t.equal(refused.headers['access-control-allow-origin'], undefined, 'no grant on a refusal');
  const badMethod = await curl(['-X', 'OPTIONS', `${server.url}/${DST}/cors/obj.txt`, '-H', 'Origin: https://app.example.com', '-H', 'Access-Control-Request-Method: DELETE']);
  t.equal(badMethod.status, 403, 'method not allowed -> 403');
  const noOrigin = await curl(['-X', 'OPTIONS', `${server.url}/${DST}/cors/obj.txt`, '-H', 'Access-Control-Request-Method: GET']);
  t.equal(noOrigin.status, 400, 'preflight without Origin -> 400');
  const unknownBucket = await curl(['-X', 'OPTIONS', `${server.url}/cdc-unknown/x`, '-H', 'Origin: https://app.example.com', '-H', 'Access-Control-Request-Method: GET']);
  t.equal(unknownBucket.status, 403, 'an unknown bucket looks like one without CORS');

  // An actual (presigned) GET from the browser's origin: ETag is exposed so JS can read it.
  const presigned = await aws(['s3', 'presign', `s3://${DST}/cors/obj.txt`, '--expires-in', '300']);
  const actual = await curl([presigned.stdout.trim(), '-H', 'Origin: https://app.example.com']);
  t.equal(actual.status, 200);
  t.equal(actual.body, 'hello cors');
  t.equal(actual.headers['access-control-allow-origin'], 'https://app.example.com');
  t.equal(actual.headers['access-control-expose-headers'], 'ETag, x-amz-request-id', 'Access-Control-Expose-Headers carries ETag');
  t.match(actual.headers['vary'] ?? '', /Origin/);
  const foreign = await curl([presigned.stdout.trim(), '-H', 'Origin: https://evil.example.com']);
  t.equal(foreign.status, 200, 'a foreign origin is still served (the browser enforces CORS)');
  t.equal(foreign.headers['access-control-allow-origin'], undefined, 'but granted nothing');
  const denied = await curl([`${server.url}/${DST}/cors/obj.txt`, '-H', 'Origin: https://app.example.com']);
  t.equal(denied.status, 403, 'an unsigned GET is still refused');
  t.equal(denied.headers['access-control-allow-origin'], 'https://app.example.com', 'errors carry the grant so the browser can read them');

  // Validation through the client.
  await writeFile(join(work, 'cors-bad.json'), JSON.stringify({ CORSRules: [{ AllowedOrigins: ['*'], AllowedMethods: ['PATCH'] }] }));
  const bad = await aws(['s3api', 'put-bucket-cors', '--bucket', DST, '--cors-configuration', 'file://cors-bad.json']);
  t.equal(awsError(bad), 'InvalidRequest', 'unsupported method -> InvalidRequest');
  await writeFile(join(work, 'cors-wild.json'), JSON.stringify({ CORSRules: [{ AllowedOrigins: ['https://*.*.com'], AllowedMethods: ['GET'] }] }));
  t.equal(awsError(await aws(['s3api', 'put-bucket-cors', '--bucket', DST, '--cors-configuration', 'file://cors-wild.json'])), 'InvalidRequest', 'two wildcards -> InvalidRequest');
  const corsXml = Buffer.from('<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>');
  const noMd5 = await root.send({ method: 'PUT', bucket: DST, query: { cors: '' }, body: corsXml });
  t.equal(errorCode(noMd5), 'InvalidRequest', 'PutBucketCors without a digest -> InvalidRequest');
  const wrongMd5 = await root.send({ method: 'PUT', bucket: DST, query: { cors: '' }, body: corsXml, headers: { 'content-md5': md5Base64('x') } });
  t.equal(errorCode(wrongMd5), 'BadDigest', 'PutBucketCors with a wrong Content-MD5 -> BadDigest');
  t.same((await aws(['s3api', 'get-bucket-cors', '--bucket', DST])).json, config, 'refused updates changed nothing');

  const del = await aws(['s3api', 'delete-bucket-cors', '--bucket', DST]);
  t.equal(del.code, 0, described('delete-bucket-cors', del));
  t.equal(awsError(await aws(['s3api', 'get-bucket-cors', '--bucket', DST])), 'NoSuchCORSConfiguration', 'gone');
  const after = await curl(['-X', 'OPTIONS', `${server.url}/${DST}/cors/obj.txt`, '-H', 'Origin: https://app.example.com', '-H', 'Access-Control-Request-Method: GET']);
  t.equal(after.status, 403, 'preflight refused once the configuration is deleted');
});

t.test('s3cmd mb / put / get / ls / info / setacl / cp / del', async (t) => {
  const cfg = join(work, 's3cfg');
  const host = new URL(server.url).host;
  await writeFile(
    cfg,
    [
      '[default]',
      `access_key = ${server.rootKey.accessKeyId}`,
      `secret_key = ${server.rootKey.secretAccessKey}`,
      `host_base = ${host}`,
      `host_bucket = ${host}`,
      'use_https = False',
      'signature_v2 = False',
      'bucket_location = us-east-1',
      'check_ssl_certificate = False',
      '',
    ].join('\n'),
  );
  const env: NodeJS.ProcessEnv = { ...isolatedAwsEnv(awsFiles, server.rootKey), HOME: work };
  const s3cmd = (args: string[]) => run('s3cmd', ['-c', cfg, ...args], env);
  const data = randomData(70 * 1024);
  await writeFile(join(work, 's3cmd-up.bin'), data);

  const mb = await s3cmd(['mb', 's3://cdc-s3cmd']);
  t.equal(mb.code, 0, described('s3cmd mb', mb));
  const put = await s3cmd(['put', 's3cmd-up.bin', 's3://cdc-s3cmd/dir/file.bin']);
  t.equal(put.code, 0, described('s3cmd put', put));
  const get = await s3cmd(['get', '--force', 's3://cdc-s3cmd/dir/file.bin', 's3cmd-down.bin']);
  t.equal(get.code, 0, described('s3cmd get', get));
  t.equal(sha256Hex(await readFile(join(work, 's3cmd-down.bin'))), sha256Hex(data), 's3cmd round trip');
  const ls = await s3cmd(['ls', '-r', 's3://cdc-s3cmd']);
  t.equal(ls.code, 0, described('s3cmd ls', ls));
  t.match(ls.stdout, /\s71680\s+s3:\/\/cdc-s3cmd\/dir\/file\.bin/, 's3cmd ls lists the object with its size');
  const lsBuckets = await s3cmd(['ls']);
  t.match(lsBuckets.stdout, /s3:\/\/cdc-s3cmd/);

  const infoBucket = await s3cmd(['info', 's3://cdc-s3cmd']);
  t.equal(infoBucket.code, 0, described('s3cmd info (bucket)', infoBucket));
  t.match(infoBucket.stdout, /Location:\s+us-east-1/);
  t.match(infoBucket.stdout, /Payer:\s+BucketOwner/);
  t.match(infoBucket.stdout, /Expiration Rule: none/);
  t.match(infoBucket.stdout, /Policy:\s+none/);
  t.match(infoBucket.stdout, /CORS:\s+none/);
  t.match(infoBucket.stdout, /ACL:\s+\S+: FULL_CONTROL/);
  const infoObject = await s3cmd(['info', 's3://cdc-s3cmd/dir/file.bin']);
  t.equal(infoObject.code, 0, described('s3cmd info (object)', infoObject));
  t.match(infoObject.stdout, `MD5 sum:   ${md5Hex(data)}`);
  t.match(infoObject.stdout, /File size: 71680/);
  t.match(infoObject.stdout, /ACL:\s+\S+: FULL_CONTROL/);

  // A read-only bucket key may look: every configuration s3cmd info asks for needs only read access.
  const ro = await createBucketKey(server, 'cdc-s3cmd', 'read');
  const roCfg = join(work, 's3cfg-read');
  await writeFile(
    roCfg,
    (await readFile(cfg, 'utf8'))
      .replace(server.rootKey.accessKeyId, ro.accessKeyId)
      .replace(server.rootKey.secretAccessKey, ro.secretAccessKey),
  );
  const roInfo = await run('s3cmd', ['-c', roCfg, 'info', 's3://cdc-s3cmd'], env);
  t.equal(roInfo.code, 0, described('s3cmd info with a read bucket key', roInfo));
  const roPut = await run('s3cmd', ['-c', roCfg, 'put', 's3cmd-up.bin', 's3://cdc-s3cmd/ro.bin'], env);
  t.not(roPut.code, 0, 'but may not put');

  const setPrivate = await s3cmd(['setacl', '--acl-private', 's3://cdc-s3cmd/dir/file.bin']);
  t.equal(setPrivate.code, 0, described('s3cmd setacl --acl-private (owner FULL_CONTROL only)', setPrivate));
  t.equal((await fetch(`${server.url}/cdc-s3cmd/dir/file.bin`)).status, 403, 'private: no unsigned read');
  const setPublic = await s3cmd(['setacl', '--acl-public', 's3://cdc-s3cmd/dir/file.bin']);
  t.equal(setPublic.code, 0, described('s3cmd setacl --acl-public (AllUsers READ)', setPublic));
  t.equal((await fetch(`${server.url}/cdc-s3cmd/dir/file.bin`)).status, 200, 'public-read: anyone reads the object');
  const setPrivateAgain = await s3cmd(['setacl', '--acl-private', 's3://cdc-s3cmd/dir/file.bin']);
  t.equal(setPrivateAgain.code, 0, described('s3cmd setacl --acl-private again', setPrivateAgain));
  t.equal((await fetch(`${server.url}/cdc-s3cmd/dir/file.bin`)).status, 403, 'private again');

  const cp = await s3cmd(['cp', 's3://cdc-s3cmd/dir/file.bin', 's3://cdc-s3cmd/dir/copy.bin']);
  t.equal(cp.code, 0, described('s3cmd cp (CopyObject)', cp));
  const mv = await s3cmd(['mv', 's3://cdc-s3cmd/dir/copy.bin', 's3://cdc-s3cmd/moved.bin']);
  t.equal(mv.code, 0, described('s3cmd mv', mv));
  t.same(await root.listAllKeys('cdc-s3cmd'), ['dir/file.bin', 'moved.bin']);
  const del = await s3cmd(['del', 's3://cdc-s3cmd/moved.bin']);
  t.equal(del.code, 0, described('s3cmd del', del));
  const delRecursive = await s3cmd(['del', '--recursive', '--force', 's3://cdc-s3cmd/']);
  t.equal(delRecursive.code, 0, described('s3cmd del --recursive (DeleteObjects with Content-MD5)', delRecursive));
  t.same(await root.listAllKeys('cdc-s3cmd'), [], 'bucket emptied');
  const rb = await s3cmd(['rb', 's3://cdc-s3cmd']);
  t.equal(rb.code, 0, described('s3cmd rb', rb));
});

t.test('rclone: copy, modtime update by REPLACE self-copy, server-side copy, check', async (t) => {
  const conf = join(work, 'rclone.conf');
  await writeFile(
    conf,
    [
      '[s3e]',
      'type = s3',
      'provider = Other',
      `access_key_id = ${server.rootKey.accessKeyId}`,
      `secret_access_key = ${server.rootKey.secretAccessKey}`,
      `endpoint = ${server.url}`,
      'region = us-east-1',
      '',
    ].join('\n'),
  );
  // isolatedAwsEnv drops AWS_CA_BUNDLE, which rclone 1.60 cannot combine with its own transport.
  const env: NodeJS.ProcessEnv = { ...isolatedAwsEnv(awsFiles, server.rootKey), HOME: work };
  const rclone = (args: string[]) => run('rclone', ['--config', conf, ...args], env);
  await writeFile(join(work, 'rclone-file.txt'), 'rclone modtime test\n');
  const copy = await rclone(['copyto', join(work, 'rclone-file.txt'), `s3e:${DST}/rclone/file.txt`]);
  t.equal(copy.code, 0, described('rclone copyto', copy));
  const touch = await rclone(['touch', '-t', '2020-01-02T03:04:05', `s3e:${DST}/rclone/file.txt`]);
  t.equal(touch.code, 0, described('rclone touch (REPLACE self-copy)', touch));
  const ls = await rclone(['lsjson', `s3e:${DST}/rclone/`]);
  t.equal(ls.code, 0, described('rclone lsjson', ls));
  let entries: unknown[] = [];
  try {
    entries = JSON.parse(ls.stdout) as unknown[];
  } catch {
    t.fail(`lsjson output: ${ls.stdout}`);
  }
  const file = entries.map(asRecord).find((e) => e['Name'] === 'file.txt');
  t.equal(Date.parse(String(file?.['ModTime'])), Date.parse('2020-01-02T03:04:05Z'), `the new modtime is stored: ${ls.stdout}`);
  const serverSide = await rclone(['copy', `s3e:${DST}/rclone`, `s3e:${SRC}/rclone-copy`]);
  t.equal(serverSide.code, 0, described('rclone server-side copy across buckets', serverSide));
  const check = await rclone(['check', `s3e:${DST}/rclone`, `s3e:${SRC}/rclone-copy`]);
  t.equal(check.code, 0, described('rclone check (MD5 via ETag)', check));
  t.equal((await root.getObject(SRC, 'rclone-copy/file.txt')).text, 'rclone modtime test\n');
  const copied = await rclone(['lsjson', `s3e:${SRC}/rclone-copy/`]);
  const copiedFile = (JSON.parse(copied.stdout || '[]') as unknown[]).map(asRecord).find((e) => e['Name'] === 'file.txt');
  t.equal(Date.parse(String(copiedFile?.['ModTime'])), Date.parse('2020-01-02T03:04:05Z'), 'the server-side copy kept the modtime metadata');
});
