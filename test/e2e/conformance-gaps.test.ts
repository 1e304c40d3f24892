// Conformance gaps real clients met (issue 20), each answered as AWS answers it, over real sockets:
//  - presigned X-Amz-Expires 0 / negative / over a week (boto3 generate_presigned_url, fetched);
//  - GetObject/HeadObject partNumber past the parts, on single-part and multipart objects (boto3);
//  - ListObjectsV2 with an empty continuation-token; prefix and delimiter LF (boto3, aws cli, raw);
//  - CreateBucket of a bucket one owns: 200 in us-east-1, 409 BucketAlreadyOwnedByYou elsewhere
//    (boto3, aws cli, raw, rclone with a bucket key);
//  - an Expect header other than 100-continue is ignored on every door, 100-Continue still honoured;
//  - one part number uploaded twice at once: the last to finish is the part, the other's blob is gone;
//  - conditional writes racing (If-None-Match: *, If-Match on PutObject and CompleteMultipartUpload):
//    exactly one wins, the others 412 PreconditionFailed or 409 ConditionalRequestConflict (boto3, aws cli).
// The boto3 side is test/python/conformance_gaps.py (one run, JSON on stdout).
import t from 'tap';
import { connect } from 'node:net';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeFile } from 'node:fs/promises';
import { startServer, createBucketKey, type RunningServer } from '../helpers/server.js';
import { RawS3, errorCode, randomData } from '../helpers/s3-client.js';
import { parseRawResponse, rawRequest, type HeaderList, type RawResponse } from '../helpers/raw-http.js';
import { writeAwsConfig, isolatedAwsEnv, runAws } from '../helpers/aws-cli.js';
import { asRecord, describeRun, run } from '../helpers/conformance.js';
import { md5Hex, sha256Hex } from '../helpers/checksums.js';
import { xmlText } from '../helpers/xml.js';

const SCRIPT = fileURLToPath(new URL('../../../test/python/conformance_gaps.py', import.meta.url));
const MiB = 1024 * 1024;

// Disk storage: the part test counts blob files.
const server = await startServer({ upstream: false });
t.teardown(() => server.stop());
const awsFiles = await writeAwsConfig(server.tmpRoot);
const root = new RawS3({ url: server.url }, server.rootKey);

type R = Record<string, unknown>;
const rec = (v: unknown): R => asRecord(v);

t.test('boto3: presigned expiry, partNumber, listings, CreateBucket of an owned bucket', async (t) => {
  for (const b of ['gaps', 'gaps-list']) t.equal((await root.createBucket(b)).status, 200, `CreateBucket ${b}`);
  const r = await run('python3', [SCRIPT, '--endpoint', server.url, '--bucket', 'gaps', '--list-bucket', 'gaps-list'], {
    env: isolatedAwsEnv(awsFiles, server.rootKey),
    timeoutMs: 120_000,
  });
  if (!t.equal(r.code, 0, describeRun('conformance_gaps.py', r))) return;
  const out = rec(JSON.parse(r.stdout) as unknown);

  // Presigned: 0 has expired at once (403); negative and over a week are malformed (400), AWS's messages.
  const presign = rec(out['presign']);
  const answer = (n: string): { status: unknown; code?: string; message?: string; text: string } => {
    const a = rec(presign[n]);
    const text = String(a['body']);
    return { status: a['status'], code: xmlText(text, 'Code'), message: xmlText(text, 'Message'), text };
  };
  t.match(answer('0'), { status: 403, code: 'AccessDenied', message: 'Request has expired' }, 'ExpiresIn=0');
  t.equal(xmlText(answer('0').text, 'X-Amz-Expires'), '0', 'ExpiresIn=0: the expiry echoed');
  t.match(answer('-7'), { status: 400, code: 'AuthorizationQueryParametersError', message: 'X-Amz-Expires must be non-negative' }, 'ExpiresIn=-7');
  t.match(
    answer('604801'),
    { status: 400, code: 'AuthorizationQueryParametersError', message: 'X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds' },
    'ExpiresIn=604801',
  );
  t.match(answer('604800'), { status: 200, text: 'presigned' }, 'ExpiresIn=604800: the longest allowed works');

  // partNumber: a single-part object is its own part 1 (206, whole object, no parts count); beyond the
  // last part 416 InvalidPartNumber with the counts, on GET and on HEAD (which has no body to carry them).
  const parts = rec(out['parts']);
  t.same(rec(parts['single_get_1'])['ok'], { status: 206, length: 4, range: 'bytes 0-3/4', parts: null, etag: parts['single_etag'], body: 'body' }, 'single-part GET partNumber=1');
  t.same(rec(parts['single_head_1'])['ok'], { status: 206, length: 4, range: 'bytes 0-3/4', parts: null, etag: parts['single_etag'], body: null }, 'single-part HEAD partNumber=1');
  t.match(parts['single_get_2'], { status: 416, code: 'InvalidPartNumber', message: 'The requested partnumber is not satisfiable', error: { PartNumberRequested: '2', ActualPartCount: '1' } }, 'single-part GET partNumber=2');
  t.match(parts['single_head_2'], { status: 416, code: '416' }, 'single-part HEAD partNumber=2: 416, no body');
  const size = 5 * MiB + 10;
  t.same(rec(parts['multi_get_2'])['ok'], { status: 206, length: 10, range: `bytes ${5 * MiB}-${size - 1}/${size}`, parts: 2, etag: parts['multi_etag'], body: 'tail-bytes' }, 'multipart GET partNumber=2');
  t.same(rec(parts['multi_head_2'])['ok'], { status: 206, length: 10, range: `bytes ${5 * MiB}-${size - 1}/${size}`, parts: 2, etag: parts['multi_etag'], body: null }, 'multipart HEAD partNumber=2');
  t.match(parts['multi_get_3'], { status: 416, code: 'InvalidPartNumber', error: { PartNumberRequested: '3', ActualPartCount: '2' } }, 'multipart GET partNumber=3');
  t.match(parts['multi_head_3'], { status: 416, code: '416' }, 'multipart HEAD partNumber=3');

  // Listings.
  const listing = rec(out['listing']);
  t.match(listing['empty_token'], { status: 400, code: 'InvalidArgument', message: 'The continuation token provided is incorrect', error: { ArgumentName: 'continuation-token' }, retries: 0 }, 'empty ContinuationToken');
  t.same(rec(listing['v2_prefix_lf'])['ok'], { prefix: '\n', delimiter: null, keys: [], prefixes: [] }, 'list_objects_v2 Prefix LF');
  // AWS URL-encodes ListObjects' Prefix too, but botocore decodes only Delimiter, Marker and NextMarker
  // of it (boto/boto3#3534, ceph/s3-tests#327): the caller sees %0A, as against AWS.
  t.same(rec(listing['v1_prefix_lf'])['ok'], { prefix: '%0A', delimiter: null, keys: [], prefixes: [] }, 'list_objects Prefix LF (left encoded by botocore)');
  t.same(rec(listing['v2_delimiter_lf'])['ok'], { prefix: '', delimiter: '\n', keys: ['foo/bar', 'foo/baz', 'quux'], prefixes: [] }, 'list_objects_v2 Delimiter LF');
  t.same(rec(listing['v1_delimiter_lf'])['ok'], { prefix: '', delimiter: '\n', keys: ['foo/bar', 'foo/baz', 'quux'], prefixes: [] }, 'list_objects Delimiter LF');

  // CreateBucket of one's own bucket in us-east-1: AWS's legacy 200.
  t.same(out['create'], { ok: 200 }, 'create_bucket of an owned bucket in us-east-1: 200');

  // Conditional writes racing: exactly one writer wins and its bytes are what is stored; every other
  // one is refused with 412 (checked before its body) or 409 (lost at the commit), as AWS answers.
  const racing = rec(out['racing']);
  for (const [name, stored] of [['create', 'create_stored'], ['match', 'match_stored'], ['complete', 'complete_stored']] as const) {
    const results = racing[name] as R[];
    const winners = results.filter((x) => 'ok' in x);
    t.equal(winners.length, 1, `${name}: exactly one of ${results.length} racing writers wins`);
    const losers = results.filter((x) => !('ok' in x));
    t.ok(
      losers.every((x) => (x['status'] === 412 && x['code'] === 'PreconditionFailed') || (x['status'] === 409 && x['code'] === 'ConditionalRequestConflict')),
      `${name}: the others are 412 PreconditionFailed or 409 ConditionalRequestConflict (${losers.map((x) => `${String(x['status'])} ${String(x['code'])}`).join(', ')})`,
    );
    t.equal(racing[stored], winners[0]?.['ok'], `${name}: the stored object is the winner's`);
  }
  const bodyEtags = racing['body_etags'] as string[];
  t.ok(bodyEtags.includes(String(racing['create_stored'])) && bodyEtags.includes(String(racing['match_stored'])), 'the winners\' bytes, whole');
});

t.test('aws cli: put-object --if-none-match and --if-match', async (t) => {
  const target = { endpoint: server.url, credentials: server.rootKey, files: awsFiles };
  const body = join(server.tmpRoot, 'conditional.txt');
  await writeFile(body, 'conditional');
  const put = (...extra: string[]) => runAws(target, ['s3api', 'put-object', '--bucket', 'gaps', '--key', 'cli/conditional', '--body', body, ...extra]);
  const first = await put('--if-none-match', '*');
  t.equal(first.code, 0, `a new key with --if-none-match '*': ${first.stderr}`);
  const again = await put('--if-none-match', '*');
  t.not(again.code, 0, 'again: refused');
  t.match(again.stderr, /PreconditionFailed/, 'PreconditionFailed');
  const stale = await put('--if-match', '"00000000000000000000000000000000"');
  t.match(stale.stderr, /PreconditionFailed/, '--if-match of another ETag: PreconditionFailed');
  const etag = String(rec(first.json)['ETag']);
  const match = await put('--if-match', etag);
  t.equal(match.code, 0, `--if-match of the current ETag: written ${match.stderr}`);
});

t.test('aws cli and raw: LF prefix and delimiter list, with and without encoding-type=url', async (t) => {
  const target = { endpoint: server.url, credentials: server.rootKey, files: awsFiles };
  const v2 = await runAws(target, ['s3api', 'list-objects-v2', '--bucket', 'gaps-list', '--prefix', '\n']);
  t.equal(v2.code, 0, `aws s3api list-objects-v2 --prefix $'\\n': ${v2.stderr}`);
  t.match(v2.json, { Prefix: '\n' }, 'the prefix comes back exactly');
  t.notOk(rec(v2.json)['Contents'], 'no key starts with LF');
  const d = await runAws(target, ['s3api', 'list-objects-v2', '--bucket', 'gaps-list', '--delimiter', '\n']);
  t.equal(d.code, 0, `aws s3api list-objects-v2 --delimiter $'\\n': ${d.stderr}`);
  t.same((rec(d.json)['Contents'] as R[]).map((o) => o['Key']), ['foo/bar', 'foo/baz', 'quux'], 'every key, no common prefix');
  // Without encoding-type=url LF is written as a character reference, which every XML parser reads back.
  const raw = await root.send({ method: 'GET', bucket: 'gaps-list', query: { 'list-type': '2', prefix: '\n', delimiter: '\n' } });
  t.equal(raw.status, 200);
  t.match(raw.text, /<Prefix>&#10;<\/Prefix>/, 'Prefix LF as &#10;');
  t.match(raw.text, /<Delimiter>&#10;<\/Delimiter>/, 'Delimiter LF as &#10;');
  const url = await root.send({ method: 'GET', bucket: 'gaps-list', query: { 'list-type': '2', prefix: '\n', 'encoding-type': 'url' } });
  t.match(url.text, /<Prefix>%0A<\/Prefix>/, 'with encoding-type=url: %0A');
  const empty = await root.send({ method: 'GET', bucket: 'gaps-list', query: { 'list-type': '2', 'continuation-token': '' } });
  t.equal(empty.status, 400, 'continuation-token= : 400');
  t.equal(errorCode(empty), 'InvalidArgument');
  t.equal(xmlText(empty.text, 'Message'), 'The continuation token provided is incorrect');
});

t.test('CreateBucket of an owned bucket outside us-east-1: 409 BucketAlreadyOwnedByYou; rclone with a bucket key still writes', async (t) => {
  const eu = await startServer({ upstream: false, env: { S3EDGE_REGION: 'eu-west-1' } });
  t.teardown(() => eu.stop());
  const s3 = new RawS3({ url: eu.url }, eu.rootKey);
  const create = (as: RawS3 = s3): Promise<RawResponse> => as.send({ method: 'PUT', bucket: 'eu-bucket', body: Buffer.alloc(0), region: 'eu-west-1' });
  t.equal((await create()).status, 200, 'created');
  const again = await create();
  t.equal(again.status, 409, 'created again: 409');
  t.equal(errorCode(again), 'BucketAlreadyOwnedByYou');
  t.equal(xmlText(again.text, 'BucketName'), 'eu-bucket');
  const files = await writeAwsConfig(eu.tmpRoot);
  const cli = await runAws({ endpoint: eu.url, credentials: eu.rootKey, files }, ['s3api', 'create-bucket', '--bucket', 'eu-bucket', '--region', 'eu-west-1', '--create-bucket-configuration', 'LocationConstraint=eu-west-1']);
  t.not(cli.code, 0, 'aws s3api create-bucket of an owned bucket fails');
  t.match(cli.stderr, /BucketAlreadyOwnedByYou/, 'aws cli shows BucketAlreadyOwnedByYou');
  const key = await createBucketKey(eu, 'eu-bucket', 'read_write');
  const byKey = await create(s3.as(key));
  t.equal(byKey.status, 409, 'a bucket key re-creating its bucket gets the owner\'s answer');
  t.equal(errorCode(byKey), 'BucketAlreadyOwnedByYou');
  // rclone checks the bucket by creating it before its first upload; 409 BucketAlreadyOwnedByYou is "it exists".
  const conf = join(eu.tmpRoot, 'rclone.conf');
  await writeFile(conf, `[eu]\ntype = s3\nprovider = Other\nendpoint = ${eu.url}\nregion = eu-west-1\naccess_key_id = ${key.accessKeyId}\nsecret_access_key = ${key.secretAccessKey}\n`);
  const src = join(eu.tmpRoot, 'rclone-src.txt');
  await writeFile(src, 'rclone through a bucket key\n');
  const rc = await run('rclone', ['--config', conf, 'copyto', src, 'eu:eu-bucket/rclone.txt'], { env: isolatedAwsEnv(files, key) });
  t.equal(rc.code, 0, describeRun('rclone copyto with a bucket key', rc));
  t.equal((await s3.send({ method: 'GET', bucket: 'eu-bucket', key: 'rclone.txt', region: 'eu-west-1' })).text, 'rclone through a bucket key\n', 'rclone stored the file');
});

/** Sends a raw request with the given headers and no body; resolves with the answer. */
function plain(url: string, method: string, target: string, headers: HeaderList): Promise<RawResponse> {
  return rawRequest({ url }, { method, target, headers });
}

t.test('Expect other than 100-continue is ignored on the S3 port, the API and the CDN; 100-Continue still waits', async (t) => {
  const body = Buffer.from('expect-body');
  const put = await root.send({ method: 'PUT', bucket: 'gaps', key: 'expect.txt', body, headers: { expect: 'x-unknown-expectation' } });
  t.equal(put.status, 200, 'PutObject with Expect: x-unknown-expectation is served, not 417');
  t.equal((await root.getObject('gaps', 'expect.txt')).text, 'expect-body', 'and stored');
  const get = await root.send({ method: 'GET', bucket: 'gaps', key: 'expect.txt', headers: { expect: 'x-unknown-expectation' } });
  t.equal(get.status, 200, 'GetObject with it too');

  const host = new URL(server.url).host;
  for (const [door, url, target, hostHeader] of [
    ['API', server.url, '/api/v3/account', host],
    ['CDN', server.cdnUrl, '/no-such-asset', `cdn.localhost:${new URL(server.cdnUrl).port}`],
  ] as const) {
    const without = await plain(url, 'GET', target, [['Host', hostHeader]]);
    const withIt = await plain(url, 'GET', target, [['Host', hostHeader], ['Expect', 'x-unknown-expectation']]);
    t.not(withIt.status, 417, `${door}: not 417`);
    t.equal(withIt.status, without.status, `${door}: the same answer as without the header (${without.status})`);
  }

  // 100-Continue (aws-sdk-go's spelling): the go-ahead comes before the body is sent, then the answer.
  const data = Buffer.from('continued');
  const signed = await root.sign({ method: 'PUT', bucket: 'gaps', key: 'continue.txt', payloadHash: sha256Hex(data) });
  const socket = connect({ host: '127.0.0.1', port: Number(new URL(server.url).port) });
  const received: Buffer[] = [];
  socket.on('data', (d: Buffer) => received.push(d));
  const closed = new Promise<void>((done) => socket.once('close', () => done()));
  const headers = [...signed.headers, ['Content-Length', String(data.length)], ['Expect', '100-Continue'], ['Connection', 'close']];
  socket.write(`PUT ${signed.target} HTTP/1.1\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`);
  for (let i = 0; i < 100 && !Buffer.concat(received).includes('\r\n\r\n'); i++) await sleep(20);
  t.match(Buffer.concat(received).toString('latin1'), /^HTTP\/1\.1 100 Continue\r\n\r\n$/, '100 Continue before the body');
  received.length = 0;
  socket.write(data);
  await closed;
  t.equal(parseRawResponse(Buffer.concat(received), false).status, 200, 'then 200');
  t.equal((await root.getObject('gaps', 'continue.txt')).text, 'continued');
});

function blobFiles(s: RunningServer): number {
  const dir = join(s.dataDir, 'storage', 'blobs');
  let n = 0;
  for (const sub of readdirSync(dir, { withFileTypes: true })) if (sub.isDirectory()) n += readdirSync(join(dir, sub.name)).length;
  return n;
}

t.test('one part number uploaded twice at once: the last to finish is the part; the other is InvalidPart and its bytes are gone', async (t) => {
  const key = 'race.bin';
  const created = await root.send({ method: 'POST', bucket: 'gaps', key, query: { uploads: '' } });
  const uploadId = xmlText(created.text, 'UploadId') ?? '';
  const before = blobFiles(server);
  // Both past the inline limit (64 KiB): each part is a blob file.
  const slow = randomData(200 * 1024);
  const fast = randomData(150 * 1024);
  const query = { partNumber: '1', uploadId };

  // The slow upload sends its headers and half its body, then waits until the fast one is answered.
  const signed = await root.sign({ method: 'PUT', bucket: 'gaps', key, query, payloadHash: sha256Hex(slow) });
  const socket = connect({ host: '127.0.0.1', port: Number(new URL(server.url).port) });
  socket.setNoDelay(true);
  const received: Buffer[] = [];
  socket.on('data', (d: Buffer) => received.push(d));
  const closed = new Promise<void>((done) => socket.once('close', () => done()));
  const headers = [...signed.headers, ['Content-Length', String(slow.length)], ['Connection', 'close']];
  socket.write(`PUT ${signed.target} HTTP/1.1\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`);
  socket.write(slow.subarray(0, slow.length / 2));
  await sleep(100);

  const fastRes = await root.send({ method: 'PUT', bucket: 'gaps', key, query, body: fast });
  t.equal(fastRes.status, 200, 'the fast upload of part 1 finishes first');
  t.equal(fastRes.headers['etag'], `"${md5Hex(fast)}"`);
  socket.write(slow.subarray(slow.length / 2));
  await closed;
  const slowRes = parseRawResponse(Buffer.concat(received), false);
  t.equal(slowRes.status, 200, 'the slow upload of part 1 finishes last');
  t.equal(slowRes.headers['etag'], `"${md5Hex(slow)}"`);

  const listed = await root.send({ method: 'GET', bucket: 'gaps', key, query: { uploadId } });
  t.equal(xmlText(listed.text, 'ETag'), `"${md5Hex(slow)}"`, 'ListParts shows the last to finish');
  const complete = (etag: string): Promise<RawResponse> =>
    root.send({ method: 'POST', bucket: 'gaps', key, query: { uploadId }, body: Buffer.from(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${etag}</ETag></Part></CompleteMultipartUpload>`) });
  const loser = await complete(`"${md5Hex(fast)}"`);
  t.equal(loser.status, 400, 'completing with the first finisher\'s ETag: 400');
  t.equal(errorCode(loser), 'InvalidPart');
  const winner = await complete(`"${md5Hex(slow)}"`);
  t.equal(winner.status, 200, 'completing with the last finisher\'s ETag: 200');
  const got = await root.getObject('gaps', key);
  t.equal(sha256Hex(got.body), sha256Hex(slow), 'the object holds the last finisher\'s bytes');
  // The replaced part's blob goes to the trash and is removed soon after: one blob file is left.
  let files = blobFiles(server);
  for (let i = 0; i < 100 && files !== before + 1; i++) {
    await sleep(50);
    files = blobFiles(server);
  }
  t.equal(files, before + 1, 'only the object\'s blob is on disk: the other upload\'s bytes were removed');
});
