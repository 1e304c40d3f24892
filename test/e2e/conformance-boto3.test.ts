// Client conformance: boto3 against the real server. The Python side is
// test/python/conformance_boto3.py (one phase per run, JSON on stdout); this file computes every
// expected value itself and asserts.
//  - upload_file/download_file of a 24 MiB file with TransferConfig(multipart_threshold=8 MiB) and the
//    default checksum (CRC32, sent as a trailer over HTTPS): bytes, multipart ETag, composite CRC32.
//  - presigned PUT and GET from generate_presigned_url, used by curl (HTTP and HTTPS).
//  - delete_objects of 1000 keys (CRC32 header, no Content-MD5), nothing left; Quiet mode.
//  - CORS: put_bucket_cors, then preflights by curl (allowed: 200 with the allow headers; refused:
//    403), a real GET and PUT with Origin (ETag exposed), delete_bucket_cors.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../helpers/server.js';
import { RawS3 } from '../helpers/s3-client.js';
import { writeAwsConfig, isolatedAwsEnv } from '../helpers/aws-cli.js';
import { checksumBytes, md5Hex, sha256Hex } from '../helpers/checksums.js';
import { asArray, asRecord, curl, describeRun, multipartEtagOfFile, run, s3Sorted, sha256File, writeBigFile, type RunResult } from '../helpers/conformance.js';

const SCRIPT = fileURLToPath(new URL('../../../test/python/conformance_boto3.py', import.meta.url));
const MiB = 1024 * 1024;

const server = await startServer({ tls: true });
t.teardown(() => server.stop());
const awsFiles = await writeAwsConfig(server.tmpRoot);
const root = new RawS3({ url: server.url }, server.rootKey);
const work = join(server.tmpRoot, 'work');
await mkdir(work, { recursive: true });

const http = { endpoint: server.url, caFile: undefined };
const https = { endpoint: server.tlsUrl ?? '', caFile: server.caFile };
type Transport = typeof http | typeof https;

async function python(phase: string, tr: Transport, args: string[]): Promise<{ r: RunResult; out: Record<string, unknown> }> {
  const full = [SCRIPT, phase, '--endpoint', tr.endpoint, ...args];
  if (tr.caFile) full.push('--ca-bundle', tr.caFile);
  const r = await run('python3', full, { env: isolatedAwsEnv(awsFiles, server.rootKey) });
  let out: Record<string, unknown> = {};
  try {
    out = asRecord(JSON.parse(r.stdout) as unknown);
  } catch {
    out = {};
  }
  return { r, out };
}

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

function pyOk(t: TapTest, r: RunResult, what: string): boolean {
  return t.equal(r.code, 0, describeRun(`python ${what}`, r));
}

t.test('buckets', async (t) => {
  for (const b of ['boto3-transfer', 'boto3-presign', 'boto3-batch', 'boto3-cors', 'boto3-nocors']) {
    const res = await root.createBucket(b);
    t.equal(res.status, 200, `CreateBucket ${b} ${res.text}`);
  }
});

t.test('upload_file / download_file, 24 MiB in 8 MiB parts, default CRC32 trailers over HTTPS', async (t) => {
  const src = join(work, 'transfer-src.bin');
  const dst = join(work, 'transfer-dst.bin');
  const size = 24 * MiB;
  const digest = await writeBigFile(src, size);
  const key = 'big/twenty four ü+.bin';
  const { r, out } = await python('transfer', https, ['--bucket', 'boto3-transfer', '--key', key, '--src', src, '--dst', dst]);
  pyOk(t, r, 'transfer');
  t.comment(`botocore ${String(out['botocore'])}`);
  t.equal(out['upload'], 'ok', `upload_file: ${JSON.stringify(out['upload'])}`);
  t.equal(out['download'], 'ok', `download_file: ${JSON.stringify(out['download'])}`);
  t.equal(await sha256File(dst), digest.sha256, 'download_file wrote exactly the uploaded bytes (SHA-256)');

  // What botocore sent: a CRC32 multipart upload, each part with its CRC32 in an unsigned trailer.
  const wire = asRecord(out['wire']);
  const creates = asArray(wire['CreateMultipartUpload']).map(asRecord);
  const parts = asArray(wire['UploadPart']).map(asRecord);
  t.equal(creates.length, 1, 'one CreateMultipartUpload');
  t.equal(creates[0]?.['x-amz-checksum-algorithm'], 'CRC32', 'CreateMultipartUpload announces CRC32');
  t.equal(parts.length, 3, 'three UploadPart requests (8 MiB each)');
  for (const p of parts) {
    t.same([p['x-amz-content-sha256'], p['x-amz-trailer']], ['STREAMING-UNSIGNED-PAYLOAD-TRAILER', 'x-amz-checksum-crc32'], 'UploadPart: CRC32 in an unsigned trailer');
  }
  t.equal(asArray(wire['CompleteMultipartUpload']).length, 1, 'one CompleteMultipartUpload');

  // The object as the server describes it.
  const bytes = await readFile(src);
  const partCrcs = [0, 1, 2].map((i) => checksumBytes('CRC32', bytes.subarray(i * 8 * MiB, (i + 1) * 8 * MiB)));
  const composite = `${checksumBytes('CRC32', Buffer.concat(partCrcs)).toString('base64')}-3`;
  const head = asRecord(out['head']);
  t.same(
    head,
    { etag: await multipartEtagOfFile(src, 8 * MiB), contentLength: size, checksumCRC32: composite, checksumType: 'COMPOSITE' },
    'head_object: multipart ETag (-3), length, composite CRC32 of the part CRC32s (-3), type COMPOSITE',
  );
  const raw = await root.getObject('boto3-transfer', key);
  t.equal(raw.status, 200, 'raw GET');
  t.equal(sha256Hex(raw.body), digest.sha256, 'raw GET returns the same bytes');
  await rm(src, { force: true });
  await rm(dst, { force: true });
});

for (const [name, tr] of [['http', http], ['https', https]] as const) {
  t.test(`presigned PUT and GET from boto3, used by curl (${name})`, async (t) => {
    const key = `presigned/${name}/file with space+ü.bin`;
    const { r, out } = await python('presign', tr, ['--bucket', 'boto3-presign', '--key', key]);
    pyOk(t, r, 'presign');
    const putUrl = String(out['put']);
    const getUrl = String(out['get']);
    t.ok(putUrl.startsWith(`${tr.endpoint}/boto3-presign/presigned/${name}/`), `path-style presigned PUT URL: ${putUrl}`);
    const body = randomBytes(300_001);
    const file = join(work, `presign-${name}.bin`);
    await writeFile(file, body);
    const put = await curl(putUrl, join(work, `presign-put-${name}.out`), ['-T', file], tr.caFile);
    t.equal(put.status, 200, `curl -T to the presigned PUT URL: ${put.body} ${put.stderr}`);
    t.equal(put.headers['etag'], `"${md5Hex(body)}"`, 'PUT ETag');
    const head = await root.headObject('boto3-presign', key);
    t.same([head.status, head.headers['etag'], head.headers['content-length']], [200, `"${md5Hex(body)}"`, String(body.length)], 'stored under the exact key');

    const getOut = join(work, `presign-get-${name}.bin`);
    const get = await curl(getUrl, getOut, [], tr.caFile);
    t.equal(get.status, 200, `curl the presigned GET URL ${get.stderr}`);
    t.equal(sha256Hex(await readFile(getOut)), sha256Hex(body), 'presigned GET returns the bytes curl uploaded');

    // The URL is for GET: a PUT with it does not verify.
    const wrong = await curl(getUrl, join(work, `presign-wrong-${name}.out`), ['-T', file], tr.caFile);
    t.equal(wrong.status, 403, 'a presigned GET URL used for PUT -> 403');
    t.match(wrong.body, /<Code>SignatureDoesNotMatch<\/Code>/, 'SignatureDoesNotMatch');
  });
}

t.test('delete_objects of 1000 keys (CRC32, no Content-MD5), nothing left', async (t) => {
  const bucket = 'boto3-batch';
  const prefix = 'batch/';
  // Keys that must survive XML both ways: & < > " ', spaces, unicode, '+', '%'.
  const special = ['a&b', '<tag>', 'quote"s', "apo'strophe", 'sp ace', 'ünï/文件', 'plus+', '100%', 'x/y/z'];
  const keys = s3Sorted(Array.from({ length: 1000 }, (_, i) => `${prefix}${String(i).padStart(4, '0')}-${special[i % special.length] ?? ''}`));
  // Created with our raw client, 32 at a time.
  let next = 0;
  const failures: string[] = [];
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      for (;;) {
        const i = next++;
        const key = keys[i];
        if (key === undefined) return;
        const res = await root.putObject(bucket, key, Buffer.from(key));
        if (res.status !== 200) failures.push(`${key}: ${res.status}`);
      }
    }),
  );
  t.same(failures, [], '1000 PUTs succeeded');
  t.same(await root.listAllKeys(bucket, { prefix }), keys, '1000 objects listed before the delete');

  const keysFile = join(work, 'keys.json');
  await writeFile(keysFile, JSON.stringify(keys));
  const { r, out } = await python('delete-objects', http, ['--bucket', bucket, '--prefix', prefix, '--keys-file', keysFile]);
  pyOk(t, r, 'delete-objects');
  t.equal(out['deleteError'], undefined, `delete_objects raised nothing: ${JSON.stringify(out['deleteError'])}`);
  t.same(s3Sorted(asArray(out['deleted']).map(String)), keys, 'Deleted lists all 1000 keys, each exactly as sent');
  t.same(out['errors'], [], 'no per-key Errors');
  t.equal(out['remainingKeyCount'], 0, 'list_objects_v2 after the delete: KeyCount 0');
  t.same(await root.listAllKeys(bucket, { prefix }), [], 'raw ListObjectsV2: nothing left');
  t.same(asRecord(out['quiet']), { deleted: [], errors: [] }, 'Quiet mode (an already-deleted and a never-existing key): no Deleted, no Errors');

  const wire = asArray(asRecord(out['wire'])['DeleteObjects']).map(asRecord);
  t.equal(wire.length, 2, 'two DeleteObjects requests');
  for (const w of wire) {
    t.equal(w['content-md5'], undefined, 'botocore sent no Content-MD5');
    t.type(w['x-amz-checksum-crc32'], 'string', 'botocore sent x-amz-checksum-crc32');
  }
});

t.test('CORS: put_bucket_cors, preflights and real requests by curl, delete_bucket_cors', async (t) => {
  const bucket = 'boto3-cors';
  const key = 'cors/object.txt';
  const body = Buffer.from('cors body\n');
  const put = await root.putObject(bucket, key, body);
  t.equal(put.status, 200, 'object for the CORS checks');
  const noCorsPut = await root.putObject('boto3-nocors', key, body);
  t.equal(noCorsPut.status, 200, 'object in a bucket without CORS');

  const { r, out } = await python('cors-put', http, ['--bucket', bucket]);
  pyOk(t, r, 'cors-put');
  t.equal(out['put'], 'ok', `put_bucket_cors: ${JSON.stringify(out['put'])}`);
  t.same(out['rules'], out['expected'], 'get_bucket_cors returns the rules as put');

  const objectUrl = `${server.url}/${bucket}/cors/object.txt`;
  const preflight = (origin: string, method: string, headers?: string, url = objectUrl) =>
    curl(url, join(work, `preflight-${randomBytes(4).toString('hex')}`), [
      '-X', 'OPTIONS', '-H', `Origin: ${origin}`, '-H', `Access-Control-Request-Method: ${method}`,
      ...(headers ? ['-H', `Access-Control-Request-Headers: ${headers}`] : []),
    ]);

  const allowed = await preflight('https://app.example', 'PUT', 'content-type,x-amz-date');
  t.equal(allowed.status, 200, `allowed preflight -> 200 ${allowed.body}`);
  t.equal(allowed.headers['access-control-allow-origin'], 'https://app.example', 'Access-Control-Allow-Origin is the origin');
  t.match(allowed.headers['access-control-allow-methods'] ?? '', /\bPUT\b/, 'Access-Control-Allow-Methods includes PUT');
  const allowHeaders = (allowed.headers['access-control-allow-headers'] ?? '').toLowerCase();
  t.ok(allowHeaders.includes('content-type') && allowHeaders.includes('x-amz-date'), `Access-Control-Allow-Headers echoes the requested headers: ${allowHeaders}`);
  t.equal(allowed.headers['access-control-max-age'], '600', 'Access-Control-Max-Age');
  t.match(allowed.headers['access-control-expose-headers'] ?? '', /\bETag\b/i, 'Access-Control-Expose-Headers carries ETag');

  const badOrigin = await preflight('https://evil.example', 'PUT');
  t.equal(badOrigin.status, 403, 'preflight from an origin no rule allows -> 403');
  t.equal(badOrigin.headers['access-control-allow-origin'], undefined, 'no Access-Control-Allow-Origin for it');
  const badMethod = await preflight('https://app.example', 'DELETE');
  t.equal(badMethod.status, 403, 'preflight for a method no rule allows -> 403');
  const noCors = await preflight('https://app.example', 'GET', undefined, `${server.url}/boto3-nocors/cors/object.txt`);
  t.equal(noCors.status, 403, 'preflight on a bucket without CORS configuration -> 403');

  // Real requests with an Origin header, signed by presigned URLs from boto3.
  const urls = await python('presign', http, ['--bucket', bucket, '--key', key]);
  pyOk(t, urls.r, 'presign for the CORS requests');
  const getOut = join(work, 'cors-get.txt');
  const get = await curl(String(urls.out['get']), getOut, ['-H', 'Origin: https://app.example']);
  t.equal(get.status, 200, 'GET with an allowed Origin -> 200');
  t.equal(await readFile(getOut, 'utf8').catch(() => ''), body.toString(), 'GET body');
  t.equal(get.headers['access-control-allow-origin'], 'https://app.example', 'GET: Access-Control-Allow-Origin');
  t.match(get.headers['access-control-expose-headers'] ?? '', /\bETag\b/i, 'GET: ETag in Access-Control-Expose-Headers');
  t.equal(get.headers['etag'], `"${md5Hex(body)}"`, 'GET: the ETag itself');

  const evilGet = await curl(String(urls.out['get']), join(work, 'cors-evil.txt'), ['-H', 'Origin: https://evil.example']);
  t.equal(evilGet.status, 200, 'GET with a foreign Origin is still served (CORS is enforced by the browser)');
  t.equal(evilGet.headers['access-control-allow-origin'], undefined, 'but without Access-Control-Allow-Origin');

  const newBody = randomBytes(1000);
  const putFile = join(work, 'cors-put.bin');
  await writeFile(putFile, newBody);
  const corsPut = await curl(String(urls.out['put']), join(work, 'cors-put.out'), ['-T', putFile, '-H', 'Origin: https://app.example']);
  t.equal(corsPut.status, 200, `PUT with an allowed Origin -> 200 ${corsPut.body}`);
  t.equal(corsPut.headers['access-control-allow-origin'], 'https://app.example', 'PUT: Access-Control-Allow-Origin');
  t.match(corsPut.headers['access-control-expose-headers'] ?? '', /\bETag\b/i, 'PUT: ETag exposed (browser multipart reads it)');
  t.equal(corsPut.headers['etag'], `"${md5Hex(newBody)}"`, 'PUT: ETag');

  const del = await python('cors-delete', http, ['--bucket', bucket]);
  pyOk(t, del.r, 'cors-delete');
  t.equal(del.out['delete'], 'ok', `delete_bucket_cors: ${JSON.stringify(del.out['delete'])}`);
  t.same(asRecord(del.out['getAfter'])['code'], 'NoSuchCORSConfiguration', 'get_bucket_cors after delete -> NoSuchCORSConfiguration');
  t.equal(asRecord(del.out['getAfter'])['status'], 404, '... 404');
  const after = await preflight('https://app.example', 'PUT');
  t.equal(after.status, 403, 'the same preflight after delete_bucket_cors -> 403');
});
