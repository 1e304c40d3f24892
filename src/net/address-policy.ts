// Which IP addresses a request made on behalf of a user may connect to. Checked on the address a
// socket is about to use (after DNS), so a name that resolves to an internal host, or re-resolves to
// one later (DNS rebinding), is refused all the same. Only addresses on the public internet pass.
import { isIP } from 'node:net';

/** Why an address is not public; `public` passes the policy. */
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

export interface AddressPolicy {
  /** Allow every address (a loopback fixture in tests); never in production. */
  allowPrivateAddresses: boolean;
}

interface Range {
  bytes: number[];
  bits: number;
  kind: Exclude<AddressClass, 'public' | 'invalid'>;
}

function v4Range(cidr: string, kind: Range['kind']): Range {
  const [ip = '', bits = '32'] = cidr.split('/');
  return { bytes: ip.split('.').map(Number), bits: Number(bits), kind };
}

// First match wins: the narrower ranges come before the ones that contain them.
const V4_RANGES: readonly Range[] = [
  v4Range('0.0.0.0/8', 'unspecified'),
  v4Range('10.0.0.0/8', 'private'),
  v4Range('100.64.0.0/10', 'cgnat'),
  v4Range('127.0.0.0/8', 'loopback'),
  v4Range('169.254.0.0/16', 'link-local'),
  v4Range('172.16.0.0/12', 'private'),
  v4Range('192.0.0.0/24', 'reserved'),
  v4Range('192.0.2.0/24', 'reserved'),
  v4Range('192.88.99.0/24', 'reserved'),
  v4Range('192.168.0.0/16', 'private'),
  v4Range('198.18.0.0/15', 'reserved'),
  v4Range('198.51.100.0/24', 'reserved'),
  v4Range('203.0.113.0/24', 'reserved'),
  v4Range('224.0.0.0/4', 'multicast'),
  v4Range('255.255.255.255/32', 'broadcast'),
  v4Range('240.0.0.0/4', 'reserved'),
];

/** IPv6 prefixes whose last 32 bits (or bits 16-47 for 6to4) are an IPv4 address that is what gets reached. */
const EMBEDS_V4: readonly { prefix: number[]; bits: number; at: number }[] = [
  { prefix: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], bits: 96, at: 12 }, // ::ffff:0:0/96 IPv4-mapped
  { prefix: [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], bits: 96, at: 12 }, // 64:ff9b::/96 NAT64
  { prefix: [0x20, 0x02], bits: 16, at: 2 }, // 2002::/16 6to4
];

const V6_RANGES: readonly Range[] = [
  { bytes: Array<number>(16).fill(0), bits: 128, kind: 'unspecified' },
  { bytes: [...Array<number>(15).fill(0), 1], bits: 128, kind: 'loopback' },
  { bytes: Array<number>(12).fill(0), bits: 96, kind: 'reserved' }, // ::/96, IPv4-compatible (deprecated)
  { bytes: [0, 0x64, 0xff, 0x9b, 0, 1], bits: 48, kind: 'private' }, // 64:ff9b:1::/48 local-use NAT64
  { bytes: [0x01, 0, 0, 0, 0, 0, 0, 0], bits: 64, kind: 'reserved' }, // 100::/64 discard
  { bytes: [0x20, 0x01, 0x0d, 0xb8], bits: 32, kind: 'reserved' }, // documentation
  { bytes: [0xfc], bits: 7, kind: 'private' }, // fc00::/7 unique local
  { bytes: [0xfe, 0x80], bits: 10, kind: 'link-local' },
  { bytes: [0xfe, 0xc0], bits: 10, kind: 'private' }, // fec0::/10 site-local (deprecated)
  { bytes: [0xff], bits: 8, kind: 'multicast' },
];

function matches(addr: readonly number[], prefix: readonly number[], bits: number): boolean {
  for (let i = 0; i * 8 < bits; i++) {
    const take = Math.min(8, bits - i * 8);
    const mask = (0xff << (8 - take)) & 0xff;
    if (((addr[i] ?? 0) & mask) !== ((prefix[i] ?? 0) & mask)) return false;
  }
  return true;
}

function parseV4(ip: string): number[] {
  return ip.split('.').map(Number);
}

/** 16 bytes of a valid IPv6 literal (isIP has checked it): `::` expanded, a dotted IPv4 tail converted. */
function parseV6(ip: string): number[] {
  let text = ip.split('%')[0] ?? ip; // zone id (fe80::1%eth0)
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail?.[1]) {
    const [a = 0, b = 0, c = 0, d = 0] = parseV4(tail[1]);
    text = text.slice(0, -tail[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
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

function classifyV4(bytes: readonly number[]): AddressClass {
  return V4_RANGES.find((r) => matches(bytes, r.bytes, r.bits))?.kind ?? 'public';
}

/** The class of an IP literal (IPv4, IPv6, or IPv6 in brackets); anything else is `invalid`. */
export function classifyAddress(address: string): AddressClass {
  const ip = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(ip.split('%')[0] ?? '');
  if (family === 4) return classifyV4(parseV4(ip));
  if (family !== 6) return 'invalid';
  const bytes = parseV6(ip);
  for (const e of EMBEDS_V4) {
    if (matches(bytes, e.prefix, e.bits)) {
      const inner = classifyV4(bytes.slice(e.at, e.at + 4));
      if (inner !== 'public') return inner;
      // A public IPv4 behind a translation prefix is reached like that address; ::ffff:8.8.8.8 is fine.
      return 'public';
    }
  }
  return V6_RANGES.find((r) => matches(bytes, r.bytes, r.bits))?.kind ?? 'public';
}

/** Undefined when the policy lets a connection to `address` through, else why not. */
export function refusal(address: string, policy: AddressPolicy): Exclude<AddressClass, 'public'> | undefined {
  const kind = classifyAddress(address);
  if (kind === 'invalid') return kind;
  if (kind === 'public' || policy.allowPrivateAddresses) return undefined;
  return kind;
}

/** A connection the policy refused; `code` lets callers tell it from network failures. */
export class AddressRefusedError extends Error {
  readonly code = 'ERR_ADDRESS_REFUSED';

  constructor(
    readonly host: string,
    readonly address: string,
    readonly kind: Exclude<AddressClass, 'public'>,
  ) {
    super(`refused to connect to ${host} (${address}): ${kind} address`);
    this.name = 'AddressRefusedError';
  }
}
