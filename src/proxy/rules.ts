// A project hostname's protection rules: the one validator (API and CLI) and the decision for one
// request, made before the origin is contacted. The decision is pure apart from the limiter's state (a
// limiter that answers later, a cluster worker's, makes it a promise; a synchronous one never does); the
// order is fixed so the cheapest, most final refusals come first and blocked requests never take tokens:
//   blockIps 403 -> allowIps 403 -> blockCountries 403 -> allowedMethods 405 -> maxBodyBytes 413 -> rateLimit 429
import { BlockList } from 'node:net';
import { parseAddress, parseRange, type Address } from '../net/ip.js';
import type { ClientLimiter, EdgeLimiter, LimitResult } from './limiter.js';
import { NO_RULES, type Decision, type EdgeRoute, type HostRules, type RateLimitRule } from '../db/repos/hostname-model.js';

export interface RuleFacts {
  /** The client address (src/net/client-info.ts). */
  ip: string;
  /** ISO 3166 alpha-2, or '' when unknown. */
  country: string;
  method: string;
  /** declared Content-Length, null when absent (chunked or no body) */
  bodyBytes: number | null;
}

interface CompiledRules {
  block: BlockList | null;
  allow: BlockList | null;
  countries: ReadonlySet<string>;
  methods: ReadonlySet<string>;
}

const ALLOW: Decision = { kind: 'allow' };

/** An IP or CIDR entry as BlockList arguments (src/net/ip.ts), or undefined when it is neither. */
function clientRange(entry: string): { base: string; family: 'ipv4' | 'ipv6'; prefix: number | null } | undefined {
  // A zone id (fe80::1%eth0) names an interface, not a client.
  if (entry.includes('%')) return undefined;
  const r = parseRange(entry);
  return 'error' in r ? undefined : r;
}

/**
 * A BlockList of the entries, or null when there are none. BlockList matches IPv4 clients against
 * IPv4-mapped IPv6 entries and the other way round, so `::ffff:192.0.2.0/120` covers 192.0.2.0/24 (and
 * `::/0` covers every client). Entries that do not parse are skipped: rules are validated before they
 * are stored, and one stray entry must not take the hostname down.
 */
function rangeSet(entries: readonly string[]): BlockList | null {
  if (entries.length === 0) return null;
  const list = new BlockList();
  for (const entry of entries) {
    const r = clientRange(entry);
    if (!r) continue;
    if (r.prefix === null) list.addAddress(r.base, r.family);
    else list.addSubnet(r.base, r.prefix, r.family);
  }
  return list;
}

// Routes are rebuilt as new objects when rules change, so the rules object itself is the cache key.
const compiled = new WeakMap<HostRules, CompiledRules>();

function compile(rules: HostRules): CompiledRules {
  let c = compiled.get(rules);
  if (!c) {
    c = {
      block: rangeSet(rules.blockIps),
      allow: rangeSet(rules.allowIps),
      countries: new Set(rules.blockCountries),
      methods: new Set(rules.allowedMethods),
    };
    compiled.set(rules, c);
  }
  return c;
}

function inList(list: BlockList, client: Address | undefined): boolean {
  return client !== undefined && list.check(client.address, client.family);
}

function limited(r: LimitResult): Decision {
  return r.ok ? ALLOW : { kind: 'block', reason: r.reason, status: 429, retryAfterSeconds: r.retryAfterSeconds };
}

/** Allow, or the first rule (in the order above) that refuses the request. */
export function decide(route: EdgeRoute, facts: RuleFacts, limiter: ClientLimiter, nowMs?: number): Decision;
export function decide(route: EdgeRoute, facts: RuleFacts, limiter: EdgeLimiter, nowMs?: number): Decision | Promise<Decision>;
export function decide(route: EdgeRoute, facts: RuleFacts, limiter: EdgeLimiter, nowMs?: number): Decision | Promise<Decision> {
  const rules = route.rules;
  const c = compile(rules);
  if (c.block || c.allow) {
    const client = parseAddress(facts.ip);
    if (c.block && inList(c.block, client)) return { kind: 'block', reason: 'ip-blocked', status: 403 };
    // A client whose address cannot be read is in no allow list.
    if (c.allow && !inList(c.allow, client)) return { kind: 'block', reason: 'ip-not-allowed', status: 403 };
  }
  if (facts.country !== '' && c.countries.has(facts.country)) return { kind: 'block', reason: 'country-blocked', status: 403 };
  if (c.methods.size > 0 && !c.methods.has(facts.method)) return { kind: 'block', reason: 'method-not-allowed', status: 405 };
  if (rules.maxBodyBytes !== null && facts.bodyBytes !== null && facts.bodyBytes > rules.maxBodyBytes) {
    return { kind: 'block', reason: 'body-too-large', status: 413 };
  }
  if (rules.rateLimit) {
    const r = limiter.take(route.hostnameId, facts.ip, rules.rateLimit, nowMs);
    return r instanceof Promise ? r.then(limited) : limited(r);
  }
  return ALLOW;
}

// ---- validation ----

const MAX_LIST = 1000;
const MAX_METHODS = 20;
const MAX_BODY_BYTES = 5 * 1024 ** 4; // 5 TiB
const METHOD = /^[A-Za-z][A-Za-z0-9_-]{0,31}$/;
const COUNTRY = /^[A-Za-z]{2}$/;
const RULE_FIELDS: ReadonlySet<string> = new Set(Object.keys(NO_RULES));
const RATE_FIELDS: ReadonlySet<string> = new Set(['requestsPerSecond', 'burst', 'banAfter', 'banWindowSeconds', 'banSeconds', 'maxBanSeconds']);

class RuleError extends Error {}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function knownFieldsOnly(obj: Record<string, unknown>, known: ReadonlySet<string>, path: string): void {
  for (const k of Object.keys(obj)) {
    if (!known.has(k)) throw new RuleError(`${path}.${k.slice(0, 64)}: unknown field`);
  }
}

/** A list of strings, each checked (and normalised) by `item`, duplicates dropped. */
function stringList(v: unknown, path: string, max: number, what: string, item: (s: string) => string | undefined): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new RuleError(`${path}: must be an array`);
  if (v.length > max) throw new RuleError(`${path}: at most ${max} entries`);
  const out = new Set<string>();
  v.forEach((raw: unknown, i) => {
    const ok = typeof raw === 'string' ? item(raw) : undefined;
    if (ok === undefined) throw new RuleError(`${path}[${i}]: ${what}`);
    out.add(ok);
  });
  return [...out];
}

function number(v: unknown, path: string, min: number, max: number, integer: boolean): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new RuleError(`${path}: must be a number`);
  if (integer && !Number.isInteger(v)) throw new RuleError(`${path}: must be a whole number`);
  if (v < min || v > max) throw new RuleError(`${path}: must be ${min} to ${max}`);
  return v;
}

function rateLimit(v: unknown, path: string): RateLimitRule | null {
  if (v === undefined || v === null) return null;
  if (!isRecord(v)) throw new RuleError(`${path}: must be an object or null`);
  knownFieldsOnly(v, RATE_FIELDS, path);
  if (v.requestsPerSecond === undefined) throw new RuleError(`${path}.requestsPerSecond: required`);
  const rps = number(v.requestsPerSecond, `${path}.requestsPerSecond`, 0.001, 1e6, false);
  const opt = (name: string, dflt: number, min: number, max: number): number =>
    v[name] === undefined ? dflt : number(v[name], `${path}.${name}`, min, max, true);
  const burst = opt('burst', Math.max(1, Math.ceil(rps)), 1, 1e6);
  const banAfter = opt('banAfter', 0, 0, 1e6);
  const banWindowSeconds = opt('banWindowSeconds', 60, 1, 86400);
  const banSeconds = opt('banSeconds', 60, 1, 86400 * 30);
  // The default ceiling never undercuts an explicit first ban.
  const maxBanSeconds = opt('maxBanSeconds', Math.max(3600, banSeconds), 1, 86400 * 365);
  if (maxBanSeconds < banSeconds) throw new RuleError(`${path}.maxBanSeconds: must be at least banSeconds (${banSeconds})`);
  return { requestsPerSecond: rps, burst, banAfter, banWindowSeconds, banSeconds, maxBanSeconds };
}

function parseRules(input: unknown): HostRules {
  if (!isRecord(input)) throw new RuleError('rules: must be an object');
  knownFieldsOnly(input, RULE_FIELDS, 'rules');
  const range = (s: string): string | undefined => (clientRange(s) ? s.toLowerCase() : undefined);
  const maxBody = input.maxBodyBytes;
  return {
    allowIps: stringList(input.allowIps, 'rules.allowIps', MAX_LIST, 'not an IP address or CIDR', range),
    blockIps: stringList(input.blockIps, 'rules.blockIps', MAX_LIST, 'not an IP address or CIDR', range),
    blockCountries: stringList(input.blockCountries, 'rules.blockCountries', MAX_LIST, 'not a two-letter country code', (s) =>
      COUNTRY.test(s) ? s.toUpperCase() : undefined,
    ),
    allowedMethods: stringList(input.allowedMethods, 'rules.allowedMethods', MAX_METHODS, 'not an HTTP method name', (s) =>
      METHOD.test(s) ? s.toUpperCase() : undefined,
    ),
    maxBodyBytes: maxBody === undefined || maxBody === null ? null : number(maxBody, 'rules.maxBodyBytes', 0, MAX_BODY_BYTES, true),
    rateLimit: rateLimit(input.rateLimit, 'rules.rateLimit'),
  };
}

/**
 * Rules as a client sent them (parsed JSON) -> complete HostRules, or an error naming the field
 * (`rules.blockIps[2]: not an IP address or CIDR`). Missing fields take the NO_RULES defaults; a
 * partial rateLimit gets banAfter 0, banWindowSeconds 60, banSeconds 60, maxBanSeconds 3600 (or
 * banSeconds when larger), burst ceil(requestsPerSecond) (at least 1).
 */
export function validateRules(input: unknown): { rules: HostRules } | { error: string } {
  try {
    return { rules: parseRules(input) };
  } catch (err) {
    if (err instanceof RuleError) return { error: err.message };
    throw err;
  }
}
