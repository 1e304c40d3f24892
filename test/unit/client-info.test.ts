// Who a CDN request comes from: X-Forwarded-For and the country header only from trusted proxies
// (addresses and CIDRs, IPv4 and IPv6), the right-most untrusted hop, GeoIP from the bundled database
// for public addresses and none for special-purpose ones, and clear config errors.
import t from 'tap';
import { mkdtemp, rm, writeFile, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClientResolver, type ClientResolverConfig } from '../../src/net/client-info.js';
import { bundledDatabase, GeoIp } from '../../src/net/geoip.js';
import { isPublic, parseAddress, rangeList } from '../../src/net/ip.js';
import { ConfigError } from '../../src/config/load.js';

function resolver(over: Partial<ClientResolverConfig> = {}): ClientResolver {
  return new ClientResolver({ trustedProxies: [], countryHeader: '', geoipDatabase: '', ...over });
}

const proxied = resolver({ trustedProxies: ['127.0.0.1', '10.0.0.0/8', 'fd00::/8'], countryHeader: 'cf-ipcountry' });

t.test('parseAddress: plain, with port, bracketed, IPv4-mapped, zone ids; junk is none', async (t) => {
  t.same(parseAddress('203.0.113.9'), { address: '203.0.113.9', family: 'ipv4' });
  t.same(parseAddress(' 203.0.113.9:4711 '), { address: '203.0.113.9', family: 'ipv4' });
  t.same(parseAddress('2001:DB8::1'), { address: '2001:db8::1', family: 'ipv6' });
  t.same(parseAddress('[2001:db8::1]:443'), { address: '2001:db8::1', family: 'ipv6' });
  t.same(parseAddress('::ffff:127.0.0.1'), { address: '127.0.0.1', family: 'ipv4' }, 'a dual-stack socket reports IPv4 peers mapped');
  t.same(parseAddress('fe80::1%eth0'), { address: 'fe80::1', family: 'ipv6' });
  for (const junk of ['', 'unknown', '_hidden', '1.2.3', '256.1.1.1', '1.2.3.4.5', 'example.com', '1.2.3.4:http', 'x'.repeat(100)]) {
    t.equal(parseAddress(junk), undefined, JSON.stringify(junk));
  }
  t.equal(parseAddress(undefined), undefined);
});

t.test('rangeList: addresses and CIDRs of both families; a bad entry is named', async (t) => {
  const list = rangeList(['192.0.2.1', '10.0.0.0/8', '2001:db8::/32', '::1']);
  t.ok(list.check('192.0.2.1', 'ipv4'));
  t.notOk(list.check('192.0.2.2', 'ipv4'));
  t.ok(list.check('10.200.3.4', 'ipv4'));
  t.ok(list.check('2001:db8:ffff::1', 'ipv6'));
  t.ok(list.check('::1', 'ipv6'));
  t.notOk(list.check('2001:db9::1', 'ipv6'));
  t.throws(() => rangeList(['10.0.0.0/33']), /prefix length must be 0 to 32/);
  t.throws(() => rangeList(['::/129']), /0 to 128/);
  t.throws(() => rangeList(['1.2.3.999']), /not an IP address/);
  t.throws(() => resolver({ trustedProxies: ['10.0.0.1/40'] }), ConfigError);
  t.throws(() => resolver({ trustedProxies: ['10.0.0.1/40'] }), /config: cdn\.trustedProxies: '10\.0\.0\.1\/40'/);
});

t.test('an untrusted peer: its own address; X-Forwarded-For and the country header are ignored', async (t) => {
  const headers = { 'x-forwarded-for': '198.51.100.7', 'cf-ipcountry': 'DE' };
  t.same(proxied.resolveFrom('192.0.2.50', headers), { ip: '192.0.2.50', country: '' });
  t.same(proxied.resolveFrom('::ffff:192.0.2.50', headers), { ip: '192.0.2.50', country: '' }, 'mapped IPv4 peer');
  t.same(resolver().resolveFrom('127.0.0.1', headers), { ip: '127.0.0.1', country: '' }, 'no trusted proxies at all');
  t.same(proxied.resolveFrom('2001:db8::9', headers), { ip: '2001:db8::9', country: '' });
});

t.test('a trusted peer: the right-most untrusted hop of X-Forwarded-For', async (t) => {
  t.equal(proxied.resolveFrom('127.0.0.1', { 'x-forwarded-for': '198.51.100.7' }).ip, '198.51.100.7');
  t.equal(proxied.resolveFrom('127.0.0.1', {}).ip, '127.0.0.1', 'no header: the proxy itself');
  t.equal(proxied.resolveFrom('10.1.1.1', { 'x-forwarded-for': '198.51.100.7, 10.2.2.2, 10.3.3.3' }).ip, '198.51.100.7', 'trusted hops skipped');
  t.equal(
    proxied.resolveFrom('127.0.0.1', { 'x-forwarded-for': '6.6.6.6, 198.51.100.7, 10.3.3.3' }).ip,
    '198.51.100.7',
    'a spoofed left part (written by the client) is not believed',
  );
  t.equal(proxied.resolveFrom('127.0.0.1', { 'x-forwarded-for': '10.9.9.9, 10.3.3.3' }).ip, '10.9.9.9', 'all hops trusted: the left-most');
  t.equal(proxied.resolveFrom('127.0.0.1', { 'x-forwarded-for': 'unknown, 10.3.3.3' }).ip, '10.3.3.3', 'junk ends the walk at the hop that forwarded it');
  t.equal(proxied.resolveFrom('127.0.0.1', { 'x-forwarded-for': 'garbage' }).ip, '127.0.0.1');
  t.equal(proxied.resolveFrom('127.0.0.1', { 'x-forwarded-for': '198.51.100.7, , ' }).ip, '198.51.100.7', 'empty hops are skipped');
  t.equal(proxied.resolveFrom('127.0.0.1', { 'x-forwarded-for': '198.51.100.7:5555' }).ip, '198.51.100.7', 'a port is dropped');
  t.equal(proxied.resolveFrom('fd00::5', { 'x-forwarded-for': '[2001:db8::42]:443, fd12::1' }).ip, '2001:db8::42', 'IPv6 proxies and hops');
  t.equal(proxied.resolveFrom('::ffff:127.0.0.1', { 'x-forwarded-for': '198.51.100.8' }).ip, '198.51.100.8', 'a mapped IPv4 peer is trusted as IPv4');
  const long = Array.from({ length: 100 }, () => '10.0.0.1').join(', ');
  t.equal(proxied.resolveFrom('127.0.0.1', { 'x-forwarded-for': `198.51.100.7, ${long}` }).ip, '10.0.0.1', 'a chain is walked 32 hops at most');
});

t.test("a trusted peer's country header: two letters, upper-cased; otherwise GeoIP", async (t) => {
  t.equal(proxied.resolveFrom('127.0.0.1', { 'x-forwarded-for': '198.51.100.7', 'cf-ipcountry': 'ng' }).country, 'NG');
  t.equal(proxied.resolveFrom('127.0.0.1', { 'cf-ipcountry': ' DE ' }).country, 'DE');
  for (const bad of ['XX', 'T1', 'DEU', '', 'D', 'DE, FR']) {
    t.equal(proxied.resolveFrom('127.0.0.1', { 'x-forwarded-for': '198.51.100.7', 'cf-ipcountry': bad }).country, '', `${JSON.stringify(bad)}: not a country, and the documentation address has none`);
  }
  const geo = proxied.resolveFrom('127.0.0.1', { 'x-forwarded-for': '8.8.8.8', 'cf-ipcountry': 'XX' }).country;
  t.match(geo, /^[A-Z]{2}$/, 'an unknown-country header falls back to GeoIP');
  t.equal(resolver({ trustedProxies: ['127.0.0.1'] }).resolveFrom('127.0.0.1', { 'cf-ipcountry': 'DE' }).country, '', 'no countryHeader configured: the header means nothing');
});

t.test('GeoIP: the bundled database places public addresses, never special-purpose ones', async (t) => {
  const path = bundledDatabase();
  t.ok(path?.endsWith('.mmdb'), 'the bundled database is installed');
  const geo = GeoIp.open('');
  for (const ip of ['8.8.8.8', '1.1.1.1', '193.0.6.139', '2001:4860:4860::8888']) {
    t.match(geo.country(parseAddress(ip)!), /^[A-Z]{2}$/, `${ip} has a country`);
  }
  for (const ip of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '100.64.0.1', '169.254.1.1', '198.51.100.7', '203.0.113.9', '192.0.2.1', '::1', 'fe80::1', 'fd00::1', '2001:db8::1', '224.0.0.1']) {
    const address = parseAddress(ip)!;
    t.notOk(isPublic(address), `${ip} is special-purpose`);
    t.equal(geo.country(address), '', `${ip} has no country`);
  }
  t.equal(resolver().resolveFrom('8.8.8.8', {}).country, geo.country(parseAddress('8.8.8.8')!), 'an untrusted public peer is looked up');
});

t.test('a configured GeoIP database that is missing or not an MMDB stops the start with a config error', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 's3edge-geoip-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  t.throws(() => GeoIp.open(join(dir, 'absent.mmdb')), { name: 'ConfigError', message: /cannot read cdn\.geoipDatabase .*absent\.mmdb: ENOENT/ });
  const junk = join(dir, 'junk.mmdb');
  await writeFile(junk, 'not a database\n'.repeat(100));
  t.throws(() => GeoIp.open(junk), { name: 'ConfigError', message: /junk\.mmdb is not a readable MMDB database/ });
  const cut = join(dir, 'cut.mmdb');
  const whole = await readFile(bundledDatabase()!);
  await writeFile(cut, whole.subarray(whole.length / 2));
  t.throws(() => GeoIp.open(cut), { name: 'ConfigError', message: /is not a readable MMDB database/ }, 'a truncated database');
  const copy = join(dir, 'copy.mmdb');
  await writeFile(copy, whole);
  t.match(GeoIp.open(copy).country(parseAddress('8.8.8.8')!), /^[A-Z]{2}$/, 'a configured copy works');
});

t.test('clientIp (the S3 log line): the peer without trusted proxies, else the forwarded client; never a GeoIP lookup', async (t) => {
  const direct = resolver();
  t.equal(direct.clientIp('203.0.113.9', { 'x-forwarded-for': '198.51.100.1' }), '203.0.113.9', 'no trusted proxy: the header is ignored');
  t.equal(direct.clientIp('::ffff:203.0.113.9', {}), '203.0.113.9', 'IPv4-mapped peers as plain IPv4');
  t.equal(direct.clientIp('2001:db8::1', {}), '2001:db8::1');
  t.equal(direct.clientIp(undefined, {}), '');
  t.equal(proxied.clientIp('127.0.0.1', { 'x-forwarded-for': '198.51.100.1, 10.1.2.3' }), '198.51.100.1', 'through trusted hops');
  t.equal(proxied.clientIp('::ffff:127.0.0.1', { 'x-forwarded-for': '198.51.100.1' }), '198.51.100.1');
  t.equal(proxied.clientIp('203.0.113.9', { 'x-forwarded-for': '198.51.100.1' }), '203.0.113.9', 'an untrusted peer is the client');
});
