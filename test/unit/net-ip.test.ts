// The one address module (src/net/ip.ts): parsing, the special-purpose ranges, IPv4 inside IPv6, the
// /64 grouping key; and that the CDN's answer (isPublic) and the SSRF policy's (refusal) are the same.
import t, { type Test } from 'tap';
import { refusal } from '../../src/net/address-policy.js';
import {
  addressBytes,
  classify,
  classifyAddress,
  clientGroup,
  embeddedIPv4,
  isPublic,
  parseAddress,
  parseLiteral,
  parseRange,
  SPECIAL_RANGES,
  unmappedPeer,
  type Address,
} from '../../src/net/ip.js';

const STRICT = { allowPrivateAddresses: false };

function text(bytes: readonly number[]): string {
  if (bytes.length === 4) return bytes.join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  return groups.join(':');
}

/** The first and last address of a CIDR range, and one past the end (undefined at the top). */
function bounds(range: string): { first: string; last: string; after: string | undefined } {
  const [base = '', bits = ''] = range.split('/');
  const ip = parseLiteral(base);
  if (!ip) throw new Error(range);
  const first = addressBytes(ip);
  const last = first.map((b, i) => {
    const hostBits = Math.max(0, Math.min(8, (i + 1) * 8 - Number(bits)));
    return b | ((1 << hostBits) - 1);
  });
  const after = [...last];
  let i = after.length - 1;
  while (i >= 0 && after[i] === 0xff) after[i--] = 0;
  if (i < 0) return { first: text(first), last: text(last), after: undefined };
  after[i] = (after[i] ?? 0) + 1;
  return { first: text(first), last: text(last), after: text(after) };
}

/** The CDN's answer and the policy's for one address must agree; returns the policy's class. */
function agree(t: Test, address: string): string {
  const kind = classifyAddress(address);
  const parsed = parseAddress(address);
  t.ok(parsed, `${address} parses as a client address`);
  t.equal(isPublic(parsed!), kind === 'public', `${address}: the CDN and the policy agree (${kind})`);
  t.equal(refusal(address, STRICT), kind === 'public' ? undefined : kind, `${address}: refusal is the class`);
  return kind;
}

t.test('every special-purpose range: its class from first to last address, and the CDN agrees', async (t) => {
  // A single address inside a wider range (255.255.255.255 in 240.0.0.0/4, :: in ::/96) is its own class.
  const single = new Map(SPECIAL_RANGES.filter((r) => /\/(32|128)$/.test(r.range)).map((r) => [bounds(r.range).first, r.kind]));
  for (const { range, kind } of SPECIAL_RANGES) {
    const { first, last, after } = bounds(range);
    t.equal(agree(t, first), single.get(first) ?? kind, `${range} starts ${kind}`);
    t.equal(agree(t, last), single.get(last) ?? kind, `${range} ends ${kind}`);
    if (after !== undefined) agree(t, after);
    if (range.includes('.')) {
      // The same IPv4 address behind every IPv6 prefix that carries one is the same class.
      const [a = 0, b = 0, c = 0, d = 0] = first.split('.').map(Number);
      const hex = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
      const teredo = `2001:0:808:808:0:0:${(((a << 8) | b) ^ 0xffff).toString(16)}:${(((c << 8) | d) ^ 0xffff).toString(16)}`;
      for (const wrapped of [`::ffff:${first}`, `::ffff:${hex}`, `64:ff9b::${first}`, `64:ff9b::${hex}`, `2002:${hex}::1`, teredo]) {
        t.equal(agree(t, wrapped), kind, `${wrapped} is ${range}`);
      }
    }
  }
});

t.test('the ranges the two tables used to disagree on', async (t) => {
  const table: [string, string][] = [
    ['192.88.99.1', 'reserved'], // 6to4 relay anycast
    ['192.88.99.255', 'reserved'],
    ['192.88.100.0', 'public'],
    ['255.255.255.255', 'broadcast'],
    ['255.255.255.254', 'reserved'],
    ['::1.2.3.4', 'reserved'], // IPv4-compatible
    ['64:ff9b:1::1', 'private'],
    ['fec0::1', 'private'],
    // NAT64 64:ff9b::/96 with a private embedded IPv4
    ['64:ff9b::10.1.2.3', 'private'],
    ['64:ff9b::a01:203', 'private'],
    ['64:ff9b::192.168.1.1', 'private'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::8.8.8.8', 'public'],
    // 6to4 2002::/16 with 10.x
    ['2002:a00:1::1', 'private'],
    ['2002:0a01:0203:ffff::1', 'private'],
    ['2002:a9fe:a9fe::', 'link-local'],
    ['2002:808:808::1', 'public'],
    // Teredo 2001::/32: server 65.54.227.120; the client is the last 32 bits inverted
    ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'private'], // client 10.0.0.1
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'], // client 127.0.0.1
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'], // RFC 4380's example: client 192.0.2.45
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'public'], // client 8.8.8.8
    ['2001:0:a00:1:8000:63bf:f7f7:f7f7', 'private'], // a private server
    // near the embedding prefixes, not in them
    ['2001:1::1', 'public'],
    ['64:ff9b:0:1::a00:1', 'public'],
  ];
  for (const [address, kind] of table) t.equal(agree(t, address), kind, address);
  t.notOk(isPublic({ address: '255.255.255.255', family: 'ipv4' }), 'the CDN: broadcast has no country');
  t.notOk(isPublic({ address: '192.88.99.1', family: 'ipv4' }), 'the CDN: 6to4 relay anycast has no country');
});

t.test('embeddedIPv4: the IPv4 a packet to the IPv6 address reaches', async (t) => {
  const v6 = (address: string): Address => ({ address, family: 'ipv6' });
  t.same(embeddedIPv4(v6('::ffff:a00:1')), [{ address: '10.0.0.1', family: 'ipv4' }]);
  t.same(embeddedIPv4(v6('64:ff9b::808:808')), [{ address: '8.8.8.8', family: 'ipv4' }]);
  t.same(embeddedIPv4(v6('2002:c000:204::1')), [{ address: '192.0.2.4', family: 'ipv4' }]);
  t.same(embeddedIPv4(v6('2001:0:4136:e378:8000:63bf:3fff:fdd2')), [
    { address: '192.0.2.45', family: 'ipv4' },
    { address: '65.54.227.120', family: 'ipv4' },
  ]);
  t.same(embeddedIPv4(v6('2001:db8::1')), []);
  t.same(embeddedIPv4(v6('::1.2.3.4')), [], 'IPv4-compatible is reserved, not translated');
  t.same(embeddedIPv4({ address: '10.0.0.1', family: 'ipv4' }), []);
  t.equal(classify({ address: '::ffff:169.254.169.254', family: 'ipv6' }), 'link-local');
});

t.test('parseLiteral: a literal only; parseAddress: what sockets and proxies write', async (t) => {
  t.same(parseLiteral('[::1]'), { address: '::1', family: 'ipv6' });
  t.same(parseLiteral('FE80::1%eth0'), { address: 'fe80::1', family: 'ipv6' });
  t.same(parseLiteral('::ffff:1.2.3.4'), { address: '::ffff:1.2.3.4', family: 'ipv6' }, 'no unwrapping');
  for (const junk of ['', ' 1.2.3.4', '1.2.3.4:80', '[::1]:443', '127.1', '1.2.3.4%eth0', 'localhost']) {
    t.equal(parseLiteral(junk), undefined, JSON.stringify(junk));
    t.equal(classifyAddress(junk), 'invalid', JSON.stringify(junk));
  }
  t.same(parseAddress('[::ffff:10.0.0.1]:80'), { address: '10.0.0.1', family: 'ipv4' });
  t.same(parseAddress('1.2.3.4:80'), { address: '1.2.3.4', family: 'ipv4' });
  t.equal(unmappedPeer('::ffff:1.2.3.4'), '1.2.3.4', 'a dual-stack peer, for the log');
  t.equal(unmappedPeer('::ffff:a00:1'), '::ffff:a00:1', 'no parse');
  t.equal(unmappedPeer('2001:db8::1'), '2001:db8::1');
});

t.test('addressBytes: one IPv6 parser for every spelling', async (t) => {
  const v6 = (address: string): number[] => addressBytes({ address, family: 'ipv6' });
  const loop = [...Array<number>(15).fill(0), 1];
  t.same(v6('::1'), loop);
  t.same(v6('0:0:0:0:0:0:0:1'), loop);
  t.same(v6('::0.0.0.1'), loop);
  t.same(v6('::'), Array<number>(16).fill(0));
  t.same(v6('2001:db8::'), [0x20, 0x01, 0x0d, 0xb8, ...Array<number>(12).fill(0)]);
  t.same(v6('1:2:3:4:5:6:7.8.9.10'), [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 7, 8, 9, 10]);
  t.same(addressBytes({ address: '192.0.2.1', family: 'ipv4' }), [192, 0, 2, 1]);
});

t.test('parseRange: BlockList arguments, or why not', async (t) => {
  t.same(parseRange('10.0.0.0/8'), { base: '10.0.0.0', family: 'ipv4', prefix: 8 });
  t.same(parseRange('::1'), { base: '::1', family: 'ipv6', prefix: null });
  t.same(parseRange('10.0.0.0/33'), { error: "'10.0.0.0/33': the prefix length must be 0 to 32" });
  t.same(parseRange('::/129'), { error: "'::/129': the prefix length must be 0 to 128" });
  t.same(parseRange('nope'), { error: "'nope' is not an IP address or CIDR range" });
});

t.test('clientGroup: IPv4 itself, IPv4-mapped as IPv4, IPv6 by /64', async (t) => {
  const group = (raw: string): string => clientGroup(parseAddress(raw)!);
  t.equal(group('198.51.100.7'), '198.51.100.7');
  t.equal(group('::ffff:c633:6407'), '198.51.100.7');
  t.equal(group('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  t.equal(group('2001:DB8:1:2::9'), '2001:db8:1:2::/64');
  t.equal(group('64:ff9b::a00:1'), '64:ff9b:0:0::/64', 'NAT64 is grouped as IPv6, as before');
});
