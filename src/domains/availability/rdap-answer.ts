// What an RDAP server's answer to `domain/<name>` (RFC 9082 §3.1.3) says about the name: registered
// (200 with that name's domain object, RFC 9083 §5.3), not found (404; whether that means free is the
// TLD's business, decided by the caller), or unknown and why. Pure, so it is table-tested.
import { OutboundError } from '../../net/outbound-client.js';

export type RdapUnknownReason = 'timeout' | 'rate-limited' | 'server-error' | 'bad-answer' | 'address-refused' | 'unreachable';

export type RdapOutcome = { kind: 'registered' } | { kind: 'not-found' } | { kind: 'unknown'; reason: RdapUnknownReason };

function isDomainObject(body: Buffer, domain: string): boolean {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return false;
  }
  if (typeof json !== 'object' || json === null) return false;
  const { objectClassName, ldhName } = json as Record<string, unknown>;
  // Registries write ldhName in any case, some with the root's trailing dot (RFC 9083 §3).
  return objectClassName === 'domain' && typeof ldhName === 'string' && ldhName.toLowerCase().replace(/\.$/, '') === domain;
}

/** `domain` is the lowercase ASCII name that was asked for. */
export function interpretAnswer(status: number, body: Buffer, domain: string): RdapOutcome {
  if (status === 200) return isDomainObject(body, domain) ? { kind: 'registered' } : { kind: 'unknown', reason: 'bad-answer' };
  if (status === 404) return { kind: 'not-found' };
  if (status === 429) return { kind: 'unknown', reason: 'rate-limited' };
  if (status >= 500) return { kind: 'unknown', reason: 'server-error' };
  // 3xx past the redirects we follow, 400, 403, ...: not an answer we can read.
  return { kind: 'unknown', reason: 'bad-answer' };
}

/** The reason for a request that got no answer at all. */
export function interpretFailure(err: unknown): RdapUnknownReason {
  if (!(err instanceof OutboundError)) return 'server-error';
  switch (err.kind) {
    case 'timeout':
    case 'aborted':
      return 'timeout';
    case 'too-large':
    case 'redirect':
    case 'bad-url':
      return 'bad-answer';
    case 'address-refused':
      return 'address-refused';
    case 'network':
      // Refused, reset, no such host: nothing answered (no network, a firewall, a registry down), not an error of the registry's.
      return 'unreachable';
  }
}
