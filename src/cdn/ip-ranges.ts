// IP addresses as they arrive (socket addresses, X-Forwarded-For hops) and sets of ranges (node:net
// BlockList): the configured trusted proxies, and the special-purpose ranges that no GeoIP answer fits.
import { BlockList, isIP } from 'node:net';

export type Family = 'ipv4' | 'ipv6';

export interface Address {
  address: string;
  family: Family;
}

/**
 * A socket address or forwarded hop -> a plain address, or undefined when it is none. Accepts
 * `1.2.3.4`, `1.2.3.4:5678`, `2001:db8::1`, `[2001:db8::1]:443`, and IPv4-mapped IPv6 (`::ffff:1.2.3.4`,
 * as a dual-stack socket reports IPv4 peers), which becomes the IPv4 address.
 */
export function parseAddress(raw: string | undefined): Address | undefined {
  if (raw === undefined) return undefined;
  let s = raw.trim();
  if (s.length === 0 || s.length > 64) return undefined;
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(s);
  if (bracketed) s = bracketed[1] as string;
  else if (/^[\d.]+:\d{1,5}$/.test(s)) s = s.slice(0, s.lastIndexOf(':'));
  // A zone id (fe80::1%eth0) names an interface, not a host.
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const mapped = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i.exec(s);
  if (mapped) s = mapped[1] as string;
  const v = isIP(s);
  if (v === 4) return { address: s, family: 'ipv4' };
  if (v === 6) return { address: s.toLowerCase(), family: 'ipv6' };
  return undefined;
}

export class InvalidRangeError extends Error {}

/**
 * `['10.0.0.0/8', '::1', ...]` -> a BlockList; throws InvalidRangeError naming the first bad entry.
 * Entries are plain addresses or CIDRs (write IPv4 proxies as IPv4: peers are compared as such).
 */
export function rangeList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const slash = entry.indexOf('/');
    const base = slash < 0 ? entry : entry.slice(0, slash);
    const v = isIP(base);
    if (v === 0) throw new InvalidRangeError(`'${entry}' is not an IP address or CIDR range`);
    const family: Family = v === 4 ? 'ipv4' : 'ipv6';
    if (slash < 0) {
      list.addAddress(base, family);
      continue;
    }
    const prefixText = entry.slice(slash + 1);
    const max = v === 4 ? 32 : 128;
    if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) {
      throw new InvalidRangeError(`'${entry}': the prefix length must be 0 to ${max}`);
    }
    list.addSubnet(base, Number(prefixText), family);
  }
  return list;
}

/**
 * Special-purpose ranges (RFC 6890 and its updates): this host, private, shared (CGNAT), loopback,
 * link-local, documentation, benchmarking, multicast, reserved; unique-local and link-local IPv6.
 * No public client comes from these, so they have no country.
 */
const NON_PUBLIC_RANGES = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24',
  '192.0.2.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4',
  '::/127', '100::/64', '2001:db8::/32', 'fc00::/7', 'fe80::/10', 'ff00::/8',
];
/** Built at the first lookup (the GeoIP one): ~30 ms of a start otherwise. */
let nonPublic: BlockList | undefined;

export function isPublic(ip: Address): boolean {
  return !(nonPublic ??= rangeList(NON_PUBLIC_RANGES)).check(ip.address, ip.family);
}
