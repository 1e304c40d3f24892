// Bucket policies (issue 35): the IAM JSON subset that deployments of self-hosted S3 use, read and
// checked once when it is stored, so that evaluating it per request is plain matching. A document
// outside the subset is refused with S3's MalformedPolicy and the reason, never stored half-understood.
//
// Supported: Version 2012-10-17 or 2008-10-17; Statement (one or a list) with Sid, Effect Allow/Deny,
// Principal "*" or {"AWS": "*" | name | [names]} (names: s3edge user names, `arn:aws:iam::<any>:user/<name>`
// or access key ids), Action/NotAction (s3:... with * and ? wildcards), Resource/NotResource
// (arn:aws:s3:::<this bucket> and arn:aws:s3:::<this bucket>/<key pattern>, or "*"), Condition with the
// operators below on the keys below. Not supported, and refused by name: NotPrincipal, policy variables.
import { isIP, type BlockList } from 'node:net';
import { parseRange, rangeList } from '../../net/ip.js';
import { S3_POLICY_ACTIONS } from './actions.js';

/** The largest policy document S3 takes (20 KB). */
export const MAX_POLICY_BYTES = 20 * 1024;

export class MalformedPolicyError extends Error {}

export type Effect = 'Allow' | 'Deny';

/** A list of patterns, or everything but them (NotAction, NotResource). */
export interface PatternSet {
  not: boolean;
  patterns: string[];
}

export type ConditionOperator =
  | 'StringEquals' | 'StringNotEquals' | 'StringEqualsIgnoreCase' | 'StringNotEqualsIgnoreCase'
  | 'StringLike' | 'StringNotLike' | 'IpAddress' | 'NotIpAddress' | 'Bool' | 'Null';

export interface PolicyCondition {
  operator: ConditionOperator;
  /** `...IfExists`: a request without the key passes. */
  ifExists: boolean;
  /** Lower-case (condition keys are case-insensitive). */
  key: string;
  values: string[];
  /** IpAddress and NotIpAddress: the values as a list built once, when the policy is read. */
  ranges?: BlockList;
}

export interface PolicyStatement {
  sid: string | null;
  effect: Effect;
  /** '*' (anyone, signed or not), or the names of users and access keys. */
  principals: '*' | string[];
  actions: PatternSet;
  resources: PatternSet;
  conditions: PolicyCondition[];
}

export interface BucketPolicy {
  version: string;
  statements: PolicyStatement[];
}

const OPERATORS: readonly ConditionOperator[] = [
  'StringEquals', 'StringNotEquals', 'StringEqualsIgnoreCase', 'StringNotEqualsIgnoreCase',
  'StringLike', 'StringNotLike', 'IpAddress', 'NotIpAddress', 'Bool', 'Null',
];

/** The condition keys a request carries here (lower case), and the operators each takes. */
export const CONDITION_KEYS: Readonly<Record<string, 'string' | 'ip' | 'bool'>> = {
  'aws:sourceip': 'ip',
  'aws:referer': 'string',
  'aws:securetransport': 'bool',
  'aws:useragent': 'string',
  'aws:username': 'string',
  's3:prefix': 'string',
  's3:delimiter': 'string',
};

const fail = (reason: string): never => {
  throw new MalformedPolicyError(reason);
};

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A string or a non-empty list of strings, as IAM writes both. */
function stringList(v: unknown, what: string): string[] {
  const list = Array.isArray(v) ? v : [v];
  if (list.length === 0 || !list.every((x) => typeof x === 'string' && x !== '')) fail(`${what} must be a string or a list of strings`);
  return list as string[];
}

function principalsOf(v: unknown): '*' | string[] {
  if (v === '*') return '*';
  if (!isRecord(v) || Object.keys(v).some((k) => k !== 'AWS') || v['AWS'] === undefined) {
    return fail('Invalid principal in policy: use "*" or {"AWS": [...]} naming s3edge users or access keys');
  }
  const names = stringList(v['AWS'], 'Principal AWS');
  if (names.includes('*')) return '*';
  return names.map((n) => {
    const arn = /^arn:aws:iam::[^:]*:(?:user|root)\/?(.*)$/.exec(n);
    const name = arn ? (arn[1] ?? '') : n;
    if (name === '' || /[\s*?]/.test(name)) fail(`Invalid principal in policy: ${n}`);
    return name;
  });
}

function actionsOf(s: Record<string, unknown>): PatternSet {
  const not = s['NotAction'] !== undefined;
  if (not && s['Action'] !== undefined) fail('A statement has Action or NotAction, not both');
  const raw = not ? s['NotAction'] : s['Action'];
  if (raw === undefined) fail('Missing required field Action');
  const patterns = stringList(raw, not ? 'NotAction' : 'Action').map((a) => {
    if (a === '*') return a;
    if (!/^s3:[A-Za-z*?]+$/i.test(a)) fail(`Policy has invalid action: ${a}`);
    // A name without a wildcard must be an S3 action (a typo would otherwise match nothing, silently).
    if (!/[*?]/.test(a) && !S3_POLICY_ACTIONS.has(a.toLowerCase())) fail(`Policy has invalid action: ${a}`);
    return a;
  });
  return { not, patterns };
}

function resourcesOf(s: Record<string, unknown>, bucket: string): PatternSet {
  const not = s['NotResource'] !== undefined;
  if (not && s['Resource'] !== undefined) fail('A statement has Resource or NotResource, not both');
  const raw = not ? s['NotResource'] : s['Resource'];
  if (raw === undefined) fail('Missing required field Resource');
  const patterns = stringList(raw, not ? 'NotResource' : 'Resource').map((r) => {
    if (r === '*') return r;
    const m = /^arn:aws:s3:::([^/]+)(\/.*)?$/.exec(r);
    if (!m) fail(`Policy has invalid resource: ${r} (write arn:aws:s3:::${bucket} or arn:aws:s3:::${bucket}/prefix/*)`);
    if (!globMatches(m![1]!, bucket, false)) fail(`Policy has invalid resource: ${r} is not in bucket ${bucket}`);
    if (/\$\{/.test(r)) fail(`Policy variables are not supported: ${r}`);
    return r;
  });
  return { not, patterns };
}

function conditionsOf(v: unknown): PolicyCondition[] {
  if (v === undefined) return [];
  if (!isRecord(v)) return fail('Condition must be an object of operators');
  const out: PolicyCondition[] = [];
  for (const [rawOperator, block] of Object.entries(v)) {
    const ifExists = rawOperator.endsWith('IfExists');
    const operator = (ifExists ? rawOperator.slice(0, -'IfExists'.length) : rawOperator) as ConditionOperator;
    if (!OPERATORS.includes(operator)) fail(`Invalid Condition type: ${rawOperator}`);
    if (!isRecord(block)) fail(`Condition ${rawOperator} must be an object of keys`);
    for (const [rawKey, rawValues] of Object.entries(block as Record<string, unknown>)) {
      const key = rawKey.toLowerCase();
      const kind = CONDITION_KEYS[key];
      if (!kind) fail(`Policy has an invalid condition key: ${rawKey} (supported: aws:SourceIp, aws:Referer, aws:SecureTransport, aws:UserAgent, aws:username, s3:prefix, s3:delimiter)`);
      const list = Array.isArray(rawValues) ? rawValues : [rawValues];
      if (list.length === 0 || !list.every((x) => ['string', 'boolean', 'number'].includes(typeof x))) fail(`Condition ${rawOperator} ${rawKey}: values must be strings`);
      const values = list.map(String);
      if (operator === 'IpAddress' || operator === 'NotIpAddress') {
        if (kind !== 'ip') fail(`Condition ${rawOperator} applies to aws:SourceIp, not ${rawKey}`);
        for (const value of values) if ('error' in parseRange(value)) fail(`Condition ${rawOperator} ${rawKey}: ${value} is not an IP address or CIDR range`);
      } else if (operator === 'Bool' || operator === 'Null') {
        if (!values.every((x) => x === 'true' || x === 'false')) fail(`Condition ${rawOperator} ${rawKey}: values must be true or false`);
      } else if (kind === 'ip' && !values.every((x) => isIP(x) !== 0)) {
        fail(`Condition ${rawOperator} ${rawKey}: compare addresses with IpAddress or NotIpAddress`);
      }
      const ip = operator === 'IpAddress' || operator === 'NotIpAddress';
      out.push({ operator, ifExists, key, values, ...(ip ? { ranges: rangeList(values) } : {}) });
    }
  }
  return out;
}

/** Reads and checks a policy for `bucket`; MalformedPolicyError says what is wrong and how to write it. */
export function parseBucketPolicy(text: string, bucket: string): BucketPolicy {
  if (Buffer.byteLength(text, 'utf8') > MAX_POLICY_BYTES) fail(`Policies must be at most ${MAX_POLICY_BYTES} bytes`);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return fail("Policies must be valid JSON and the first byte must be '{'");
  }
  if (!isRecord(doc)) return fail("Policies must be valid JSON and the first byte must be '{'");
  const version = doc['Version'] === undefined ? '2008-10-17' : doc['Version'];
  if (version !== '2012-10-17' && version !== '2008-10-17') fail(`Invalid Version: ${String(version)} (use "2012-10-17")`);
  for (const k of Object.keys(doc)) if (!['Version', 'Id', 'Statement'].includes(k)) fail(`Unknown field ${k}`);
  if (doc['Statement'] === undefined) fail('Missing required field Statement');
  const raw = Array.isArray(doc['Statement']) ? doc['Statement'] : [doc['Statement']];
  if (raw.length === 0) fail('Statement must not be empty');
  const statements = raw.map((s): PolicyStatement => {
    if (!isRecord(s)) return fail('Each statement must be an object');
    for (const k of Object.keys(s)) {
      if (k === 'NotPrincipal') fail('NotPrincipal is not supported: name the principals the statement is for');
      if (!['Sid', 'Effect', 'Principal', 'Action', 'NotAction', 'Resource', 'NotResource', 'Condition'].includes(k)) fail(`Unknown field ${k}`);
    }
    if (s['Effect'] === undefined) fail('Missing required field Effect');
    if (s['Effect'] !== 'Allow' && s['Effect'] !== 'Deny') fail(`Invalid effect: ${String(s['Effect'])}`);
    if (s['Principal'] === undefined) fail('Missing required field Principal');
    if (s['Sid'] !== undefined && typeof s['Sid'] !== 'string') fail('Sid must be a string');
    return {
      sid: typeof s['Sid'] === 'string' ? s['Sid'] : null,
      effect: s['Effect'] as Effect,
      principals: principalsOf(s['Principal']),
      actions: actionsOf(s),
      resources: resourcesOf(s, bucket),
      conditions: conditionsOf(s['Condition']),
    };
  });
  return { version: version as string, statements };
}

/** IAM's wildcard match: `*` any run of characters, `?` one; actions ignore case, resources do not. */
export function globMatches(pattern: string, value: string, ignoreCase: boolean): boolean {
  const p = ignoreCase ? pattern.toLowerCase() : pattern;
  const v = ignoreCase ? value.toLowerCase() : value;
  // Iterative match with backtracking to the last star: linear in practice, no regular expression.
  let pi = 0;
  let vi = 0;
  let star = -1;
  let mark = 0;
  while (vi < v.length) {
    if (pi < p.length && (p[pi] === '?' || p[pi] === v[vi])) {
      pi++;
      vi++;
    } else if (pi < p.length && p[pi] === '*') {
      star = pi++;
      mark = vi;
    } else if (star >= 0) {
      pi = star + 1;
      vi = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.length && p[pi] === '*') pi++;
  return pi === p.length;
}
