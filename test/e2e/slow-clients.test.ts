// Slow and ambiguous clients on every door, over raw sockets (docs/COMPATIBILITY.md "Slow clients").
// The server runs with 2-second limits so the test stays short; the defaults are 20 s.
//  - bodies that drip (a few bytes a second) or stall are answered 400 RequestTimeout (S3 XML, API
//    JSON) with Connection: close, side by side, and leave no object, asset or staged file;
//  - a body that drips after its door has answered (an API 401, a CDN 200 on either port) is cut
//    within the limit: the socket is closed, and nothing is answered twice;
//  - headers that never finish are cut;
//  - two Authorization or two Host headers are 400 on the S3 port, the API and the CDN listener.
import t, { type Test } from 'tap';
import { connect, type Socket } from 'node:net';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { apiUser, query, ResponseRecorder } from '../helpers/api.js';
import { CdnClient } from '../helpers/cdn.js';
import { RawS3 } from '../helpers/s3-client.js';
import { rawRequest } from '../helpers/raw-http.js';
import { startServer } from '../helpers/server.js';
import { UNSIGNED_PAYLOAD } from '../helpers/signer.js';

const server = await startServer({ env: { S3EDGE_LIMITS_BODY_TIMEOUT_SECONDS: '2', S3EDGE_LIMITS_HEADERS_TIMEOUT_SECONDS: '2' } });
t.teardown(() => server.stop());
const s3 = new RawS3({ url: server.url }, server.rootKey);
const BUCKET = 'slow';
t.equal((await s3.createBucket(BUCKET)).status, 200);
const { port } = new URL(server.url);

interface Dripped {
  /** Everything the server sent back. */
  answer: string;
  /** Body bytes we had sent when the server closed the connection. */
  sent: number;
  /** Milliseconds from the first byte sent to the first byte of the answer, and to the close. */
  answeredAfterMs: number | undefined;
  closedAfterMs: number;
}

/**
 * Sends `head` at once, then `body` a few bytes at a time every `everyMs` (none at all: `stallAfter`
 * bytes, then nothing), until the server closes the connection. A safety net ends it after 30 s.
 */
function drip(head: string, body: Buffer, opts: { everyMs: number; bytesPerTick?: number; stallAfter?: number; port?: string }): Promise<Dripped> {
  return new Promise((resolve) => {
    const socket: Socket = connect(Number(opts.port ?? port), '127.0.0.1');
    socket.setNoDelay(true);
    const chunks: Buffer[] = [];
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const started = Date.now();
    let answeredAfterMs: number | undefined;
    const done = (): void => {
      clearInterval(timer);
      clearTimeout(safety);
      resolve({ answer: Buffer.concat(chunks).toString('latin1'), sent, answeredAfterMs, closedAfterMs: Date.now() - started });
    };
    const safety = setTimeout(() => socket.destroy(), 30_000);
    socket.on('data', (d: Buffer) => {
      answeredAfterMs ??= Date.now() - started;
      chunks.push(d);
    });
    socket.on('close', done);
    socket.on('error', () => undefined);
    socket.write(head, 'latin1', () => {
      timer = setInterval(() => {
        if (opts.stallAfter !== undefined && sent >= opts.stallAfter) return;
        const n = Math.min(opts.bytesPerTick ?? 1, body.length - sent);
        if (n <= 0 || socket.destroyed) return;
        socket.write(body.subarray(sent, sent + n));
        sent += n;
      }, opts.everyMs);
    });
  });
}

function statusOf(answer: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
}

async function signedPutHead(key: string, length: number): Promise<string> {
  const signed = await s3.sign({ method: 'PUT', bucket: BUCKET, key, payloadHash: UNSIGNED_PAYLOAD });
  const lines = [`PUT ${signed.target} HTTP/1.1`, ...signed.headers.map(([k, v]) => `${k}: ${v}`), `content-length: ${length}`];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function stagedFiles(): string[] {
  return readdirSync(join(server.dataDir, 'storage', 'tmp'));
}

function assertTimedOut(t: Test, r: Dripped, declared: number, what: string, body: RegExp): void {
  t.equal(statusOf(r.answer), 400, `${what}: 400`);
  t.match(r.answer, /\r\nconnection: close\r\n/i, `${what}: Connection: close`);
  t.match(r.answer, body, `${what}: says why`);
  t.ok(r.sent < declared, `${what}: cut before the body was complete (${r.sent} of ${declared} bytes)`);
}

t.test('S3 bodies that drip or stall: 400 RequestTimeout, closed, nothing stored', async (t) => {
  const declared = 4096;
  const body = Buffer.alloc(declared, 0x61);
  const drippers = await Promise.all([
    ...Array.from({ length: 4 }, async (_, i) => drip(await signedPutHead(`drip-${i}`, declared), body, { everyMs: 200 })),
    (async () => drip(await signedPutHead('stalled', declared), body, { everyMs: 10, bytesPerTick: 512, stallAfter: 2048 }))(),
  ]);
  for (const [i, r] of drippers.entries()) {
    assertTimedOut(t, r, declared, i < 4 ? `dripper ${i}` : 'stalled body', /<Code>RequestTimeout<\/Code>/);
  }
  const list = await s3.listObjectsV2(BUCKET);
  t.same(list.list.keys, [], 'no object was stored');
  t.same(stagedFiles(), [], 'no staged bytes left');
  t.equal((await s3.putObject(BUCKET, 'fast', Buffer.alloc(1 << 20, 1))).status, 200, 'a body at a normal pace is stored');
});

t.test('an API upload that drips: 400 request_timeout JSON, no asset', async (t) => {
  const alice = await apiUser(server, ['assets:read', 'assets:write']);
  const boundary = 'drip-boundary';
  const form = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\nContent-Type: application/octet-stream\r\n\r\n${'x'.repeat(3000)}\r\n--${boundary}--\r\n`,
  );
  const head = [
    'POST /api/v3/cdn/assets HTTP/1.1', `Host: 127.0.0.1:${port}`, `Authorization: Bearer ${alice.token}`,
    `Content-Type: multipart/form-data; boundary=${boundary}`, `Content-Length: ${form.length}`,
  ].join('\r\n');
  const r = await drip(`${head}\r\n\r\n`, form, { everyMs: 100, bytesPerTick: 2 });
  assertTimedOut(t, r, form.length, 'API upload', /"code":"request_timeout"/);
  t.match(r.answer, /"success":false/);
  t.same(query(server, 'SELECT id FROM assets'), [], 'no asset row');
  t.same(stagedFiles(), [], 'no staged bytes left');
});

t.test('a body that drips while an early error drains it: one answer, and the server carries on', async (t) => {
  // A 1 s window: the guard fires while the error's drain (up to 2 s) still waits for the body.
  const quick = await startServer({ env: { S3EDGE_LIMITS_BODY_TIMEOUT_SECONDS: '1' } });
  t.teardown(() => quick.stop());
  const quickPort = new URL(quick.url).port;
  const head = [`PUT /${BUCKET}/refused HTTP/1.1`, `Host: 127.0.0.1:${quickPort}`, 'Authorization: AWS4-HMAC-SHA256 garbage', 'Content-Length: 4096'].join('\r\n');
  const results = await Promise.all(Array.from({ length: 3 }, () => drip(`${head}\r\n\r\n`, Buffer.alloc(4096, 0x62), { everyMs: 150, port: quickPort })));
  for (const r of results) {
    t.ok([400, 403].includes(statusOf(r.answer)), `answered ${statusOf(r.answer)}`);
    t.equal(r.answer.split('HTTP/1.1 ').length - 1, 1, 'exactly one answer');
  }
  const after = await rawRequest({ url: quick.url }, { method: 'GET', target: '/', headers: [['Host', new URL(quick.url).host]] });
  t.ok(after.status > 0 && after.status < 500, 'the server still answers');
  t.notMatch(quick.output(), /ERR_HTTP_HEADERS_SENT|"level":50/, 'no error logged');
});

t.test('a body that drips after its door answered is cut within the limit', async (t) => {
  // The server's window is 2 s: Node would otherwise read the rest of such a body, to keep the
  // connection alive, for as long as it drips (one byte every 200 ms here: 200 s for 1000 bytes).
  const alice = await apiUser(server, ['assets:read', 'assets:write']);
  const asset = await alice.client.upload({ file: Buffer.from('hello, cdn\n'), fileName: 'hello.txt', contentType: 'text/plain' });
  const cdn = new CdnClient(server, new ResponseRecorder());
  const assetTarget = cdn.targetOf(asset.publicUrl);
  const cdnPort = new URL(server.cdnUrl).port;
  const declared = 1000;
  const head = (lines: string[]): string => `${[...lines, `Content-Length: ${declared}`].join('\r\n')}\r\n\r\n`;
  const cases = [
    { name: 'API door, early 401', status: 401, port, head: head(['POST /api/v3/cdn/assets HTTP/1.1', `Host: 127.0.0.1:${port}`, 'Content-Type: application/octet-stream']) },
    { name: 'CDN listener, 200', status: 200, port: cdnPort, head: head([`GET ${assetTarget} HTTP/1.1`, `Host: ${cdn.host}`]) },
    { name: 'S3 port with the CDN Host, 200', status: 200, port, head: head([`GET ${assetTarget} HTTP/1.1`, `Host: ${cdn.host}`]) },
  ];
  const results = await Promise.all(cases.map((c) => drip(c.head, Buffer.alloc(declared, 0x63), { everyMs: 200, port: c.port })));
  for (const [i, r] of results.entries()) {
    const c = cases[i] as (typeof cases)[number];
    t.equal(statusOf(r.answer), c.status, `${c.name}: answered ${c.status} first`);
    t.equal(r.answer.split('HTTP/1.1 ').length - 1, 1, `${c.name}: exactly one answer`);
    t.ok(r.answeredAfterMs !== undefined && r.answeredAfterMs < 1500, `${c.name}: the answer came before the body (${r.answeredAfterMs} ms)`);
    // One window plus the guard's sampling (a quarter window) and slack for a loaded machine.
    t.ok(r.closedAfterMs < 6000, `${c.name}: connection closed after ${r.closedAfterMs} ms (limit 2 s)`);
    t.ok(r.sent < declared, `${c.name}: cut while the body still dripped (${r.sent} of ${declared} bytes)`);
  }
  t.notMatch(server.output(), /ERR_HTTP_HEADERS_SENT|"level":50/, 'no error logged');
  // A body sent at a normal pace after an early answer keeps its connection (keep-alive) for the next request.
  const body = Buffer.alloc(64 * 1024, 0x64);
  const again = await new Promise<string>((resolve) => {
    const socket = connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (Buffer.concat(chunks).toString('latin1').split('HTTP/1.1 ').length - 1 === 2) socket.end();
    });
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', () => undefined);
    socket.write(`POST /api/v3/cdn/assets HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: ${body.length}\r\n\r\n`);
    setTimeout(() => socket.write(body, () => socket.write(`GET /api/v3/cdn/assets HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)), 100);
    setTimeout(() => socket.destroy(), 10_000).unref();
  });
  t.same([...again.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]), ['401', '401'], 'a refused upload sent in full: the connection carries the next request');
});

t.test('headers that never finish are cut', async (t) => {
  const r = await drip(`GET /${BUCKET} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `, Buffer.alloc(1000, 0x61), { everyMs: 200 });
  t.ok(r.sent < 1000, `the connection was closed while the headers dripped (${r.sent} bytes of a header sent)`);
  t.notMatch(r.answer, /^HTTP\/1\.1 200/, 'never served');
});

t.test('two Authorization or two Host headers: 400 on every door', async (t) => {
  const signed = await s3.sign({ method: 'GET', bucket: BUCKET, payloadHash: UNSIGNED_PAYLOAD });
  const auth = signed.headers.find(([k]) => k.toLowerCase() === 'authorization')?.[1] ?? '';
  const others = signed.headers.filter(([k]) => k.toLowerCase() !== 'authorization');
  const doors = [
    { name: 'S3', url: server.url, target: signed.target, pattern: /<Code>InvalidRequest<\/Code><Message>The request carries more than one (Authorization|Host) header/ },
    { name: 'API', url: server.url, target: '/api/v3/cdn/summary', pattern: /"success":false.*"code":"invalid_request"/ },
    { name: 'CDN', url: server.cdnUrl, target: '/some/asset.png', pattern: /more than one (Authorization|Host) header/ },
  ];
  for (const door of doors) {
    const twoAuth = await rawRequest({ url: door.url }, { method: 'GET', target: door.target, headers: [...others, ['Authorization', auth], ['authorization', 'AWS4-HMAC-SHA256 Credential=other']] });
    t.equal(twoAuth.status, 400, `${door.name}: two Authorization headers`);
    t.match(twoAuth.text, door.pattern, `${door.name}: says which`);
    const twoHost = await rawRequest({ url: door.url }, { method: 'GET', target: door.target, headers: [['Host', new URL(door.url).host], ['Host', 'evil.example'], ['Authorization', auth]] });
    t.equal(twoHost.status, 400, `${door.name}: two Host headers`);
    t.match(twoHost.text, door.pattern);
  }
  t.equal((await s3.listObjectsV2(BUCKET)).res.status, 200, 'one of each is fine');
});
