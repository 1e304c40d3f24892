// The headers a proxied request and its answer carry across the proxy (RFC 9110 §7.6): hop-by-hop
// headers (the fixed list and every name the Connection header lists) stop here; the origin learns who
// asked through X-Forwarded-For/-Proto/-Host and Forwarded (RFC 7239), both built by us, never taken
// from a client we do not trust; both directions get `Via: 1.1 s3edge`. Pure: raw header lists in and out.

/** Header names that describe one connection, not the message (RFC 9110 §7.6.1, plus the legacy Proxy-Connection). */
const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Request headers the proxy writes itself (Expect is answered here: 100 Continue once the rules pass). */
const REPLACED_ON_REQUEST: ReadonlySet<string> = new Set(['host', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'forwarded', 'via', 'expect']);

export const VIA = '1.1 s3edge';

/** A flat raw header list: name, value, name, value (node's rawHeaders, undici's raw headers). */
export type RawHeaders = string[];

/** Lower-case names listed in the Connection headers of `raw`. */
function connectionTokens(raw: readonly string[]): Set<string> {
  const named = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if ((raw[i] as string).toLowerCase() !== 'connection') continue;
    for (const token of (raw[i + 1] as string).split(',')) {
      const name = token.trim().toLowerCase();
      if (name !== '') named.add(name);
    }
  }
  return named;
}

/** `raw` without hop-by-hop headers, without the ones Connection names, and without `also`. */
export function endToEnd(raw: readonly string[], also: ReadonlySet<string> = new Set()): RawHeaders {
  const named = connectionTokens(raw);
  const out: RawHeaders = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || named.has(lower) || also.has(lower)) continue;
    out.push(name, raw[i + 1] as string);
  }
  return out;
}

/** Every value of header `name` in `raw`, in order. */
function values(raw: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) if ((raw[i] as string).toLowerCase() === name) out.push(raw[i + 1] as string);
  return out;
}

/** `Via` with our hop appended to what came before. */
function via(raw: readonly string[]): string {
  return [...values(raw, 'via').filter((v) => v.trim() !== ''), VIA].join(', ');
}

/** An RFC 7239 node: IPv4 as a token, IPv6 quoted in brackets, `unknown` when the peer is gone. */
function forwardedNode(ip: string | undefined): string {
  if (ip === undefined || ip === '') return 'unknown';
  return ip.includes(':') ? `"[${ip}]"` : ip;
}

/** An RFC 7239 value: a token as is, anything else a quoted-string. */
function forwardedValue(v: string): string {
  return /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(v) ? v : `"${v.replace(/[\\"]/g, '\\$&')}"`;
}

export interface ForwardingFacts {
  /** X-Forwarded-For hops to send, client first, our TCP peer last (ClientResolver.forwardedFor). */
  forwardedFor: string[];
  /** The TCP peer is a trusted proxy: its Forwarded, X-Forwarded-Proto and X-Forwarded-Host are kept. */
  trustedPeer: boolean;
  /** The scheme of our listener. */
  proto: 'http' | 'https';
  /** The Host header the origin gets: the origin URL's host, or the client's when preserveHost. */
  originHost: string;
}

/** The request headers for the origin, from the client's raw headers. */
export function requestHeadersFor(raw: readonly string[], facts: ForwardingFacts): RawHeaders {
  const out = endToEnd(raw, REPLACED_ON_REQUEST);
  const clientHost = values(raw, 'host')[0] ?? '';
  // From a trusted proxy in front of us its view of the scheme and host is the client's; anyone else's is ignored.
  const claimedProto = facts.trustedPeer ? values(raw, 'x-forwarded-proto')[0]?.trim().toLowerCase() : undefined;
  const proto = claimedProto === 'http' || claimedProto === 'https' ? claimedProto : facts.proto;
  const claimedHost = facts.trustedPeer ? values(raw, 'x-forwarded-host')[0]?.trim() : undefined;
  const forwardedHost = claimedHost !== undefined && claimedHost !== '' ? claimedHost : clientHost;
  // Our element names who connected to us (RFC 7239 §5.2): the client itself, or the trusted proxy after its own.
  const element = [`for=${forwardedNode(facts.forwardedFor.at(-1))}`, `proto=${facts.proto}`, ...(clientHost !== '' ? [`host=${forwardedValue(clientHost)}`] : [])].join(';');
  const received = facts.trustedPeer ? values(raw, 'forwarded').filter((v) => v.trim() !== '') : [];
  out.push(
    'host', facts.originHost,
    ...(facts.forwardedFor.length > 0 ? ['x-forwarded-for', facts.forwardedFor.join(', ')] : []),
    'x-forwarded-proto', proto,
    ...(forwardedHost !== '' ? ['x-forwarded-host', forwardedHost] : []),
    'forwarded', [...received, element].join(', '),
    'via', via(raw),
  );
  return out;
}

/** The origin's response headers for the client: end-to-end ones, and Via. */
export function responseHeadersFor(raw: readonly string[]): RawHeaders {
  const out = endToEnd(raw, new Set(['via']));
  out.push('via', via(raw));
  return out;
}

/** undici's raw headers (Buffers) as strings (latin1: one char per byte, as node writes them). */
export function rawStrings(raw: readonly (Buffer | string)[]): RawHeaders {
  return raw.map((v) => (typeof v === 'string' ? v : v.toString('latin1')));
}
