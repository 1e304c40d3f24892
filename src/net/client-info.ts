// Who a CDN request comes from. The TCP peer is the client unless it is a trusted proxy
// (cdn.trustedProxies): then X-Forwarded-For is read from the right, skipping trusted hops, and the
// first untrusted hop is the client (hops to its left were written by the client itself and prove
// nothing). The country is the trusted proxy's country header (cdn.countryHeader) when it holds a
// two-letter code, else a GeoIP lookup of the client address. Headers from anyone else are ignored.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { BlockList } from 'node:net';
import type { CdnConfig } from '../config/schema.js';
import { ConfigError } from '../config/load.js';
import { bundledDatabase, GeoIp } from './geoip.js';
import { InvalidRangeError, parseAddress, rangeList, unmappedPeer, type Address } from './ip.js';

export interface ClientInfo {
  ip: string;
  /** ISO 3166 alpha-2 code, or '' when unknown. */
  country: string;
}

/** A proxied request's client, and what the proxy passes on of the way it came. */
export interface ForwardingClient extends ClientInfo {
  /** The TCP peer is a trusted proxy (its forwarding headers are believed). */
  trustedPeer: boolean;
  /**
   * The X-Forwarded-For hops to pass on: from a trusted proxy, the client and the trusted hops after
   * it as received, then the peer; from anyone else, the peer alone. Hops left of the client were
   * written by the client itself and are dropped.
   */
  forwardedFor: string[];
}

/** Hops read from X-Forwarded-For at most: a longer chain is not walked further (the last trusted hop is used). */
const MAX_HOPS = 32;

export type ClientResolverConfig = Pick<CdnConfig, 'trustedProxies' | 'countryHeader' | 'geoipDatabase'>;

export class ClientResolver {
  private readonly trusted: BlockList;
  private readonly anyTrusted: boolean;
  private readonly countryHeader: string;
  private geoipOpen: GeoIp | undefined;
  private readonly geoipFile: string;
  /** The client of each connection, when no proxy is trusted (resolve()). */
  private readonly peers = new WeakMap<object, ClientInfo>();

  /** Opens the GeoIP database now; a bad proxy entry or database is a ConfigError (the server does not start). */
  constructor(config: ClientResolverConfig) {
    try {
      this.trusted = rangeList(config.trustedProxies);
    } catch (err) {
      if (err instanceof InvalidRangeError) throw new ConfigError(`config: cdn.trustedProxies: ${err.message}`);
      throw err;
    }
    this.anyTrusted = config.trustedProxies.length > 0;
    this.countryHeader = config.countryHeader.toLowerCase();
    this.geoipFile = config.geoipDatabase;
    // A configured database is read now: a bad one is a ConfigError and the server does not start. The
    // bundled one (8 MB, checked when it was packaged) waits for the first lookup: a server that has
    // not yet served a CDN request, or never does, neither pays for it nor holds it. Its absence is
    // still a start-up error.
    if (this.geoipFile !== '') this.geoipOpen = GeoIp.open(this.geoipFile);
    else if (bundledDatabase() === undefined) GeoIp.open('');
  }

  private get geoip(): GeoIp {
    return (this.geoipOpen ??= GeoIp.open(this.geoipFile));
  }

  resolve(req: IncomingMessage): ClientInfo {
    // Without trusted proxies the client is the connection's peer: resolved once per connection, not
    // per request (a keep-alive connection carries many; the parse and the GeoIP lookup showed).
    if (!this.anyTrusted) {
      const socket = req.socket;
      let client = this.peers.get(socket);
      if (client === undefined) {
        client = this.resolveFrom(socket.remoteAddress, req.headers);
        // A socket that lost its peer (closed) is not remembered: its next answer is ''.
        if (client.ip !== '') this.peers.set(socket, client);
      }
      return client;
    }
    return this.resolveFrom(req.socket.remoteAddress, req.headers);
  }

  /** The client of a request from TCP peer `peer` with `headers` (lower-case names, as node:http gives them). */
  resolveFrom(peer: string | undefined, headers: IncomingHttpHeaders): ClientInfo {
    const { ip, country } = this.resolveForwarding(peer, headers);
    return { ip, country };
  }

  /**
   * The client's address alone, with no GeoIP lookup: for a log line on every request (the S3
   * surface). Without trusted proxies the TCP peer, with no parse but the IPv4-mapped prefix a
   * dual-stack listener adds (the CDN's log has the plain IPv4 address too).
   */
  clientIp(peer: string | undefined, headers: IncomingHttpHeaders): string {
    if (!this.anyTrusted) return peer === undefined ? '' : unmappedPeer(peer);
    const socket = parseAddress(peer);
    if (!socket) return peer ?? '';
    return this.isTrusted(socket) ? this.walk(socket, headers['x-forwarded-for']).client.address : socket.address;
  }

  /** resolveFrom's client with the forwarding facts of the proxy, from one walk of X-Forwarded-For. */
  resolveForwarding(peer: string | undefined, headers: IncomingHttpHeaders): ForwardingClient {
    const socket = parseAddress(peer);
    if (!socket) return { ip: peer ?? '', country: '', trustedPeer: false, forwardedFor: peer ? [peer] : [] };
    if (!this.isTrusted(socket)) return { ip: socket.address, country: this.geoip.country(socket), trustedPeer: false, forwardedFor: [socket.address] };
    const { client, hops } = this.walk(socket, headers['x-forwarded-for']);
    const claimed = this.countryHeader === '' ? undefined : headers[this.countryHeader];
    const country = typeof claimed === 'string' && /^[A-Za-z]{2}$/.test(claimed.trim()) ? claimed.trim().toUpperCase() : undefined;
    return {
      ip: client.address,
      // XX and ZZ are how proxies say "unknown" (Cloudflare, CLDR): ask the database instead.
      country: country !== undefined && country !== 'XX' && country !== 'ZZ' ? country : this.geoip.country(client),
      trustedPeer: true,
      forwardedFor: [...hops.map((h) => h.address), socket.address],
    };
  }

  private isTrusted(ip: Address): boolean {
    return this.anyTrusted && this.trusted.check(ip.address, ip.family);
  }

  /**
   * The client, the right-most untrusted hop of X-Forwarded-For (repeated headers arrive joined with ", "); when
   * every hop is trusted, the left-most. A hop that is not an address ('unknown', garbage) ends the walk:
   * the client is then the trusted hop that forwarded it. Empty hops are skipped. `hops`: the addresses
   * from the client to the right end of the header.
   */
  private walk(peer: Address, header: string | string[] | undefined): { client: Address; hops: Address[] } {
    if (header === undefined) return { client: peer, hops: [] };
    const raws = (Array.isArray(header) ? header.join(',') : header).split(',');
    let client = peer;
    const hops: Address[] = [];
    for (let i = raws.length - 1, walked = 0; i >= 0 && walked < MAX_HOPS; i--, walked++) {
      const raw = raws[i] as string;
      if (raw.trim() === '') continue;
      const hop = parseAddress(raw);
      if (!hop) break;
      client = hop;
      hops.unshift(hop);
      if (!this.isTrusted(hop)) break;
    }
    return { client, hops };
  }
}
