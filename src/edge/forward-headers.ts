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

const NOTHING: ReadonlySet<string> = new Set();

/**
 * The lower-case name of each header of `raw`, in order (each name lower-cased once), and the names its
 * Connection headers list.
 */
function scan(raw: readonly string[]): { lower: string[]; named: ReadonlySet<string> } {
  const lower = new Array<string>(raw.length >> 1);
  let named: Set<string> | undefined;
  for (let i = 0, j = 0; i + 1 < raw.length; i += 2, j++) {
    const name = (raw[i] as string).toLowerCase();
    lower[j] = name;
    if (name !== 'connection') continue;
    for (const token of (raw[i + 1] as string).split(',')) {
      const listed = token.trim().toLowerCase();
      if (listed !== '') (named ??= new Set()).add(listed);
    }
  }
  return { lower, named: named ?? NOTHING };
}

/** Whether a header of this (lower-case) name stops at the proxy. */
function stops(name: string, named: ReadonlySet<string>): boolean {
  return HOP_BY_HOP.has(name) || named.has(name);
}

/** `raw` without hop-by-hop headers, without the ones Connection names, and without `also`. */
export function endToEnd(raw: readonly string[], also: ReadonlySet<string> = NOTHING): RawHeaders {
  const { lower, named } = scan(raw);
  const out: RawHeaders = [];
  for (let i = 0, j = 0; i + 1 < raw.length; i += 2, j++) {
    const name = lower[j] as string;
    if (!stops(name, named) && !also.has(name)) out.push(raw[i] as string, raw[i + 1] as string);
  }
  return out;
}

/** `Via` with our hop appended to the non-empty values before it. */
function via(before: readonly string[]): string {
  return before.length === 0 ? VIA : `${before.join(', ')}, ${VIA}`;
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

/** The request headers for the origin, from the client's raw headers (one pass over them after scan()). */
export function requestHeadersFor(raw: readonly string[], facts: ForwardingFacts): RawHeaders {
  const { lower, named } = scan(raw);
  const out: RawHeaders = [];
  let clientHost: string | undefined;
  let claimedProto: string | undefined;
  let claimedHost: string | undefined;
  const received: string[] = [];
  const vias: string[] = [];
  for (let i = 0, j = 0; i + 1 < raw.length; i += 2, j++) {
    const name = lower[j] as string;
    const value = raw[i + 1] as string;
    // The headers we write ourselves: what the client sent is read here, never passed on.
    if (REPLACED_ON_REQUEST.has(name)) {
      if (name === 'host') clientHost ??= value;
      else if (name === 'via') {
        if (value.trim() !== '') vias.push(value);
      } else if (facts.trustedPeer) {
        // From a trusted proxy in front of us its view of the scheme and host is the client's; anyone else's is ignored.
        if (name === 'x-forwarded-proto') claimedProto ??= value;
        else if (name === 'x-forwarded-host') claimedHost ??= value;
        else if (name === 'forwarded' && value.trim() !== '') received.push(value);
      }
      continue;
    }
    if (!stops(name, named)) out.push(raw[i] as string, value);
  }
  const host = clientHost ?? '';
  const scheme = claimedProto?.trim().toLowerCase();
  const proto = scheme === 'http' || scheme === 'https' ? scheme : facts.proto;
  const trimmedHost = claimedHost?.trim();
  const forwardedHost = trimmedHost !== undefined && trimmedHost !== '' ? trimmedHost : host;
  // Our element names who connected to us (RFC 7239 §5.2): the client itself, or the trusted proxy after its own.
  let element = `for=${forwardedNode(facts.forwardedFor.at(-1))};proto=${facts.proto}`;
  if (host !== '') element += `;host=${forwardedValue(host)}`;
  received.push(element);
  out.push('host', facts.originHost);
  if (facts.forwardedFor.length > 0) out.push('x-forwarded-for', facts.forwardedFor.join(', '));
  out.push('x-forwarded-proto', proto);
  if (forwardedHost !== '') out.push('x-forwarded-host', forwardedHost);
  out.push('forwarded', received.join(', '), 'via', via(vias));
  return out;
}

/** The origin's response headers for the client: end-to-end ones, and Via. */
export function responseHeadersFor(raw: readonly string[]): RawHeaders {
  const { lower, named } = scan(raw);
  const out: RawHeaders = [];
  const vias: string[] = [];
  for (let i = 0, j = 0; i + 1 < raw.length; i += 2, j++) {
    const name = lower[j] as string;
    const value = raw[i + 1] as string;
    if (name === 'via') {
      if (value.trim() !== '') vias.push(value);
    } else if (!stops(name, named)) out.push(raw[i] as string, value);
  }
  out.push('via', via(vias));
  return out;
}

/** undici's raw headers (Buffers) as strings (latin1: one char per byte, as node writes them). */
export function rawStrings(raw: readonly (Buffer | string)[]): RawHeaders {
  return raw.map((v) => (typeof v === 'string' ? v : v.toString('latin1')));
}
