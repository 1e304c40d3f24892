// Evaluating a bucket policy (parse.ts) for one request, as IAM does: a statement applies when its
// principal, action, resource and every condition match; an applicable Deny decides at once (an
// explicit deny beats every allow, a key's own grant included); else an applicable Allow allows; else
// the policy says nothing and the caller's own grants decide. Pure: the request's facts in, a decision out.
import { isIP } from 'node:net';
import { unmappedPeer } from '../../net/ip.js';
import type { BlockList } from 'node:net';
import { globMatches, type BucketPolicy, type PolicyCondition, type PolicyStatement } from './parse.js';

export type PolicyDecision = 'allow' | 'deny' | 'none';

/** Who is asking: nobody (an unsigned request), or a user through one of their keys. */
export type PolicyPrincipal = { anonymous: true } | { anonymous: false; userName: string; accessKeyId: string };

export interface PolicyRequest {
  principal: PolicyPrincipal;
  /** `s3:GetObject` and the like. */
  action: string;
  /** `arn:aws:s3:::bucket` or `arn:aws:s3:::bucket/key`. */
  resource: string;
  /** Condition keys in lower case (`aws:sourceip`, `aws:securetransport` as 'true'/'false', `s3:prefix`); absent: not in the request. */
  context: Readonly<Record<string, string | undefined>>;
}

function principalMatches(s: PolicyStatement, p: PolicyPrincipal): boolean {
  if (s.principals === '*') return true;
  if (p.anonymous) return false;
  return s.principals.some((n) => n === p.userName || n === p.accessKeyId);
}

function anyMatches(patterns: readonly string[], value: string, ignoreCase: boolean): boolean {
  return patterns.some((pattern) => pattern === '*' || globMatches(pattern, value, ignoreCase));
}

function ipIn(ranges: BlockList | undefined, ip: string): boolean {
  const address = unmappedPeer(ip);
  const v = isIP(address);
  if (v === 0 || !ranges) return false;
  return ranges.check(address, v === 4 ? 'ipv4' : 'ipv6');
}

function conditionHolds(c: PolicyCondition, context: PolicyRequest['context']): boolean {
  const value = context[c.key];
  if (c.operator === 'Null') return c.values.includes(value === undefined ? 'true' : 'false');
  // A negated operator holds for a request without the key; a positive one only with IfExists.
  const negated = c.operator === 'StringNotEquals' || c.operator === 'StringNotEqualsIgnoreCase' || c.operator === 'StringNotLike' || c.operator === 'NotIpAddress';
  if (value === undefined) return negated || c.ifExists;
  switch (c.operator) {
    case 'StringEquals': return c.values.includes(value);
    case 'StringNotEquals': return !c.values.includes(value);
    case 'StringEqualsIgnoreCase': return c.values.some((x) => x.toLowerCase() === value.toLowerCase());
    case 'StringNotEqualsIgnoreCase': return !c.values.some((x) => x.toLowerCase() === value.toLowerCase());
    case 'StringLike': return c.values.some((x) => globMatches(x, value, false));
    case 'StringNotLike': return !c.values.some((x) => globMatches(x, value, false));
    case 'IpAddress': return ipIn(c.ranges, value);
    case 'NotIpAddress': return !ipIn(c.ranges, value);
    case 'Bool': return c.values.includes(value.toLowerCase());
  }
}

function applies(s: PolicyStatement, r: PolicyRequest): boolean {
  if (!principalMatches(s, r.principal)) return false;
  if (anyMatches(s.actions.patterns, r.action, true) === s.actions.not) return false;
  if (anyMatches(s.resources.patterns, r.resource, false) === s.resources.not) return false;
  return s.conditions.every((c) => conditionHolds(c, r.context));
}

export function evaluatePolicy(policy: BucketPolicy, r: PolicyRequest): PolicyDecision {
  let allowed = false;
  for (const s of policy.statements) {
    if (!applies(s, r)) continue;
    if (s.effect === 'Deny') return 'deny';
    allowed = true;
  }
  return allowed ? 'allow' : 'none';
}

/** Whether the policy lets anyone at all in (GetBucketPolicyStatus's IsPublic): an Allow for "*" with no condition narrowing it to addresses. */
export function isPublicPolicy(policy: BucketPolicy): boolean {
  return policy.statements.some(
    (s) => s.effect === 'Allow' && s.principals === '*' && !s.conditions.some((c) => c.key === 'aws:sourceip' && c.operator === 'IpAddress'),
  );
}
