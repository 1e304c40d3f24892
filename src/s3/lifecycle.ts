// Bucket lifecycle (issue 35): a LifecycleConfiguration read and checked as S3 checks it, and written
// back as GetBucketLifecycleConfiguration answers it. Pure: no storage, no clock. What the rules do to
// objects (x-amz-expiration, the lifecycle job) is src/lifecycle/rules.ts.
//
// Supported: Rule (at most 1000) with ID, Status, Filter (Prefix, Tag, ObjectSizeGreaterThan,
// ObjectSizeLessThan, or And of them; the legacy top-level Prefix too), Expiration (Days, Date or
// ExpiredObjectDeleteMarker), NoncurrentVersionExpiration (NoncurrentDays, NewerNoncurrentVersions),
// AbortIncompleteMultipartUpload (DaysAfterInitiation). Transitions are refused by name: there is one
// storage class here.
import type { LifecycleFilter, LifecycleRule } from '../db/repos/bucket-lifecycle.js';
import type { ObjectTag } from '../db/repos/objects.js';
import { S3Error } from '../errors/s3-errors.js';
import { childNames, childValues, isNode, leafText, parseXmlDocument, type XmlNode } from './request-body-xml.js';
import type { XmlObject } from './xml.js';

export const MAX_LIFECYCLE_RULES = 1000;
const MAX_ID_LENGTH = 255;
const DAY_MS = 86_400_000;

const RULE_ELEMENTS = new Set(['ID', 'Status', 'Filter', 'Prefix', 'Expiration', 'NoncurrentVersionExpiration', 'AbortIncompleteMultipartUpload', 'Transition', 'NoncurrentVersionTransition']);

const malformed = (): S3Error => new S3Error('MalformedXML');
const invalid = (message: string): S3Error => new S3Error('InvalidArgument', message);

function only(node: XmlNode, allowed: readonly string[]): void {
  if (childNames(node).some((n) => !allowed.includes(n))) throw malformed();
}

/** The text of the one `name` child, or undefined; two are malformed. */
function one(node: XmlNode, name: string): string | undefined {
  const values = childValues(node, name);
  if (values.length > 1) throw malformed();
  return values.length === 0 ? undefined : leafText(values[0]).trim();
}

function child(node: XmlNode, name: string): XmlNode | undefined {
  const values = childValues(node, name);
  if (values.length > 1) throw malformed();
  if (values.length === 0) return undefined;
  const v = values[0];
  if (isNode(v)) return v;
  if (typeof v === 'string' && v.trim() === '') return {};
  throw malformed();
}

/** A positive whole number; else InvalidArgument with `message` (S3's words for the field). */
function positiveInt(text: string | undefined, message: string): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d{1,9}$/.test(text) || Number(text) < 1) throw invalid(message);
  return Number(text);
}

function sizeOf(text: string | undefined, what: string): number | null {
  if (text === undefined) return null;
  if (!/^\d{1,16}$/.test(text)) throw invalid(`${what} must be a non-negative integer`);
  return Number(text);
}

function tagOf(node: unknown): ObjectTag {
  if (!isNode(node)) throw malformed();
  only(node, ['Key', 'Value']);
  const key = one(node, 'Key');
  const value = one(node, 'Value') ?? '';
  if (key === undefined || key === '') throw malformed();
  return [key, value];
}

function filterOf(rule: XmlNode): LifecycleFilter {
  const legacy = one(rule, 'Prefix');
  const filter = child(rule, 'Filter');
  if (legacy !== undefined && filter !== undefined) throw malformed();
  if (filter === undefined) return { prefix: legacy ?? '', tags: [], sizeGreaterThan: null, sizeLessThan: null, form: 'legacy-prefix' };
  only(filter, ['Prefix', 'Tag', 'ObjectSizeGreaterThan', 'ObjectSizeLessThan', 'And']);
  // Outside And, a Filter holds one condition at most.
  if (childNames(filter).length > 1) throw malformed();
  const and = child(filter, 'And');
  const source = and ?? filter;
  if (and) only(and, ['Prefix', 'Tag', 'ObjectSizeGreaterThan', 'ObjectSizeLessThan']);
  const prefix = one(source, 'Prefix');
  const out: LifecycleFilter = {
    prefix: prefix ?? '',
    tags: childValues(source, 'Tag').map(tagOf),
    sizeGreaterThan: sizeOf(one(source, 'ObjectSizeGreaterThan'), 'ObjectSizeGreaterThan'),
    sizeLessThan: sizeOf(one(source, 'ObjectSizeLessThan'), 'ObjectSizeLessThan'),
    form: 'filter',
    ...(prefix === '' ? { emptyPrefix: true as const } : {}),
  };
  if (!and && out.tags.length > 1) throw malformed();
  if (new Set(out.tags.map(([k]) => k)).size !== out.tags.length) throw invalid('Duplicate Tag Keys are not allowed.');
  if (out.sizeGreaterThan !== null && out.sizeLessThan !== null && out.sizeLessThan <= out.sizeGreaterThan) {
    throw invalid('ObjectSizeLessThan must be greater than ObjectSizeGreaterThan');
  }
  return out;
}

function expirationOf(rule: XmlNode): LifecycleRule['expiration'] {
  const node = child(rule, 'Expiration');
  if (!node) return null;
  only(node, ['Days', 'Date', 'ExpiredObjectDeleteMarker']);
  const days = one(node, 'Days');
  const date = one(node, 'Date');
  const marker = one(node, 'ExpiredObjectDeleteMarker');
  if ([days, date, marker].filter((x) => x !== undefined).length !== 1) throw malformed();
  if (days !== undefined) return { days: positiveInt(days, "'Days' for Expiration action must be a positive integer") as number };
  if (date !== undefined) {
    const ms = Date.parse(date);
    if (!/^\d{4}-\d{2}-\d{2}/.test(date) || Number.isNaN(ms)) throw invalid("'Date' must be in ISO 8601 format");
    if (ms % DAY_MS !== 0) throw invalid("'Date' must be at midnight GMT");
    return { date: ms };
  }
  if (marker !== 'true' && marker !== 'false') throw malformed();
  return marker === 'true' ? { expiredObjectDeleteMarker: true } : null;
}

function ruleOf(node: unknown): LifecycleRule {
  if (!isNode(node)) throw malformed();
  only(node, [...RULE_ELEMENTS]);
  if (childValues(node, 'Transition').length > 0 || childValues(node, 'NoncurrentVersionTransition').length > 0) {
    throw new S3Error('InvalidRequest', 'Transitions are not supported: this gateway has one storage class (STANDARD)');
  }
  const id = one(node, 'ID') ?? '';
  if (id.length > MAX_ID_LENGTH) throw invalid(`ID length should not exceed allowed limit of ${MAX_ID_LENGTH}`);
  const status = one(node, 'Status');
  if (status !== 'Enabled' && status !== 'Disabled') throw malformed();
  const filter = filterOf(node);
  const expiration = expirationOf(node);
  const nc = child(node, 'NoncurrentVersionExpiration');
  let noncurrentExpiration: LifecycleRule['noncurrentExpiration'] = null;
  if (nc) {
    only(nc, ['NoncurrentDays', 'NewerNoncurrentVersions']);
    const days = positiveInt(one(nc, 'NoncurrentDays'), "'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer");
    if (days === undefined) throw malformed();
    const newer = positiveInt(one(nc, 'NewerNoncurrentVersions'), "'NewerNoncurrentVersions' must be a positive integer");
    if (newer !== undefined && newer > 100) throw invalid('NewerNoncurrentVersions must be at most 100');
    noncurrentExpiration = { noncurrentDays: days, newerNoncurrentVersions: newer ?? null };
  }
  const abort = child(node, 'AbortIncompleteMultipartUpload');
  let abortIncompleteMultipartDays: number | null = null;
  if (abort) {
    only(abort, ['DaysAfterInitiation']);
    const days = positiveInt(one(abort, 'DaysAfterInitiation'), "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer");
    if (days === undefined) throw malformed();
    if (filter.tags.length > 0) throw new S3Error('InvalidRequest', 'AbortIncompleteMultipartUpload cannot be specified with Tags.');
    abortIncompleteMultipartDays = days;
  }
  if (expiration && 'expiredObjectDeleteMarker' in expiration && filter.tags.length > 0) {
    throw new S3Error('InvalidRequest', 'ExpiredObjectDeleteMarker cannot be specified with Tags.');
  }
  if (!expiration && !noncurrentExpiration && abortIncompleteMultipartDays === null) {
    throw new S3Error('InvalidRequest', 'At least one action needs to be specified in a rule');
  }
  return { id, enabled: status === 'Enabled', filter, expiration, noncurrentExpiration, abortIncompleteMultipartDays };
}

/** Parses and checks a `<LifecycleConfiguration>`; a rule without ID gets one, as S3 gives it. */
export function parseLifecycleConfiguration(body: Buffer, newId: () => string): LifecycleRule[] {
  const root = parseXmlDocument(body, 'LifecycleConfiguration');
  only(root, ['Rule']);
  const rules = childValues(root, 'Rule').map(ruleOf);
  if (rules.length === 0) throw malformed();
  if (rules.length > MAX_LIFECYCLE_RULES) throw invalid(`The number of lifecycle rules must not exceed ${MAX_LIFECYCLE_RULES}`);
  for (const r of rules) if (r.id === '') r.id = newId();
  if (new Set(rules.map((r) => r.id)).size !== rules.length) throw invalid('Rule ID must be unique. Found same ID for more than one rule');
  return rules;
}

function filterXml(f: LifecycleFilter): XmlObject {
  if (f.form === 'legacy-prefix') return { Prefix: f.prefix };
  const parts: XmlObject = {};
  if (f.prefix !== '' || f.emptyPrefix) parts['Prefix'] = f.prefix;
  if (f.tags.length > 0) parts['Tag'] = f.tags.map(([Key, Value]) => ({ Key, Value }));
  if (f.sizeGreaterThan !== null) parts['ObjectSizeGreaterThan'] = f.sizeGreaterThan;
  if (f.sizeLessThan !== null) parts['ObjectSizeLessThan'] = f.sizeLessThan;
  const count = Object.keys(parts).length + Math.max(0, f.tags.length - 1);
  return { Filter: count > 1 ? { And: parts } : parts };
}

/** The body of `<LifecycleConfiguration>` as GetBucketLifecycleConfiguration answers. */
export function lifecycleXml(rules: readonly LifecycleRule[]): XmlObject {
  return {
    Rule: rules.map((r) => ({
      ...(r.expiration
        ? {
            Expiration:
              'days' in r.expiration ? { Days: r.expiration.days }
              : 'date' in r.expiration ? { Date: new Date(r.expiration.date).toISOString().replace('.000Z', 'Z') }
              : { ExpiredObjectDeleteMarker: true },
          }
        : {}),
      ID: r.id,
      ...filterXml(r.filter),
      Status: r.enabled ? 'Enabled' : 'Disabled',
      ...(r.noncurrentExpiration
        ? {
            NoncurrentVersionExpiration: {
              NoncurrentDays: r.noncurrentExpiration.noncurrentDays,
              ...(r.noncurrentExpiration.newerNoncurrentVersions === null ? {} : { NewerNoncurrentVersions: r.noncurrentExpiration.newerNoncurrentVersions }),
            },
          }
        : {}),
      ...(r.abortIncompleteMultipartDays === null ? {} : { AbortIncompleteMultipartUpload: { DaysAfterInitiation: r.abortIncompleteMultipartDays } }),
    })),
  };
}
