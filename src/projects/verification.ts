// Proving control of a hostname: its owner publishes TXT `s3edge-verify=<token>` at
// `<edge.verificationPrefix>.<hostname>`; we look it up and compare. The lookup is injected (a loopback DNS
// server in tests, through edge.dnsServers), and every failure says what was found: no record, a record
// with another value, or no answer from DNS.
import { randomBytes } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import type { EdgeConfig } from '../config/schema.js';
import { show } from '../domains/normalize.js';

export const TXT_PREFIX = 's3edge-verify=';

/** One try's wait for an answer, and how many tries: a lookup gives up after about 4 s. */
const DNS_TIMEOUT_MS = 2000;
const DNS_TRIES = 2;
/** Found values shown in a failure message, each cut to this many characters. */
const SHOWN_VALUES = 3;

/** TXT strings of a name: one array of character-strings per record (node:dns resolveTxt). */
export type TxtLookup = (name: string) => Promise<string[][]>;

export interface VerificationRecord {
  /** Where to publish it: `_s3edge-challenge.app.example.com`. */
  name: string;
  type: 'TXT';
  value: string;
}

export type VerificationOutcome =
  | { verified: true }
  | { verified: false; reason: 'no-record' | 'wrong-value' | 'dns-error'; message: string };

/** 128 random bits, hex: nothing a DNS host panel could mangle. */
export function newVerificationToken(): string {
  return randomBytes(16).toString('hex');
}

export function verificationRecord(hostname: string, token: string, prefix: string): VerificationRecord {
  return { name: `${prefix}.${hostname}`, type: 'TXT', value: `${TXT_PREFIX}${token}` };
}

/**
 * TXT lookups through edge.dnsServers when set (`127.0.0.1:53535`), else the system's resolvers; each
 * try waits `timeoutMs` for an answer (tests shorten it).
 */
export function dnsTxtLookup(edge: Pick<EdgeConfig, 'dnsServers'>, timeoutMs = DNS_TIMEOUT_MS): TxtLookup {
  const resolver = new Resolver({ timeout: timeoutMs, tries: DNS_TRIES });
  if (edge.dnsServers.length > 0) resolver.setServers(edge.dnsServers);
  return (name) => resolver.resolveTxt(name);
}

/** DNS codes that mean "the name has no TXT record" rather than "DNS did not answer". */
const NO_RECORD = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

export async function checkVerification(lookup: TxtLookup, record: VerificationRecord): Promise<VerificationOutcome> {
  const publish = `publish TXT ${record.name} with the value ${record.value}`;
  let records: string[][];
  try {
    records = await lookup(record.name);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && NO_RECORD.has(code)) {
      return { verified: false, reason: 'no-record', message: `No TXT record found at ${record.name}: ${publish}, then verify again (DNS changes can take a while to appear)` };
    }
    const what = typeof code === 'string' ? code : 'no answer';
    return { verified: false, reason: 'dns-error', message: `The DNS lookup of ${record.name} failed (${what}); try again later` };
  }
  // A record longer than 255 octets arrives in several character-strings: they are one value.
  const values = records.map((chunks) => chunks.join('').trim());
  if (values.includes(record.value)) return { verified: true };
  if (values.length === 0) {
    return { verified: false, reason: 'no-record', message: `No TXT record found at ${record.name}: ${publish}, then verify again` };
  }
  const ours = values.filter((v) => v.startsWith(TXT_PREFIX));
  const shown = (ours.length > 0 ? ours : values).slice(0, SHOWN_VALUES).map((v) => show(v)).join(', ');
  const found = ours.length > 0 ? `a verification record with another token (${shown})` : `TXT records that are not the verification record (${shown})`;
  return { verified: false, reason: 'wrong-value', message: `Found ${found} at ${record.name}: ${publish}, then verify again` };
}
