// The outbound client against a real loopback server: the address policy (after DNS too), the size
// cap, the deadline, the caller's abort and redirects.
import t from 'tap';
import { OutboundClient, type OutboundClientOptions } from '../../src/net/outbound-client.js';
import { startRdapFixture, type RdapFixture } from '../helpers/rdap-fixture.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

async function fixture(t: Teardown): Promise<RdapFixture> {
  const f = await startRdapFixture();
  t.teardown(() => f.close());
  return f;
}

function client(t: Teardown, opts: Partial<OutboundClientOptions> = {}): OutboundClient {
  const c = new OutboundClient({ allowPrivateAddresses: true, timeoutMs: 2000, maxAnswerBytes: 64 * 1024, ...opts });
  t.teardown(() => c.close());
  return c;
}

t.test('loopback is refused by default and reached with allowPrivateAddresses', async (t) => {
  const f = await fixture(t);
  f.set('a.test', { kind: 'registered' });
  const url = `${f.baseUrl}domain/a.test`;
  await t.rejects(client(t, { allowPrivateAddresses: false }).get(url), { name: 'OutboundError', kind: 'address-refused' });
  t.equal(f.total(), 0, 'no request reached the server');
  const res = await client(t).get(url);
  t.equal(res.status, 200);
  t.match(JSON.parse(res.body.toString()), { objectClassName: 'domain', ldhName: 'A.TEST' });
  t.equal(f.count('a.test'), 1);
});

t.test('a name is checked on the address DNS gave: localhost is refused after resolution', async (t) => {
  const f = await fixture(t);
  const url = `${f.baseUrl.replace('127.0.0.1', 'localhost')}domain/a.test`;
  await t.rejects(client(t, { allowPrivateAddresses: false }).get(url), { name: 'OutboundError', kind: 'address-refused' });
  t.equal(f.total(), 0);
  // A resolver that maps a public-looking name to loopback is caught the same way.
  const lookup = ((_host: string, _opts: unknown, cb: (err: null, addrs: { address: string; family: number }[]) => void) =>
    cb(null, [{ address: '127.0.0.1', family: 4 }])) as unknown as OutboundClientOptions['lookup'];
  const sneaky = `${f.baseUrl.replace('127.0.0.1', 'rdap.example.com')}domain/a.test`;
  await t.rejects(client(t, { allowPrivateAddresses: false, lookup }).get(sneaky), { name: 'OutboundError', kind: 'address-refused' });
  t.equal(f.total(), 0);
  const res = await client(t, { lookup }).get(sneaky);
  t.equal(res.status, 404, 'the same resolver with the flag reaches the fixture');
});

t.test('answers over the cap are refused, declared or streamed', async (t) => {
  const f = await fixture(t);
  f.set('big.test', { kind: 'oversize', bytes: 200_000 });
  f.set('chunked.test', { kind: 'oversize', bytes: 200_000, declareLength: false });
  f.set('fits.test', { kind: 'oversize', bytes: 60_000 });
  const c = client(t);
  await t.rejects(c.get(`${f.baseUrl}domain/big.test`), { name: 'OutboundError', kind: 'too-large' });
  await t.rejects(c.get(`${f.baseUrl}domain/chunked.test`), { name: 'OutboundError', kind: 'too-large' });
  t.equal((await c.get(`${f.baseUrl}domain/fits.test`)).body.length, 60_000);
  await t.rejects(c.get(`${f.baseUrl}domain/fits.test`, { maxAnswerBytes: 1000 }), { name: 'OutboundError', kind: 'too-large' }, 'per request cap');
});

t.test('a server that never answers hits the deadline; the caller can abort sooner', async (t) => {
  const f = await fixture(t);
  f.set('never.test', { kind: 'slow' });
  const c = client(t, { timeoutMs: 200 });
  const started = Date.now();
  await t.rejects(c.get(`${f.baseUrl}domain/never.test`), { name: 'OutboundError', kind: 'timeout' });
  t.ok(Date.now() - started < 10_000, 'returned (generous bound)');
  const ac = new AbortController();
  const pending = c.get(`${f.baseUrl}domain/never.test`, { timeoutMs: 60_000, signal: ac.signal });
  setTimeout(() => ac.abort(), 50);
  await t.rejects(pending, { name: 'OutboundError', kind: 'aborted' });
  await t.rejects(c.get(`${f.baseUrl}domain/never.test`, { signal: AbortSignal.abort() }), { name: 'OutboundError', kind: 'aborted' });
});

t.test('redirects: returned as they are by default, followed when asked, never to another scheme or down to http', async (t) => {
  const f = await fixture(t);
  f.set('moved.test', { kind: 'redirect', location: '/rdap/domain/target.test' });
  f.set('target.test', { kind: 'registered' });
  f.set('file.test', { kind: 'redirect', location: 'file:///etc/passwd' });
  f.set('loop.test', { kind: 'redirect', location: '/rdap/domain/loop.test' });
  const c = client(t);
  const plain = await c.get(`${f.baseUrl}domain/moved.test`);
  t.equal(plain.status, 302);
  t.equal(f.count('target.test'), 0, 'not followed');
  const followed = await c.get(`${f.baseUrl}domain/moved.test`, { maxRedirects: 2 });
  t.equal(followed.status, 200);
  t.equal(followed.url, `${f.baseUrl}domain/target.test`);
  await t.rejects(c.get(`${f.baseUrl}domain/file.test`, { maxRedirects: 2 }), { name: 'OutboundError', kind: 'redirect' });
  const looping = await c.get(`${f.baseUrl}domain/loop.test`, { maxRedirects: 2 });
  t.equal(looping.status, 302, 'past the limit the redirect itself is the answer');
  t.equal(f.count('loop.test'), 3);
});

t.test('only http and https URLs without credentials', async (t) => {
  const c = client(t);
  await t.rejects(c.get('ftp://example.com/x'), { name: 'OutboundError', kind: 'bad-url' });
  await t.rejects(c.get('http://user:pw@127.0.0.1/'), { name: 'OutboundError', kind: 'bad-url' });
  await t.rejects(c.get('not a url'), { name: 'OutboundError', kind: 'bad-url' });
});

t.test('a closed port is a network failure, not a hang', async (t) => {
  const f = await startRdapFixture();
  const base = f.baseUrl;
  await f.close();
  await t.rejects(client(t).get(`${base}domain/a.test`), { name: 'OutboundError', kind: 'network' });
});
