// IP addresses, the one place they are read and classified: addresses as they arrive (socket addresses,
// X-Forwarded-For hops, URL hosts), configured ranges (node:net BlockList), the special-purpose ranges
// (RFC 6890 and its updates) with why each is not public, the IPv4 addresses carried inside IPv6 ones
// (IPv4-mapped, NAT64, 6to4, Teredo), and the /64 a client is grouped by. The SSRF policy
// (address-policy.ts), the CDN's client resolution and GeoIP (src/net/client-info.ts, geoip.ts) and
// the edge proxy's rules and rate limits (src/proxy/rules.ts, limiter.ts) all answer from here, so
// they cannot disagree about an address. A primitive: it imports nothing of ours.
import { BlockList, isIP } from 'node:net';

export type Family = 'ipv4' | 'ipv6';

export interface Address {
  address: string;
  family: Family;
}

// ---- parsing -------------------------------------------------------------------------------------

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

/**
 * A socket's peer address as logged, with no parse: a dual-stack listener's IPv4-mapped prefix dropped
 * (`::ffff:1.2.3.4` -> `1.2.3.4`), anything else as it is. For a log line on every request.
 */
export function unmappedPeer(peer: string): string {
  return peer.startsWith('::ffff:') && peer.includes('.') ? peer.slice(7) : peer;
}

/**
 * An IP literal and nothing else (a URL host, a resolved address): IPv4, IPv6, IPv6 in brackets, IPv6
 * with a zone id (dropped). No port, no spaces, no unwrapping: `::ffff:1.2.3.4` stays IPv6.
 */
export function parseLiteral(text: string): Address | undefined {
  let ip = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zone = ip.indexOf('%');
  if (zone >= 0) ip = ip.slice(0, zone);
  const v = isIP(ip);
  if (v === 4 && zone < 0) return { address: ip, family: 'ipv4' };
  if (v === 6) return { address: ip.toLowerCase(), family: 'ipv6' };
  return undefined;
}

/**
 * The bytes of a valid address (4 or 16; parseAddress or parseLiteral made it): IPv6 `::` expanded,
 * a dotted IPv4 tail converted. The one IPv6 parser.
 */
export function addressBytes(ip: Address): number[] {
  if (ip.family === 'ipv4') return ip.address.split('.').map(Number);
  let text = ip.address;
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (tail) {
    const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number];
    text = text.slice(0, tail.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = rest ? rest.split(':') : [];
  const groups = rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
}

function ipv4(bytes: readonly number[]): Address {
  return { address: bytes.join('.'), family: 'ipv4' };
}

// ---- configured ranges ---------------------------------------------------------------------------

export class InvalidRangeError extends Error {}

/**
 * An IP or CIDR entry as BlockList arguments, or why it is neither. isIP, and so this, accepts a zone
 * id (fe80::1%eth0); a caller that compares clients refuses it (it names an interface, not a client).
 */
export function parseRange(entry: string): { base: string; family: Family; prefix: number | null } | { error: string } {
  const slash = entry.indexOf('/');
  const base = slash < 0 ? entry : entry.slice(0, slash);
  const v = isIP(base);
  if (v === 0) return { error: `'${entry}' is not an IP address or CIDR range` };
  const family: Family = v === 4 ? 'ipv4' : 'ipv6';
  if (slash < 0) return { base, family, prefix: null };
  const text = entry.slice(slash + 1);
  const max = v === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(text) || Number(text) > max) return { error: `'${entry}': the prefix length must be 0 to ${max}` };
  return { base, family, prefix: Number(text) };
}

/**
 * `['10.0.0.0/8', '::1', ...]` -> a BlockList; throws InvalidRangeError naming the first bad entry.
 * Entries are plain addresses or CIDRs (write IPv4 proxies as IPv4: peers are compared as such).
 */
export function rangeList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const r = parseRange(entry);
    if ('error' in r) throw new InvalidRangeError(r.error);
    if (r.prefix === null) list.addAddress(r.base, r.family);
    else list.addSubnet(r.base, r.prefix, r.family);
  }
  return list;
}

// ---- special-purpose ranges ----------------------------------------------------------------------

/** Why an address is not public; `public` is every other valid address, `invalid` no address at all. */
export type AddressClass =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'invalid';

export type SpecialClass = Exclude<AddressClass, 'public' | 'invalid'>;

/**
 * The special-purpose ranges (RFC 6890 and its updates): no public host is in them, so a request on
 * behalf of a user never connects to one and a client coming from one has no country. The IPv4 prefixes
 * that carry an IPv4 address inside IPv6 are not here: those addresses are what the IPv4 one is
 * (EMBEDDED_IPV4 below).
 */
export const SPECIAL_RANGES: readonly { range: string; kind: SpecialClass }[] = [
  { range: '0.0.0.0/8', kind: 'unspecified' }, // "this network"
  { range: '10.0.0.0/8', kind: 'private' },
  { range: '100.64.0.0/10', kind: 'cgnat' }, // shared address space
  { range: '127.0.0.0/8', kind: 'loopback' },
  { range: '169.254.0.0/16', kind: 'link-local' }, // cloud metadata lives here
  { range: '172.16.0.0/12', kind: 'private' },
  { range: '192.0.0.0/24', kind: 'reserved' }, // IETF protocol assignments
  { range: '192.0.2.0/24', kind: 'reserved' }, // documentation
  { range: '192.88.99.0/24', kind: 'reserved' }, // 6to4 relay anycast (deprecated)
  { range: '192.168.0.0/16', kind: 'private' },
  { range: '198.18.0.0/15', kind: 'reserved' }, // benchmarking
  { range: '198.51.100.0/24', kind: 'reserved' }, // documentation
  { range: '203.0.113.0/24', kind: 'reserved' }, // documentation
  { range: '224.0.0.0/4', kind: 'multicast' },
  { range: '255.255.255.255/32', kind: 'broadcast' },
  { range: '240.0.0.0/4', kind: 'reserved' },
  { range: '::/128', kind: 'unspecified' },
  { range: '::1/128', kind: 'loopback' },
  { range: '::/96', kind: 'reserved' }, // IPv4-compatible (deprecated)
  { range: '64:ff9b:1::/48', kind: 'private' }, // local-use NAT64
  { range: '100::/64', kind: 'reserved' }, // discard
  { range: '2001:db8::/32', kind: 'reserved' }, // documentation
  { range: 'fc00::/7', kind: 'private' }, // unique local
  { range: 'fe80::/10', kind: 'link-local' },
  { range: 'fec0::/10', kind: 'private' }, // site-local (deprecated)
  { range: 'ff00::/8', kind: 'multicast' },
];

/**
 * The order classes are asked in: a range inside another (255.255.255.255 in 240.0.0.0/4, :: and ::1 in
 * ::/96) has its class asked before the wider one's.
 */
const CLASS_ORDER: readonly SpecialClass[] = ['unspecified', 'loopback', 'broadcast', 'link-local', 'private', 'cgnat', 'multicast', 'reserved'];

interface Tables {
  /** Every special-purpose range: most addresses are public, and one check says so. */
  any: BlockList;
  byClass: readonly { kind: SpecialClass; list: BlockList }[];
}

/** Built at the first classification (a GeoIP lookup, an outbound connection): ~30 ms of a start otherwise. */
let tables: Tables | undefined;

function build(): Tables {
  const all = SPECIAL_RANGES.map((r) => r.range);
  return {
    any: rangeList(all),
    byClass: CLASS_ORDER.map((kind) => ({ kind, list: rangeList(SPECIAL_RANGES.filter((r) => r.kind === kind).map((r) => r.range)) })),
  };
}

/**
 * IPv6 prefixes whose packets go to an IPv4 address written inside them: IPv4-mapped ::ffff:0:0/96 and
 * NAT64 64:ff9b::/96 (the last 32 bits), 6to4 2002::/16 (bits 16-47), Teredo 2001::/32 (the client,
 * the last 32 bits inverted; then the server, bits 32-63).
 */
const EMBEDDED_IPV4: readonly { prefix: readonly number[]; embedded: (b: readonly number[]) => number[][] }[] = [
  { prefix: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], embedded: (b) => [b.slice(12, 16)] },
  { prefix: [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], embedded: (b) => [b.slice(12, 16)] },
  { prefix: [0x20, 0x02], embedded: (b) => [b.slice(2, 6)] },
  { prefix: [0x20, 0x01, 0, 0], embedded: (b) => [b.slice(12, 16).map((x) => x ^ 0xff), b.slice(4, 8)] },
];

/** The IPv4 addresses an IPv6 address carries (the one a packet reaches first), or none. */
export function embeddedIPv4(ip: Address): Address[] {
  if (ip.family !== 'ipv6') return [];
  const bytes = addressBytes(ip);
  const e = EMBEDDED_IPV4.find((p) => p.prefix.every((x, i) => bytes[i] === x));
  return e ? e.embedded(bytes).map(ipv4) : [];
}

function classifyPlain(ip: Address): Exclude<AddressClass, 'invalid'> {
  const t = (tables ??= build());
  if (!t.any.check(ip.address, ip.family)) return 'public';
  return t.byClass.find((c) => c.list.check(ip.address, ip.family))?.kind ?? 'public';
}

/**
 * Why `ip` is not public, or `public`. An IPv6 address that carries an IPv4 one (::ffff:127.0.0.1,
 * 64:ff9b::a9fe:a9fe, 2002:0a00:1::1, a Teredo address) is what that IPv4 address is: a packet sent
 * to it ends up there. A public IPv4 behind such a prefix (::ffff:8.8.8.8) is public.
 */
export function classify(ip: Address): Exclude<AddressClass, 'invalid'> {
  const embedded = embeddedIPv4(ip);
  if (embedded.length === 0) return classifyPlain(ip);
  for (const inner of embedded) {
    const kind = classifyPlain(inner);
    if (kind !== 'public') return kind;
  }
  return 'public';
}

/** The class of an IP literal (parseLiteral); anything else is `invalid`. */
export function classifyAddress(text: string): AddressClass {
  const ip = parseLiteral(text);
  return ip ? classify(ip) : 'invalid';
}

/** Whether a client may be on the public internet (and so have a country). */
export function isPublic(ip: Address): boolean {
  return classify(ip) === 'public';
}

// ---- grouping ------------------------------------------------------------------------------------

/**
 * Who one client is, for limits: the IPv4 address (also when written IPv4-mapped, `::ffff:cb00:7109`),
 * else the IPv6 /64 as `2001:db8:0:0::/64` (one subscriber usually holds a whole /64).
 */
export function clientGroup(ip: Address): string {
  if (ip.family === 'ipv4') return ip.address;
  const b = addressBytes(ip);
  if (EMBEDDED_IPV4[0]?.prefix.every((x, i) => b[i] === x)) return ipv4(b.slice(12, 16)).address;
  const groups = [0, 2, 4, 6].map((i) => (((b[i] ?? 0) << 8) | (b[i + 1] ?? 0)).toString(16));
  return `${groups.join(':')}::/64`;
}
