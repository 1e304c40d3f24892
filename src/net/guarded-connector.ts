// An undici connector that applies the address policy at connect time: to an IP literal before the
// socket is opened, and to a host name on the addresses DNS gave (node's `lookup` hook), so the check
// is on the address really dialled, not on a separate resolution an attacker could race.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions as HttpsAgentOptions } from 'node:https';
import { isIP, type LookupFunction, type NetConnectOpts } from 'node:net';
import type { Duplex } from 'node:stream';
import type { buildConnector } from 'undici';
import { undici } from './undici-lazy.js';
import { AddressRefusedError, refusal, type AddressPolicy } from './address-policy.js';

export interface GuardedConnectorOptions extends AddressPolicy {
  connectTimeoutMs: number;
  /** Name resolution (tests may map names to loopback); default dns.lookup. */
  lookup?: typeof dnsLookup;
}

/** A `lookup` for net/tls.connect that drops refused addresses and fails when none is left. */
export function guardedLookup(policy: AddressPolicy, resolve: typeof dnsLookup = dnsLookup): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    resolve(hostname, { ...options, all: true }, (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
      if (err) {
        callback(err, '', 0);
        return;
      }
      const allowed = addresses.filter((a) => refusal(a.address, policy) === undefined);
      const first = allowed[0];
      if (!first) {
        const seen = addresses[0]?.address ?? '';
        callback(new AddressRefusedError(hostname, seen, refusal(seen, policy) ?? 'invalid'), '', 0);
        return;
      }
      // node asks for every address when it races families (autoSelectFamily), else for one.
      if (options.all) callback(null, allowed);
      else callback(null, first.address, first.family);
    });
  };
}

export function guardedConnector(opts: GuardedConnectorOptions): buildConnector.connector {
  const base = undici().buildConnector({ timeout: opts.connectTimeoutMs, lookup: guardedLookup(opts, opts.lookup) });
  return (options, callback) => {
    const host = options.hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host)) {
      // net.connect never calls lookup for a literal: check it here.
      const kind = refusal(host, opts);
      if (kind) {
        callback(new AddressRefusedError(host, host, kind), null);
        return;
      }
    }
    base(options, callback);
  };
}

/** Refuses an IP literal the policy does not allow (net.connect never calls `lookup` for one). */
function checkLiteral(rawHost: string | null | undefined, policy: AddressPolicy): void {
  const host = (rawHost ?? '').replace(/^\[(.*)\]$/, '$1');
  if (!isIP(host)) return;
  const kind = refusal(host, policy);
  if (kind) throw new AddressRefusedError(host, host, kind);
}

/**
 * node:http and node:https agents under the same policy, for clients built on them (acme-client's
 * axios): host names through the guarded lookup, IP literals checked before the socket opens.
 */
export function guardedAgents(policy: AddressPolicy, tls: HttpsAgentOptions = {}): { http: HttpAgent; https: HttpsAgent } {
  const lookup = guardedLookup(policy);
  return { http: guardLiterals(new HttpAgent({ lookup }), policy), https: guardLiterals(new HttpsAgent({ ...tls, lookup }), policy) };
}

/** The agent, its connections to an IP literal checked first (the lookup sees only host names). */
function guardLiterals<A extends HttpAgent>(agent: A, policy: AddressPolicy): A {
  type Connect = (options: NetConnectOpts & { host?: string | null }, cb?: (err: Error | null, socket: Duplex) => void) => Duplex | null | undefined;
  const connect = (agent as unknown as { createConnection: Connect }).createConnection.bind(agent);
  (agent as unknown as { createConnection: Connect }).createConnection = (options, cb) => {
    checkLiteral(options.host, policy);
    return connect(options, cb);
  };
  return agent;
}
