// What a bucket's lifecycle rules (issue 35) do to its objects: which rule expires a current object
// when (x-amz-expiration and the lifecycle job share it), and, for one key's versions, what the job
// removes. Pure: no storage, no clock. The rules are read and checked at the S3 surface
// (src/s3/lifecycle.ts) and stored as they are (db/repos/bucket-lifecycle.ts).
import type { LifecycleFilter, LifecycleRule } from '../db/repos/bucket-lifecycle.js';
import type { ObjectTag } from '../db/repos/objects.js';

export type { LifecycleFilter, LifecycleRule };

const DAY_MS = 86_400_000;

/** What the rules look at in an object version (an ObjectRecord is one). */
export interface LifecycleSubject {
  key: string;
  size: number;
  tagging?: readonly ObjectTag[] | undefined;
  /** Unix ms. */
  lastModified: number;
}

/** Whether a rule's filter takes the object: its prefix, every tag it names, and its size bounds. */
export function filterMatches(f: LifecycleFilter, o: Pick<LifecycleSubject, 'key' | 'size' | 'tagging'>): boolean {
  if (!o.key.startsWith(f.prefix)) return false;
  if (f.sizeGreaterThan !== null && !(o.size > f.sizeGreaterThan)) return false;
  if (f.sizeLessThan !== null && !(o.size < f.sizeLessThan)) return false;
  return f.tags.every(([k, v]) => o.tagging?.some(([tk, tv]) => tk === k && tv === v) === true);
}

/**
 * When `days` after `fromMs` comes due, as S3 counts: the moment plus the days, rounded up to the next
 * midnight UTC (created 1/15 10:30 with 3 days: due 1/19 00:00).
 */
export function dueAfterDays(fromMs: number, days: number): number {
  return Math.floor((fromMs + days * DAY_MS) / DAY_MS) * DAY_MS + DAY_MS;
}

/** The enabled rule that expires a current object first, and when; undefined when none does. */
export function currentExpiration(rules: readonly LifecycleRule[], o: LifecycleSubject): { ruleId: string; at: number } | undefined {
  let best: { ruleId: string; at: number } | undefined;
  for (const r of rules) {
    if (!r.enabled || !r.expiration || 'expiredObjectDeleteMarker' in r.expiration || !filterMatches(r.filter, o)) continue;
    const at = 'days' in r.expiration ? dueAfterDays(o.lastModified, r.expiration.days) : r.expiration.date;
    if (!best || at < best.at) best = { ruleId: r.id, at };
  }
  return best;
}

/** `x-amz-expiration` for a current object: `expiry-date="<HTTP date>", rule-id="<id>"`, or undefined. */
export function expirationHeader(rules: readonly LifecycleRule[], o: LifecycleSubject): string | undefined {
  const e = currentExpiration(rules, o);
  if (!e) return undefined;
  return `expiry-date="${new Date(e.at).toUTCString()}", rule-id="${e.ruleId.replace(/["\\]/g, '\\$&')}"`;
}

/** Whether the current object `o` is due by `now` (the job's test, run again inside the delete's transaction). */
export function currentDue(rules: readonly LifecycleRule[], o: LifecycleSubject, now: number): boolean {
  const e = currentExpiration(rules, o);
  return e !== undefined && e.at <= now;
}

/** One version of a key as the lifecycle job sees it. */
export interface KeyVersion extends LifecycleSubject {
  /** null: the "null" version. */
  versionId: string | null;
  deleteMarker: boolean;
}

/** What the lifecycle job does to one key. */
export interface KeyPlan {
  /** The current version is due (Expiration Days or Date): deleted as DeleteObject does (a delete marker on a versioned bucket). */
  expireCurrent: boolean;
  /** Noncurrent versions and delete markers due (NoncurrentVersionExpiration): removed for good, by id. */
  removeNoncurrent: (string | null)[];
  /** The latest version is a delete marker with no other version left (ExpiredObjectDeleteMarker): removed, by id. */
  removeMarker: { versionId: string | null } | null;
}

/** A delete marker has no bytes and no tags. */
const markerSubject = (key: string): Pick<LifecycleSubject, 'key' | 'size' | 'tagging'> => ({ key, size: 0 });

/**
 * What the rules do to one key at `now`, given its versions (of one key) newest first (versions[0] the latest: the
 * current object, or a delete marker). A noncurrent version became noncurrent when the version after
 * it was made (S3's count for NoncurrentDays); NewerNoncurrentVersions keeps that many newer noncurrent
 * versions (delete markers count) whatever their age. A delete marker is "expired" once no other
 * version is left, counting the noncurrent ones this plan removes.
 */
export function planKey(rules: readonly LifecycleRule[], versions: readonly KeyVersion[], now: number): KeyPlan {
  const plan: KeyPlan = { expireCurrent: false, removeNoncurrent: [], removeMarker: null };
  const latest = versions[0];
  if (!latest) return plan;
  const { key } = latest;
  if (!latest.deleteMarker) plan.expireCurrent = currentDue(rules, latest, now);
  for (let i = 1; i < versions.length; i++) {
    const v = versions[i] as KeyVersion;
    const noncurrentSince = (versions[i - 1] as KeyVersion).lastModified;
    const subject = v.deleteMarker ? markerSubject(key) : v;
    const due = rules.some((r) => {
      const nc = r.noncurrentExpiration;
      if (!r.enabled || !nc || !filterMatches(r.filter, subject)) return false;
      // i - 1 noncurrent versions are newer than this one.
      if (nc.newerNoncurrentVersions !== null && i - 1 < nc.newerNoncurrentVersions) return false;
      return dueAfterDays(noncurrentSince, nc.noncurrentDays) <= now;
    });
    if (due) plan.removeNoncurrent.push(v.versionId);
  }
  const alone = versions.length - 1 === plan.removeNoncurrent.length;
  if (latest.deleteMarker && alone) {
    const expires = rules.some((r) => r.enabled && r.expiration !== null && 'expiredObjectDeleteMarker' in r.expiration && filterMatches(r.filter, markerSubject(key)));
    if (expires) plan.removeMarker = { versionId: latest.versionId };
  }
  return plan;
}

/** Whether some enabled rule filters by tag: the job then reads each version's tags. */
export function rulesNeedTags(rules: readonly LifecycleRule[]): boolean {
  return rules.some((r) => r.enabled && r.filter.tags.length > 0);
}

/**
 * The longest prefix shared by the enabled rules that `acts`: a walk under it sees every key they may
 * apply to (a bucket whose rules all name `logs/` walks `logs/` only). undefined: no such rule.
 */
export function sharedPrefix(rules: readonly LifecycleRule[], acts: (r: LifecycleRule) => boolean): string | undefined {
  let shared: string | undefined;
  for (const r of rules) {
    if (!r.enabled || !acts(r)) continue;
    const p = r.filter.prefix;
    if (shared === undefined) shared = p;
    else {
      let n = 0;
      while (n < shared.length && n < p.length && shared.charCodeAt(n) === p.charCodeAt(n)) n++;
      shared = shared.slice(0, n);
    }
  }
  // Never half a surrogate pair: the walk's bound is compared as UTF-8.
  if (shared !== undefined && /[\uD800-\uDBFF]$/.test(shared)) shared = shared.slice(0, -1);
  return shared;
}

/** Rules with an action on versions (the walk's first phase); AbortIncompleteMultipartUpload acts on uploads. */
export const actsOnVersions = (r: LifecycleRule): boolean => r.expiration !== null || r.noncurrentExpiration !== null;
export const actsOnUploads = (r: LifecycleRule): boolean => r.abortIncompleteMultipartDays !== null;
