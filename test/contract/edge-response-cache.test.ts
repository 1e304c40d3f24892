// The edge proxy's response cache (src/edge/response-cache.ts) against a real origin: an http server
// on loopback, reached with undici like the proxy does, and the real edge cache tiers in a temp
// directory, with an injected clock. Each test plays the handler: lookup, else forward and store.
import t, { type Test } from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import type { CacheStatus } from '../../src/db/repos/request-records.js';
import { CdnCache } from '../../src/cdn/cdn-cache.js';
import { proxyCacheOwner } from '../../src/db/repos/hostname-model.js';
import { ProxyResponseCache } from '../../src/edge/response-cache.js';
import { tempDir } from '../helpers/temp-data.js';

const HOST = 'www.example.test';
const KiB = 1024;
const LAST_MODIFIED = 'Sun, 01 Mar 2026 10:00:00 GMT';

type Route = (req: IncomingMessage, res: ServerResponse) => void;

class Origin {
  readonly routes = new Map<string, Route>();
  /** Requests seen, by request target. */
  readonly seen = new Map<string, number>();
  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    readonly url: string,
  ) {}

  static async start(t: Test): Promise<Origin> {
    let origin: Origin | undefined;
    const server = createServer((req, res) => {
      const target = req.url ?? '';
      origin?.seen.set(target, (origin.seen.get(target) ?? 0) + 1);
      const route = origin?.routes.get(target.split('?')[0] ?? '');
      if (route) route(req, res);
      else res.writeHead(404, { 'content-length': '0' }).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = new Origin(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    t.teardown(() => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    });
    return origin;
  }

  count(target: string): number {
    return this.seen.get(target) ?? 0;
  }

  /** A fixed answer: `body` with these headers (Content-Length added). */
  answer(path: string, body: string | Buffer, headers: Record<string, string | string[]>, status = 200): void {
    this.routes.set(path, (_req, res) => {
      res.writeHead(status, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
      res.end(body);
    });
  }
}

interface Setup {
  origin: Origin;
  edge: CdnCache;
  cache: ProxyResponseCache;
  clock: { now: number; wallJump: number };
  agent: Agent;
}

async function setup(t: Test, sizes: { memoryEntryMaxBytes?: number; diskBytes?: number } = {}): Promise<Setup> {
  const clock = { now: Date.UTC(2026, 2, 1, 12, 0, 0), wallJump: 0 };
  const edge = await CdnCache.open({
    dir: join(tempDir(t), 'cdn-cache'),
    memoryBytes: 1 << 20,
    memoryEntryMaxBytes: sizes.memoryEntryMaxBytes ?? 64 * KiB,
    diskBytes: sizes.diskBytes ?? 16 << 20,
    now: () => clock.now,
    log: { warn: () => undefined },
  });
  t.teardown(() => edge.close());
  const agent = new Agent();
  t.teardown(() => agent.close());
  const origin = await Origin.start(t);
  // clock.now moves both clocks; wallJump steps the wall clock alone (as NTP or `date -s` would).
  return { origin, edge, cache: new ProxyResponseCache(edge, { maxEntries: 1000, now: () => clock.now + clock.wallJump, elapsed: () => clock.now }), clock, agent };
}

async function bytesOf(body: Buffer | Readable | null): Promise<Buffer> {
  if (body === null) return Buffer.alloc(0);
  if (Buffer.isBuffer(body)) return body;
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

interface Got {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** null: the origin's answer went to the client uncached. */
  cacheStatus: CacheStatus | null;
}

/** What the proxy handler does with the cache: look up, else forward and offer the answer. */
async function get(s: Setup, target: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Got> {
  const req = { method, url: target, headers };
  const hit = await s.cache.lookup(HOST, req);
  if (hit) return { status: hit.status, headers: hit.headers, body: await bytesOf(hit.body), cacheStatus: hit.cacheStatus };
  const res = await request(s.origin.url + target, { method: method as 'GET' | 'HEAD', headers, dispatcher: s.agent });
  const stored = await s.cache.store(HOST, req, res.statusCode, res.headers, res.body);
  if (stored) return { status: stored.status, headers: stored.headers, body: await bytesOf(stored.body), cacheStatus: stored.cacheStatus };
  return { status: res.statusCode, headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()), cacheStatus: null };
}

t.test('a miss is stored, then hits; the origin sees one request per target', async (t) => {
  const s = await setup(t);
  s.origin.answer('/page', 'hello', { 'content-type': 'text/plain', 'cache-control': 'max-age=60', etag: '"v1"', 'last-modified': LAST_MODIFIED, 'x-origin': 'yes' });
  const miss = await get(s, '/page?a=1');
  t.match(miss, { status: 200, cacheStatus: 'MISS', headers: { 'content-type': 'text/plain', 'x-origin': 'yes', age: '0' } });
  t.equal(miss.body.toString(), 'hello');
  s.clock.now += 3000;
  const hit = await get(s, '/page?a=1');
  t.match(hit, { status: 200, cacheStatus: 'HIT', headers: { 'content-type': 'text/plain', etag: '"v1"', 'content-length': '5', age: '3' } });
  t.equal(hit.body.toString(), 'hello');
  t.equal(s.origin.count('/page?a=1'), 1, 'the origin answered once');

  const head = await get(s, '/page?a=1', {}, 'HEAD');
  t.match(head, { status: 200, cacheStatus: 'HIT', headers: { 'content-length': '5' } });
  t.equal(head.body.length, 0, 'HEAD: headers only');
  await get(s, '/page?a=2');
  t.equal(s.origin.count('/page?a=2'), 1, 'another query string is another entry');
  t.equal((await get(s, '/page?a=2')).cacheStatus, 'HIT');
  t.equal(s.cache.size, 2);
});

t.test('Vary: Accept-Encoding keeps each variant apart', async (t) => {
  const s = await setup(t);
  s.origin.routes.set('/v', (req, res) => {
    const body = `variant for ${String(req.headers['accept-encoding'] ?? 'none')}`;
    res.writeHead(200, { 'cache-control': 'max-age=60', vary: 'Accept-Encoding', 'content-length': String(body.length) });
    res.end(body);
  });
  t.equal((await get(s, '/v', { 'accept-encoding': 'gzip, br' })).body.toString(), 'variant for gzip, br');
  t.equal((await get(s, '/v', { 'accept-encoding': 'identity' })).body.toString(), 'variant for identity');
  t.equal((await get(s, '/v')).body.toString(), 'variant for none');
  t.equal(s.origin.count('/v'), 3, 'three variants, three origin requests');
  const again = await get(s, '/v', { 'accept-encoding': 'gzip,br' });
  t.match(again, { cacheStatus: 'HIT' }, 'spaces after commas do not make another variant');
  t.equal(again.body.toString(), 'variant for gzip, br');
  t.equal((await get(s, '/v', { 'accept-encoding': 'identity' })).body.toString(), 'variant for identity');
  t.equal((await get(s, '/v')).body.toString(), 'variant for none');
  t.equal(s.origin.count('/v'), 3, 'each served from its own entry');
});

t.test('max-age expires by the injected clock; s-maxage wins over max-age', async (t) => {
  const s = await setup(t);
  s.origin.answer('/short', 'short', { 'cache-control': 'max-age=10' });
  s.origin.answer('/shared', 'shared', { 'cache-control': 'max-age=5, s-maxage=100' });
  await get(s, '/short');
  await get(s, '/shared');
  s.clock.now += 9_000;
  t.match(await get(s, '/short'), { cacheStatus: 'HIT', headers: { age: '9' } });
  s.clock.now += 1_000;
  t.match(await get(s, '/short'), { cacheStatus: 'EXPIRED', headers: { age: '0' } }, 'at its max-age: stale, fetched and stored again');
  t.equal(s.origin.count('/short'), 2);
  t.match(await get(s, '/shared'), { cacheStatus: 'HIT', headers: { age: '10' } }, 'past max-age, within s-maxage');
  s.clock.now += 90_000;
  t.match(await get(s, '/shared'), { cacheStatus: 'EXPIRED' }, 'then past s-maxage');
  t.equal(s.origin.count('/shared'), 2);
});

t.test('a wall-clock step of an hour neither keeps a stored answer fresh longer nor expires it: its age is time held', async (t) => {
  const s = await setup(t);
  s.origin.answer('/held', 'held', { 'cache-control': 'max-age=10' });
  await get(s, '/held');
  s.clock.wallJump = -3600_000;
  s.clock.now += 4_000;
  t.match(await get(s, '/held'), { cacheStatus: 'HIT', headers: { age: '4' } }, 'an hour back: 4 s old, as held');
  s.clock.wallJump = 3600_000;
  t.match(await get(s, '/held'), { cacheStatus: 'HIT', headers: { age: '4' } }, 'an hour forward: still 4 s old, still fresh');
  s.clock.wallJump = -3600_000;
  s.clock.now += 6_000;
  t.match(await get(s, '/held'), { cacheStatus: 'EXPIRED' }, 'after 10 s held it is stale, whatever the wall clock says');
  t.equal(s.origin.count('/held'), 2);
});

t.test('the origin Age counts against the lifetime; the client can ask for younger', async (t) => {
  const s = await setup(t);
  s.origin.answer('/aged', 'aged', { 'cache-control': 'max-age=60', age: '50' });
  t.match(await get(s, '/aged'), { cacheStatus: 'MISS', headers: { age: '50' } });
  s.clock.now += 5_000;
  t.match(await get(s, '/aged'), { cacheStatus: 'HIT', headers: { age: '55' } });
  t.match(await get(s, '/aged', { 'cache-control': 'max-age=30' }), { cacheStatus: 'EXPIRED' }, 'request max-age: older than the client takes (the answer replaces the stored one)');
  t.match(await get(s, '/aged', { 'cache-control': 'no-cache' }), { cacheStatus: 'EXPIRED' }, 'no-cache goes to the origin');
  t.match(await get(s, '/aged', { pragma: 'no-cache' }), { cacheStatus: 'EXPIRED' }, 'so does Pragma: no-cache');
  t.match(await get(s, '/aged', { 'cache-control': 'no-store' }), { cacheStatus: null }, 'no-store: to the origin, not stored');
  t.equal(s.origin.count('/aged'), 5);
  t.match(await get(s, '/aged'), { cacheStatus: 'HIT', headers: { age: '50' } }, 'the no-cache answers replaced the entry');
});

t.test('private, no-store, no-cache, Set-Cookie, Vary: * and unknown lengths are never stored', async (t) => {
  const s = await setup(t);
  s.origin.answer('/private', 'p', { 'cache-control': 'private, max-age=60' });
  s.origin.answer('/no-store', 'n', { 'cache-control': 'no-store, max-age=60' });
  s.origin.answer('/no-cache', 'c', { 'cache-control': 'no-cache, max-age=60' });
  s.origin.answer('/cookie', 'k', { 'cache-control': 'public, max-age=60', 'set-cookie': ['session=secret'] });
  s.origin.answer('/vary-star', 'v', { 'cache-control': 'max-age=60', vary: '*' });
  s.origin.answer('/no-lifetime', 'l', { 'cache-control': 'public' });
  s.origin.routes.set('/chunked', (_req, res) => {
    res.writeHead(200, { 'cache-control': 'max-age=60' });
    res.write('chun');
    res.end('ked');
  });
  for (const [path, body] of [['/private', 'p'], ['/no-store', 'n'], ['/no-cache', 'c'], ['/cookie', 'k'], ['/vary-star', 'v'], ['/no-lifetime', 'l'], ['/chunked', 'chunked']] as const) {
    const first = await get(s, path);
    t.match(first, { status: 200, cacheStatus: null }, `${path}: not stored`);
    t.equal(first.body.toString(), body, `${path}: the caller still has the whole body`);
    await get(s, path);
    t.equal(s.origin.count(path), 2, `${path}: the origin sees every request`);
  }
  t.equal(s.cache.size, 0);
  t.equal(s.edge.stats().memoryEntries + s.edge.stats().diskEntries, 0, 'no bytes in the tiers');
});

t.test('Authorization: only answers marked public (or s-maxage) are stored and served', async (t) => {
  const s = await setup(t);
  s.origin.answer('/mine', 'mine', { 'cache-control': 'max-age=60' });
  s.origin.answer('/open', 'open', { 'cache-control': 'public, max-age=60' });
  const auth = { authorization: 'Bearer user-a' };
  t.match(await get(s, '/mine', auth), { cacheStatus: null }, 'not stored');
  t.match(await get(s, '/mine', auth), { cacheStatus: null });
  t.equal(s.origin.count('/mine'), 2);
  await get(s, '/mine');
  t.match(await get(s, '/mine'), { cacheStatus: 'HIT' }, 'stored for an anonymous request');
  t.match(await get(s, '/mine', auth), { cacheStatus: null }, 'but never served to an authorised one');
  t.equal(s.origin.count('/mine'), 4);
  t.match(await get(s, '/open', auth), { cacheStatus: 'MISS' });
  t.match(await get(s, '/open', { authorization: 'Bearer user-b' }), { cacheStatus: 'HIT' }, 'public: shared');
});

t.test('conditional requests get a 304 from the cache', async (t) => {
  const s = await setup(t);
  s.origin.answer('/c', 'conditional', { 'content-type': 'text/plain', 'cache-control': 'max-age=60', etag: '"v1"', 'last-modified': LAST_MODIFIED });
  await get(s, '/c');
  const nm = await get(s, '/c', { 'if-none-match': '"v1"' });
  t.match(nm, { status: 304, cacheStatus: 'HIT', headers: { etag: '"v1"', 'cache-control': 'max-age=60', 'last-modified': LAST_MODIFIED, age: '0' } });
  t.equal(nm.headers['content-type'], undefined, 'no body framing on a 304');
  t.equal(nm.body.length, 0);
  t.match(await get(s, '/c', { 'if-none-match': 'W/"v1"' }), { status: 304 }, 'weak comparison');
  t.match(await get(s, '/c', { 'if-modified-since': LAST_MODIFIED }), { status: 304 });
  t.match(await get(s, '/c', { 'if-none-match': '"v0"' }), { status: 200, cacheStatus: 'HIT' }, 'another tag: the body');
  t.equal(s.origin.count('/c'), 1, 'none of them reached the origin');
  t.match(await get(s, '/c', { 'if-match': '"v1"' }), { status: 200, cacheStatus: 'EXPIRED' }, 'If-Match is the origin\'s to answer');
  t.equal(s.origin.count('/c'), 2);
});

t.test('a Range on a stored answer is cut from the whole body', async (t) => {
  const s = await setup(t);
  s.origin.answer('/r', '0123456789', { 'cache-control': 'max-age=60', etag: '"r1"' });
  await get(s, '/r');
  const part = await get(s, '/r', { range: 'bytes=2-5' });
  t.match(part, { status: 206, cacheStatus: 'HIT', headers: { 'content-range': 'bytes 2-5/10', 'content-length': '4' } });
  t.equal(part.body.toString(), '2345');
  t.match(await get(s, '/r', { range: 'bytes=-3' }), { status: 206, body: Buffer.from('789') });
  t.match(await get(s, '/r', { range: 'bytes=2-5', 'if-range': '"r1"' }), { status: 206 });
  const changed = await get(s, '/r', { range: 'bytes=2-5', 'if-range': '"r0"' });
  t.match(changed, { status: 200, cacheStatus: 'HIT' }, 'If-Range names another version: the whole body');
  t.equal(changed.body.toString(), '0123456789');
  t.equal(s.origin.count('/r'), 1);
  t.match(await get(s, '/r', { range: 'bytes=50-' }), { status: 200, cacheStatus: 'EXPIRED' }, 'unsatisfiable: left to the origin (which ignores Range here, and its answer replaces the stored one)');
  t.equal(s.origin.count('/r'), 2);
});

t.test('purgeHostname drops the answers: the origin is asked again', async (t) => {
  const s = await setup(t);
  s.origin.answer('/x', 'x', { 'cache-control': 'max-age=60' });
  s.origin.answer('/y', 'y', { 'cache-control': 'max-age=60' });
  await get(s, '/x');
  await get(s, '/y');
  await s.edge.idle();
  t.equal(s.cache.purgeHostname('other.example.test'), 0, 'another hostname: nothing');
  t.equal((await get(s, '/x')).cacheStatus, 'HIT');
  t.equal(s.cache.purgeHostname(HOST), 2, 'both bodies dropped');
  t.equal(s.cache.size, 0);
  t.equal((await get(s, '/x')).cacheStatus, 'MISS');
  t.equal(s.origin.count('/x'), 2);
});

t.test('bytes the tiers lost make a miss, never an empty answer', async (t) => {
  const s = await setup(t);
  s.origin.answer('/lost', 'lost bytes', { 'cache-control': 'max-age=60' });
  await get(s, '/lost');
  await s.edge.idle();
  // As an eviction would: the tiers drop the body, the metadata stays.
  s.edge.purgeOwner(proxyCacheOwner(HOST));
  t.equal(s.cache.size, 1);
  t.equal(await s.cache.lookup(HOST, { method: 'HEAD', url: '/lost', headers: {} }), undefined, 'HEAD: a miss');
  const again = await get(s, '/lost');
  t.match(again, { status: 200, cacheStatus: 'MISS' });
  t.equal(again.body.toString(), 'lost bytes');
  t.equal(s.origin.count('/lost'), 2);
});

t.test('concurrent misses share the origin\'s body while it streams; bytes reach the client as they arrive', async (t) => {
  const s = await setup(t, { memoryEntryMaxBytes: 8 * KiB });
  const data = Buffer.alloc(300 * KiB, 'z');
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  s.origin.routes.set('/big', (_req, res) => {
    res.writeHead(200, { 'cache-control': 'max-age=60', 'content-length': String(data.length) });
    res.write(data.subarray(0, 100 * KiB));
    void released.then(() => res.end(data.subarray(100 * KiB)));
  });
  const req = { method: 'GET', url: '/big', headers: {} };
  t.equal(await s.cache.lookup(HOST, req), undefined);
  const res = await request(`${s.origin.url}/big`, { dispatcher: s.agent });
  const first = await s.cache.store(HOST, req, res.statusCode, res.headers, res.body);
  if (!first?.body || Buffer.isBuffer(first.body)) throw new Error('expected a streamed answer');
  const reader = (first.body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const head = await reader.next();
  t.ok(!head.done && head.value.length > 0, 'the first client has bytes before the origin sent them all');

  const joined = await s.cache.lookup(HOST, req);
  t.match(joined, { status: 200, cacheStatus: 'MISS' }, 'a second client joins the fill instead of going to the origin');
  release();
  const rest: Buffer[] = [head.value as Buffer];
  for (let r = await reader.next(); !r.done; r = await reader.next()) rest.push(r.value as Buffer);
  t.ok(Buffer.concat(rest).equals(data), 'the first client got the whole body');
  t.ok((await bytesOf(joined?.body ?? null)).equals(data), 'so did the second');
  t.equal(s.origin.count('/big'), 1, 'one origin request');
  await s.edge.idle();
  const hit = await get(s, '/big');
  t.equal(hit.cacheStatus, 'HIT');
  t.ok(hit.body.equals(data));
});

t.test('an origin body cut short caches nothing', async (t) => {
  const s = await setup(t, { memoryEntryMaxBytes: 8 * KiB });
  for (const [path, size] of [['/cut-small', 4 * KiB], ['/cut-large', 100 * KiB]] as const) {
    s.origin.routes.set(path, (_req, res) => {
      res.writeHead(200, { 'cache-control': 'max-age=60', 'content-length': String(size) });
      res.write(Buffer.alloc(size / 2, 'c'), () => res.destroy());
    });
    const req = { method: 'GET', url: path, headers: {} };
    const res = await request(s.origin.url + path, { dispatcher: s.agent });
    // A small body is handed over whole, so store() itself fails; a large one fails mid-stream.
    const outcome = s.cache.store(HOST, req, res.statusCode, res.headers, res.body).then((a) => bytesOf(a?.body ?? null));
    await t.rejects(outcome, `${path}: the failure reaches the caller`);
    await s.edge.idle();
    t.equal(await s.cache.lookup(HOST, req), undefined, `${path}: then a miss`);
  }
  t.equal(s.cache.size, 0);
});

t.test('an answer too big for the tiers is left to the caller, unread', async (t) => {
  const s = await setup(t, { memoryEntryMaxBytes: 8 * KiB, diskBytes: 64 * KiB });
  const data = Buffer.alloc(100 * KiB, 'b');
  s.origin.answer('/huge', data, { 'cache-control': 'max-age=60' });
  const first = await get(s, '/huge');
  t.match(first, { status: 200, cacheStatus: null });
  t.ok(first.body.equals(data), 'the caller read the whole body itself');
  await get(s, '/huge');
  t.equal(s.origin.count('/huge'), 2);
  t.equal(s.cache.size, 0);
});
