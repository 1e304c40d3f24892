// One JSON log line per S3 request (issue 19): the real server over a socket, its captured output
// read back. Each request's line is found by the x-amz-request-id the client saw; no line anywhere
// may carry a secret key or a signature.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { startServer, createAccountKey, createBucketKey } from '../helpers/server.js';
import { RawS3, errorCode, randomData } from '../helpers/s3-client.js';
import type { RawResponse } from '../helpers/raw-http.js';
import type { Credentials } from '../helpers/signer.js';

const server = await startServer();
t.teardown(() => server.stop());

const BUCKET = 'log-bucket';
await server.admin(['users', 'create', 'alice']);
await server.admin(['buckets', 'create', BUCKET, '--user', 'alice']);
const alice = await createAccountKey(server, 'alice');
const readOnly = await createBucketKey(server, BUCKET, 'read');
const s3 = new RawS3({ url: server.url }, alice);

/** Signature values the clients sent: none may reach the log. */
const signatures: string[] = [];
/** Requests sent to the S3 surface: each must have its one line. */
let s3Requests = 0;

type Line = Record<string, unknown>;
// The type of a subtest's `t` (the last overload of t.test takes just the callback).
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

function lines(output = server.output()): Line[] {
  const out: Line[] = [];
  for (const raw of output.split('\n')) {
    if (!raw.startsWith('{')) continue;
    try {
      out.push(JSON.parse(raw) as Line);
    } catch {
      /* a partial line at the end of the capture */
    }
  }
  return out;
}

/** The request lines of `requestId`, once at least one is there (the line is written after the response). */
async function linesOf(requestId: string): Promise<Line[]> {
  for (let i = 0; i < 100; i++) {
    const found = lines().filter((l) => l['requestId'] === requestId);
    if (found.length > 0) {
      // A second line would come with the first or right after it: give it the chance to show.
      return lines(await server.loggedOutput()).filter((l) => l['requestId'] === requestId);
    }
    await sleep(50);
  }
  return [];
}

/** Signs and sends like RawS3.send, keeping the signature that went out. */
async function send(opts: { method: string; key?: string; query?: Record<string, string>; body?: Buffer; credentials?: Credentials }): Promise<RawResponse> {
  const body = opts.body;
  const signed = await s3.sign({ method: opts.method, bucket: BUCKET, key: opts.key, query: opts.query, credentials: opts.credentials, payloadHash: 'UNSIGNED-PAYLOAD' });
  const auth = signed.headers.find(([k]) => k.toLowerCase() === 'authorization')?.[1] ?? '';
  const sig = /Signature=([0-9a-f]+)/.exec(auth)?.[1];
  if (sig) signatures.push(sig);
  const headers = [...signed.headers];
  if (body !== undefined) headers.push(['content-length', String(body.length)]);
  s3Requests++;
  return s3.raw(opts.method, signed.target, headers, body);
}

async function oneLine(t: TapTest, res: RawResponse): Promise<Line> {
  const requestId = res.headers['x-amz-request-id'];
  t.ok(requestId, 'the response has a request id');
  const found = await linesOf(requestId ?? '');
  t.equal(found.length, 1, `exactly one line for request ${requestId}`);
  const line = found[0] ?? {};
  t.equal(line['surface'], 's3');
  t.equal(line['msg'], 's3 request');
  t.equal(line['clientIp'], '127.0.0.1');
  t.equal(line['clientGone'], false);
  t.type(line['durationMs'], 'number');
  t.ok((line['durationMs'] as number) >= 0, 'a duration');
  for (const name of ['authorization', 'headers', 'query', 'url']) t.notOk(name in line, `no ${name} field`);
  return line;
}

const body = randomData(3000);

t.test('PutObject: the bytes read, the key id, info level', async (t) => {
  const res = await send({ method: 'PUT', key: 'dir/put.bin', body });
  t.equal(res.status, 200);
  const line = await oneLine(t, res);
  t.match(line, { level: 30, operation: 'PutObject', method: 'PUT', bucket: BUCKET, key: 'dir/put.bin', accessKeyId: alice.accessKeyId, status: 200, errorCode: null, bytesIn: body.length, bytesOut: 0 });
});

t.test('GetObject: the bytes written', async (t) => {
  const res = await send({ method: 'GET', key: 'dir/put.bin' });
  t.equal(res.status, 200);
  t.equal(res.body.length, body.length);
  const line = await oneLine(t, res);
  t.match(line, { level: 30, operation: 'GetObject', method: 'GET', key: 'dir/put.bin', accessKeyId: alice.accessKeyId, status: 200, errorCode: null, bytesIn: 0, bytesOut: body.length });
});

t.test('NoSuchKey', async (t) => {
  const res = await send({ method: 'GET', key: 'missing' });
  t.equal(errorCode(res), 'NoSuchKey');
  const line = await oneLine(t, res);
  t.match(line, { operation: 'GetObject', status: 404, errorCode: 'NoSuchKey', accessKeyId: alice.accessKeyId, bytesOut: res.body.length });
});

t.test('AccessDenied: a read-only key writing; its body is still read (drained)', async (t) => {
  const res = await send({ method: 'PUT', key: 'denied.bin', body, credentials: readOnly });
  t.equal(errorCode(res), 'AccessDenied');
  const line = await oneLine(t, res);
  t.match(line, { operation: 'PutObject', status: 403, errorCode: 'AccessDenied', accessKeyId: readOnly.accessKeyId, bucket: BUCKET, key: 'denied.bin', bytesIn: body.length });
});

t.test('SignatureDoesNotMatch: the key id the client claimed, never a secret', async (t) => {
  const wrong = { accessKeyId: alice.accessKeyId, secretAccessKey: `${alice.secretAccessKey}x` };
  const res = await send({ method: 'GET', key: 'dir/put.bin', credentials: wrong });
  t.equal(errorCode(res), 'SignatureDoesNotMatch');
  const line = await oneLine(t, res);
  t.match(line, { operation: 'GetObject', status: 403, errorCode: 'SignatureDoesNotMatch', accessKeyId: alice.accessKeyId });
  t.notMatch(server.output(), wrong.secretAccessKey, 'the wrong secret is not logged');
});

t.test('a request that fails in routing has a null operation', async (t) => {
  // A subresource known but not served: 501 from the router, before the signature is checked.
  const res = await send({ method: 'GET', query: { website: '' } });
  t.equal(errorCode(res), 'NotImplemented');
  const line = await oneLine(t, res);
  t.match(line, { level: 40, operation: null, bucket: BUCKET, key: null, status: 501, errorCode: 'NotImplemented', accessKeyId: null });
});

t.test('a presigned GET: its signature and credential stay out of the log', async (t) => {
  const presigned = await s3.presignedTarget({ method: 'GET', bucket: BUCKET, key: 'dir/put.bin', expiresIn: 300 });
  const query = new URL(presigned.target, server.url).searchParams;
  const sig = query.get('X-Amz-Signature');
  t.ok(sig, 'a signature in the URL');
  signatures.push(sig ?? '');
  s3Requests++;
  const res = await s3.raw('GET', presigned.target, presigned.headers);
  t.equal(res.status, 200);
  const line = await oneLine(t, res);
  t.match(line, { operation: 'GetObject', status: 200, accessKeyId: alice.accessKeyId, bytesOut: body.length });
  t.notMatch(server.output(), query.get('X-Amz-Credential') ?? 'no credential', 'no X-Amz-Credential value');
});

t.test('the management API: one line of its own per request, under the x-request-id it answers with', async (t) => {
  const refused = await fetch(`${server.url}/api/v3/cdn/assets?secret=query-not-logged`, { headers: { authorization: 'Bearer not-a-real-token-value' } });
  t.equal(refused.status, 401);
  await refused.arrayBuffer();
  const id = refused.headers.get('x-request-id') ?? '';
  t.match(id, /^[0-9a-f-]{36}$/, 'a request id');
  const found = await linesOf(id);
  t.equal(found.length, 1, 'exactly one line');
  t.match(found[0], { level: 30, msg: 'api request', surface: 'api', method: 'GET', route: '/api/v3/cdn/assets', path: '/api/v3/cdn/assets', status: 401, errorCode: 'unauthorized', userId: null, clientIp: '127.0.0.1' });
  t.notOk(lines().some((l) => l['msg'] === 'incoming request' || l['msg'] === 'request completed'), "no fastify request lines");
  const output = server.output();
  t.notOk(output.includes('query-not-logged'), 'no query string');
  t.notOk(output.includes('not-a-real-token-value'), 'no bearer token');
});

t.test('one line per S3 request, and no secret or signature anywhere', async (t) => {
  const s3Lines = lines(await server.loggedOutput()).filter((l) => l['surface'] === 's3');
  t.equal(s3Lines.length, s3Requests, 'as many S3 lines as S3 requests');
  const output = server.output();
  for (const secret of [alice.secretAccessKey, readOnly.secretAccessKey, server.rootKey.secretAccessKey]) t.notOk(output.includes(secret), 'no secret key');
  t.ok(signatures.length >= s3Requests, 'every signature was collected');
  for (const sig of signatures) t.notOk(output.includes(sig), `signature ${sig.slice(0, 8)}... is not logged`);
  t.notMatch(output, /AWS4-HMAC-SHA256 Credential|X-Amz-Signature/i, 'no Authorization header or presigned query');
});
