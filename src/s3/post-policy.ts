// The POST policy of a browser upload (POST Object): parsing the base64 JSON document and checking a
// form against it, as AWS documents it ("POST Policy", sigv4-HTTPPOSTConstructPolicy) and as S3 answers
// (codes and messages in docs/COMPATIBILITY.md, "Browser POST uploads"). Pure: no I/O, no clock.
import { S3Error } from '../errors/s3-errors.js';

/** One form field: its name as sent (for messages) and its value (repeated fields joined by commas). */
export interface FormField {
  name: string;
  value: string;
}

/** Form fields by lower-cased name: AWS treats field names case-insensitively. */
export type FormFields = ReadonlyMap<string, FormField>;

export type PolicyCondition =
  | { op: 'eq' | 'starts-with'; field: string; value: string; text: string }
  | { op: 'content-length-range'; min: number; max: number; text: string }
  /** A condition S3 accepts into the document but that can never hold (a range bound that is not a number). */
  | { op: 'never'; text: string };

export interface PostPolicy {
  /** Epoch milliseconds. */
  expiration: number;
  conditions: PolicyCondition[];
}

/** Fields no condition needs to cover (SigV4 and SigV2 lists of the POST policy page). */
const EXEMPT = new Set(['x-amz-signature', 'file', 'policy', 'awsaccesskeyid', 'signature']);

export function isExemptField(name: string): boolean {
  return EXEMPT.has(name) || name.startsWith('x-ignore-');
}

function invalid(detail: string): S3Error {
  return new S3Error('InvalidPolicyDocument', `Invalid Policy: ${detail}`);
}

/** ISO 8601 in UTC ("2026-01-01T00:00:00Z", optional fraction), as S3 reads it; offsets and spaces are refused. */
const EXPIRATION = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?Z$/;

function parseExpiration(v: unknown): number {
  if (typeof v !== 'string') throw invalid(`Invalid 'expiration' value: '${String(v)}'`);
  const m = EXPIRATION.exec(v);
  const ms = m ? Date.parse(v) : NaN;
  // Date.parse rolls 2026-02-30 over into March; a date that does not exist is refused instead.
  if (!m || !Number.isFinite(ms) || new Date(ms).getUTCDate() !== Number(m[3])) throw invalid(`Invalid 'expiration' value: '${v}'`);
  return ms;
}

/** A condition as S3 prints it in "Policy Condition failed: [...]": a JSON array with ", " between items. */
function conditionText(items: readonly unknown[]): string {
  return `[${items.map((i) => JSON.stringify(i)).join(', ')}]`;
}

function rangeBound(v: unknown): number | undefined {
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw invalid('Invalid JSON.');
    if (v < 0) throw invalid('Invalid content-length-range: the bounds may not be negative.');
    return v;
  }
  if (typeof v === 'string' && /^\d{1,16}$/.test(v)) return Number(v);
  return undefined;
}

function parseCondition(c: unknown): PolicyCondition {
  if (Array.isArray(c)) {
    if (c.length === 0) throw invalid('Invalid Condition: missing operation identifier.');
    const [op, a, b] = c as unknown[];
    if (typeof op !== 'string') throw invalid('Invalid Condition: missing operation identifier.');
    const name = op.toLowerCase();
    if (name === 'content-length-range') {
      if (c.length !== 3) throw invalid('Invalid content-length-range: wrong number of arguments.');
      const min = rangeBound(a);
      const max = rangeBound(b);
      const text = conditionText(c);
      // S3 takes ["content-length-range", "test", "10"] into the policy and fails it at the upload.
      if (min === undefined || max === undefined) return { op: 'never', text };
      return { op: 'content-length-range', min, max, text };
    }
    if (name !== 'eq' && name !== 'starts-with') throw invalid(`Invalid Condition: unknown operation '${op}'.`);
    if (c.length !== 3) throw invalid(`Invalid ${op}: wrong number of arguments.`);
    if (typeof a !== 'string' || typeof b !== 'string') throw invalid('Invalid JSON.');
    // A name without its `$` names no field: the condition fails at the upload, as on S3.
    const text = conditionText(c);
    if (!a.startsWith('$')) return { op: 'never', text };
    return { op: name, field: a.slice(1).toLowerCase(), value: b, text };
  }
  if (typeof c === 'object' && c !== null) {
    const entries = Object.entries(c);
    if (entries.length !== 1) throw invalid('Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.');
    const [field, value] = entries[0] as [string, unknown];
    if (value === null) throw invalid('Invalid JSON.');
    if (typeof value !== 'string') throw invalid('Invalid Simple-Condition: value must be a string.');
    // S3 prints a simple condition as the eq array it stands for.
    return { op: 'eq', field: field.toLowerCase(), value, text: conditionText(['eq', `$${field}`, value]) };
  }
  throw invalid('Invalid condition test: must be a List or Object.');
}

/** Decodes and validates the `policy` field. Every malformed document is 400 InvalidPolicyDocument. */
export function parsePostPolicy(base64: string): PostPolicy {
  const compact = base64.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) throw invalid('invalid Base64 encoding.');
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(compact, 'base64').toString('utf8'));
  } catch {
    throw invalid('Invalid JSON.');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw invalid('Invalid JSON.');
  // Member names are case-sensitive: "EXPIRATION" is not the expiration (s3-tests expects 400).
  for (const name of Object.keys(doc)) {
    if (name !== 'expiration' && name !== 'conditions') throw invalid(`Unexpected: '${name.toLowerCase()}'`);
  }
  const { expiration, conditions } = doc as { expiration?: unknown; conditions?: unknown };
  if (expiration === undefined) throw invalid('Policy missing expiration.');
  if (conditions === undefined) throw invalid('Policy missing conditions.');
  if (!Array.isArray(conditions)) throw invalid("Invalid 'conditions' value: must be a List.");
  return { expiration: parseExpiration(expiration), conditions: conditions.map(parseCondition) };
}

function conditionFailed(c: PolicyCondition): S3Error {
  return new S3Error('AccessDenied', `Invalid according to Policy: Policy Condition failed: ${c.text}`);
}

/** starts-with on Content-Type: a comma-separated list passes only if every item does (AWS's rule). */
function startsWith(field: string, actual: string, prefix: string): boolean {
  if (field !== 'content-type' || !actual.includes(',')) return actual.startsWith(prefix);
  return actual.split(',').every((item) => item.trim().startsWith(prefix));
}

/**
 * Checks the form against the policy: expiration, then every eq / starts-with condition (a field the
 * form lacks fails, even with an empty prefix), then that every field is covered by some condition.
 * `fields` must already have `${filename}` expanded. A `bucket` condition is matched against the
 * addressed bucket, whatever a `bucket` field says. Returns the content-length-range bounds, checked
 * once the file's size is known (checkFileSize).
 */
export function checkPostPolicy(
  policy: PostPolicy,
  fields: FormFields,
  request: { now: number; bucket: string },
): { min: number; max: number } | undefined {
  if (request.now > policy.expiration) throw new S3Error('AccessDenied', 'Invalid according to Policy: Policy expired.');
  const covered = new Set<string>();
  let range: { min: number; max: number } | undefined;
  for (const c of policy.conditions) {
    switch (c.op) {
      case 'never':
        throw conditionFailed(c);
      case 'content-length-range':
        range = { min: Math.max(range?.min ?? 0, c.min), max: Math.min(range?.max ?? Infinity, c.max) };
        break;
      default: {
        covered.add(c.field);
        const actual = c.field === 'bucket' ? request.bucket : fields.get(c.field)?.value;
        const ok = actual !== undefined && (c.op === 'eq' ? actual === c.value : startsWith(c.field, actual, c.value));
        if (!ok) throw conditionFailed(c);
      }
    }
  }
  const extra = [...fields.keys()].filter((name) => !isExemptField(name) && !covered.has(name));
  if (extra.length > 0) {
    throw new S3Error('AccessDenied', `Invalid according to Policy: Extra input fields: ${extra.map((n) => fields.get(n)?.name ?? n).join(', ')}`);
  }
  return range;
}

/** content-length-range, inclusive at both ends: EntityTooSmall / EntityTooLarge with S3's elements. */
export function checkFileSize(range: { min: number; max: number } | undefined, size: number): void {
  if (!range) return;
  if (size < range.min) {
    throw new S3Error('EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed size', {
      ProposedSize: String(size),
      MinSizeAllowed: String(range.min),
    });
  }
  if (size > range.max) {
    throw new S3Error('EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size', {
      ProposedSize: String(size),
      MaxSizeAllowed: String(range.max),
    });
  }
}

/**
 * `${filename}` in a field value: the file part's name after its last slash or backslash. A file part
 * without a filename parameter leaves the variable as it is (what S3 does, docs/COMPATIBILITY.md).
 */
export function expandFilename(value: string, filename: string | undefined): string {
  if (filename === undefined || !value.includes('${filename}')) return value;
  const base = filename.slice(Math.max(filename.lastIndexOf('/'), filename.lastIndexOf('\\')) + 1);
  return value.split('${filename}').join(base);
}
