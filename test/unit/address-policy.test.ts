// The address policy as a table: what a request on behalf of a user may connect to.
import t from 'tap';
import { classifyAddress, refusal } from '../../src/net/address-policy.js';

const table: [string, ReturnType<typeof classifyAddress>][] = [
  // public
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['93.184.216.34', 'public'],
  ['100.63.255.255', 'public'],
  ['100.128.0.0', 'public'],
  ['172.15.255.255', 'public'],
  ['172.32.0.0', 'public'],
  ['169.253.255.255', 'public'],
  ['223.255.255.255', 'public'],
  ['2606:4700:4700::1111', 'public'],
  ['2001:4860:4860::8888', 'public'],
  ['::ffff:8.8.8.8', 'public'],
  // IPv4
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['10.0.0.1', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['169.254.169.254', 'link-local'], // cloud metadata
  ['169.254.0.1', 'link-local'],
  ['100.64.0.1', 'cgnat'],
  ['100.127.255.255', 'cgnat'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['255.255.255.255', 'broadcast'],
  ['240.0.0.1', 'reserved'],
  ['192.0.2.10', 'reserved'],
  ['198.18.0.1', 'reserved'],
  ['198.51.100.7', 'reserved'],
  ['203.0.113.9', 'reserved'],
  ['192.0.0.8', 'reserved'],
  // IPv6
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['[::1]', 'loopback'],
  ['fc00::1', 'private'],
  ['fd12:3456:789a::1', 'private'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf::1', 'link-local'],
  ['fec0::1', 'private'],
  ['ff02::1', 'multicast'],
  ['2001:db8::1', 'reserved'],
  ['100::1', 'reserved'],
  ['::127.0.0.1', 'reserved'],
  // IPv4 behind IPv6 prefixes: the IPv4 address is what gets reached
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['0:0:0:0:0:ffff:169.254.169.254', 'link-local'],
  ['::ffff:10.1.2.3', 'private'],
  ['::ffff:192.168.0.1', 'private'],
  ['::ffff:100.64.1.1', 'cgnat'],
  ['::ffff:0.0.0.0', 'unspecified'],
  ['::ffff:255.255.255.255', 'broadcast'],
  ['64:ff9b::a9fe:a9fe', 'link-local'],
  ['64:ff9b::808:808', 'public'],
  ['64:ff9b:1::1', 'private'],
  ['2002:7f00:1::1', 'loopback'],
  ['2002:808:808::1', 'public'],
  // not addresses
  ['localhost', 'invalid'],
  ['', 'invalid'],
  ['127.1', 'invalid'],
  ['1.2.3.256', 'invalid'],
];

t.test('classification table', async (t) => {
  for (const [address, expected] of table) t.equal(classifyAddress(address), expected, address || '(empty)');
});

t.test('refusal: only public addresses pass by default; the flag lets any address through', async (t) => {
  const strict = { allowPrivateAddresses: false };
  const lax = { allowPrivateAddresses: true };
  for (const [address, expected] of table) {
    const want = expected === 'public' ? undefined : expected;
    t.equal(refusal(address, strict), want, `strict ${address}`);
    t.equal(refusal(address, lax), expected === 'invalid' ? 'invalid' : undefined, `allowed ${address}`);
  }
});
