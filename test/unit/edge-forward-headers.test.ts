// The headers that cross the edge proxy: hop-by-hop ones (the fixed list and whatever Connection names)
// stop, forwarding headers are ours (replaced for untrusted peers, extended after a trusted proxy),
// RFC 7239 quoting (IPv6 nodes, hosts with a port), Via appended both ways; and the X-Forwarded-For
// chain the client resolver hands over.
import t from 'tap';
import { endToEnd, requestHeadersFor, responseHeadersFor, type ForwardingFacts } from '../../src/edge/forward-headers.js';
import { ClientResolver } from '../../src/net/client-info.js';

const facts = (over: Partial<ForwardingFacts> = {}): ForwardingFacts => ({
  forwardedFor: ['198.51.100.7'],
  trustedPeer: false,
  proto: 'http',
  originHost: 'origin.example:8080',
  ...over,
});

/** Header list -> [name, value] pairs, for readable comparisons. */
function pairs(raw: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i] as string, raw[i + 1] as string]);
  return out;
}

t.test('endToEnd drops the hop-by-hop list, names listed in any Connection header, and extras', async (t) => {
  const raw = [
    'Connection', 'keep-alive, X-A',
    'connection', ' x-b ,',
    'X-A', '1', 'x-b', '2', 'X-C', '3',
    'Keep-Alive', 'timeout=5', 'TE', 'trailers', 'Trailer', 'x', 'Transfer-Encoding', 'chunked', 'Upgrade', 'h2c',
    'Proxy-Authorization', 'Basic x', 'Proxy-Authenticate', 'Basic', 'Proxy-Connection', 'keep-alive',
    'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2', 'X-Drop', 'y',
  ];
  t.same(pairs(endToEnd(raw, new Set(['x-drop']))), [['X-C', '3'], ['Set-Cookie', 'a=1'], ['Set-Cookie', 'b=2']], 'order, case and repeats kept');
});

t.test('request headers from an untrusted peer: forwarding headers replaced, not extended', async (t) => {
  const raw = [
    'Host', 'App.Example',
    'X-Forwarded-For', '6.6.6.6',
    'X-Forwarded-Proto', 'https',
    'X-Forwarded-Host', 'evil.example',
    'Forwarded', 'for=6.6.6.6',
    'Expect', '100-continue',
    'Accept', '*/*',
  ];
  t.same(pairs(requestHeadersFor(raw, facts())), [
    ['Accept', '*/*'],
    ['host', 'origin.example:8080'],
    ['x-forwarded-for', '198.51.100.7'],
    ['x-forwarded-proto', 'http'],
    ['x-forwarded-host', 'App.Example'],
    ['forwarded', 'for=198.51.100.7;proto=http;host=App.Example'],
    ['via', '1.1 s3edge'],
  ]);
});

t.test('request headers after a trusted proxy: its chain, scheme, host and Forwarded are kept and extended', async (t) => {
  const raw = ['Host', 'app.example', 'X-Forwarded-Proto', 'HTTPS', 'X-Forwarded-Host', 'www.app.example', 'Forwarded', 'for=203.0.113.9;proto=https', 'Via', '1.1 lb'];
  const out = pairs(requestHeadersFor(raw, facts({ trustedPeer: true, forwardedFor: ['203.0.113.9', '10.0.0.2'], proto: 'https' })));
  t.same(out, [
    ['host', 'origin.example:8080'],
    ['x-forwarded-for', '203.0.113.9, 10.0.0.2'],
    ['x-forwarded-proto', 'https'],
    ['x-forwarded-host', 'www.app.example'],
    ['forwarded', 'for=203.0.113.9;proto=https, for=10.0.0.2;proto=https;host=app.example'],
    ['via', '1.1 lb, 1.1 s3edge'],
  ]);
  const bogus = pairs(requestHeadersFor(['Host', 'a', 'X-Forwarded-Proto', 'gopher'], facts({ trustedPeer: true })));
  t.same(bogus.find(([n]) => n === 'x-forwarded-proto'), ['x-forwarded-proto', 'http'], 'a scheme that is neither http nor https is ours');
});

t.test('RFC 7239 values: IPv6 nodes quoted in brackets, a host with a port quoted, unknown when no peer', async (t) => {
  const v6 = pairs(requestHeadersFor(['Host', 'app.example:8443'], facts({ forwardedFor: ['2001:db8::1'] })));
  t.same(v6.find(([n]) => n === 'forwarded'), ['forwarded', 'for="[2001:db8::1]";proto=http;host="app.example:8443"']);
  const none = pairs(requestHeadersFor(['Host', 'a'], facts({ forwardedFor: [] })));
  t.same(none.find(([n]) => n === 'forwarded'), ['forwarded', 'for=unknown;proto=http;host=a']);
  t.equal(none.find(([n]) => n === 'x-forwarded-for'), undefined, 'no X-Forwarded-For without a peer');
  const quote = pairs(requestHeadersFor(['Host', 'a"b\\c'], facts()));
  t.same(quote.find(([n]) => n === 'forwarded'), ['forwarded', 'for=198.51.100.7;proto=http;host="a\\"b\\\\c"'], 'quotes and backslashes escaped');
});

t.test('response headers: hop-by-hop and Connection-named dropped, Via appended', async (t) => {
  const raw = ['Content-Type', 'text/html', 'Connection', 'X-Secret', 'X-Secret', 's', 'Transfer-Encoding', 'chunked', 'Via', '1.1 app', 'Set-Cookie', 'a=1'];
  t.same(pairs(responseHeadersFor(raw)), [['Content-Type', 'text/html'], ['Set-Cookie', 'a=1'], ['via', '1.1 app, 1.1 s3edge']]);
});

t.test('ClientResolver.resolveForwarding: the peer alone unless trusted; after a trusted proxy, the client onwards', async (t) => {
  const r = new ClientResolver({ trustedProxies: ['10.0.0.0/8'], countryHeader: '', geoipDatabase: '' });
  t.same(r.resolveForwarding('198.51.100.7', { 'x-forwarded-for': '6.6.6.6' }).forwardedFor, ['198.51.100.7'], 'an untrusted peer: its forged header changes nothing');
  t.same(r.resolveForwarding('::ffff:198.51.100.7', {}).forwardedFor, ['198.51.100.7'], 'a mapped IPv4 peer as IPv4');
  t.same(r.resolveForwarding('10.0.0.2', { 'x-forwarded-for': '6.6.6.6, 203.0.113.9, 10.1.1.1' }).forwardedFor, ['203.0.113.9', '10.1.1.1', '10.0.0.2'], 'hops the client wrote itself are dropped');
  t.same(r.resolveForwarding('10.0.0.2', {}).forwardedFor, ['10.0.0.2'], 'a trusted peer without a header is the client');
  t.same(r.resolveForwarding('10.0.0.2', { 'x-forwarded-for': 'garbage, 10.1.1.1' }).forwardedFor, ['10.1.1.1', '10.0.0.2'], 'the walk stops at a hop that is no address');
  t.ok(r.resolveForwarding('10.0.0.2', {}).trustedPeer);
  t.notOk(r.resolveForwarding('198.51.100.7', {}).trustedPeer);
  t.notOk(r.resolveForwarding(undefined, {}).trustedPeer);
});
