// Object tag sets: parsed from the two forms S3 takes them in (the `<Tagging>` document of
// PutObjectTagging, the URL-query form of `x-amz-tagging`), checked against AWS's limits, stored as
// the JSON of objects.tagging / multipart_uploads.tagging and written back as XML. Pure; POST uploads
// reuse parseTaggingXml for their `tagging` form field.
// Limits and messages: docs/COMPATIBILITY.md "Object tagging".
import type { ObjectTag } from '../db/repos/objects.js';
import { S3Error } from '../errors/s3-errors.js';
import { childNames, childValues, isNode, optionalLeaf, parseXmlDocument } from './request-body-xml.js';
import type { XmlObject } from './xml.js';

export type { ObjectTag };

export const MAX_OBJECT_TAGS = 10;
/** Lengths count UTF-16 code units, as S3 does ("internally represented in UTF-16"): JS string length. */
export const MAX_TAG_KEY_LENGTH = 128;
export const MAX_TAG_VALUE_LENGTH = 256;

/** Unicode letters, numbers and spaces, and `_ . : / = + - @` (AWS's tag pattern). */
const TAG_TEXT = /^[\p{L}\p{Z}\p{N}_.:/=+\-@]*$/u;

function invalidTag(message: string): S3Error {
  return new S3Error('InvalidTag', message);
}

/**
 * Checks a tag set against S3's rules, in AWS's order: the count first (`BadRequest`, as S3 answers
 * it), then each tag's key and value (`InvalidTag`), then unique keys. Returns the set unchanged.
 */
export function validateTagSet(tags: readonly ObjectTag[]): ObjectTag[] {
  if (tags.length > MAX_OBJECT_TAGS) throw new S3Error('BadRequest', `Object tags cannot be greater than ${MAX_OBJECT_TAGS}`);
  return checkTags(tags);
}

/** Each tag's key and value, then unique keys. */
function checkTags(tags: readonly ObjectTag[]): ObjectTag[] {
  const seen = new Set<string>();
  for (const [key, value] of tags) {
    if (key.length === 0 || !TAG_TEXT.test(key)) throw invalidTag('The TagKey you have provided is invalid');
    if (key.length > MAX_TAG_KEY_LENGTH) throw invalidTag(`The TagKey you have provided is too long, max ${MAX_TAG_KEY_LENGTH}`);
    if (key.startsWith('aws:')) throw invalidTag('Your TagKey cannot be prefixed with aws:');
    if (!TAG_TEXT.test(value)) throw invalidTag('The TagValue you have provided is invalid');
    if (value.length > MAX_TAG_VALUE_LENGTH) throw invalidTag(`The TagValue you have provided is too long, max ${MAX_TAG_VALUE_LENGTH}`);
    if (seen.has(key)) throw invalidTag('Cannot provide multiple Tags with the same key');
    seen.add(key);
  }
  return [...tags];
}

export const MAX_BUCKET_TAGS = 50;

/**
 * A bucket's tag set: up to 50 tags (more is `InvalidTag`, as Ceph's s3-tests expect of it and as
 * PutBucketTagging answers), then the same key and value rules as an object's.
 */
export function parseBucketTaggingXml(body: Buffer): ObjectTag[] {
  const tags = tagsOfXml(body);
  if (tags.length > MAX_BUCKET_TAGS) throw invalidTag(`Bucket tag count cannot be greater than ${MAX_BUCKET_TAGS}`);
  return checkTags(tags);
}

/** Parses and validates a `<Tagging><TagSet><Tag><Key/><Value/></Tag>...</TagSet></Tagging>` document. */
export function parseTaggingXml(body: Buffer): ObjectTag[] {
  return validateTagSet(tagsOfXml(body));
}

/** The tags of a `<Tagging>` document, unchecked. */
function tagsOfXml(body: Buffer): ObjectTag[] {
  const root = parseXmlDocument(body, 'Tagging');
  if (childNames(root).some((n) => n !== 'TagSet')) throw new S3Error('MalformedXML');
  const sets = childValues(root, 'TagSet');
  if (sets.length !== 1) throw new S3Error('MalformedXML');
  const set = sets[0];
  // `<TagSet/>` or whitespace only: the empty set, which removes every tag.
  if (typeof set === 'string' && set.trim() === '') return [];
  if (!isNode(set) || childNames(set).some((n) => n !== 'Tag')) throw new S3Error('MalformedXML');
  const tags = childValues(set, 'Tag').map((tag): ObjectTag => {
    if (!isNode(tag) || childNames(tag).some((n) => n !== 'Key' && n !== 'Value')) throw new S3Error('MalformedXML');
    const key = optionalLeaf(tag, 'Key');
    const value = optionalLeaf(tag, 'Value');
    if (key === undefined || value === undefined) throw new S3Error('MalformedXML');
    return [key, value];
  });
  return tags;
}

function badHeader(): S3Error {
  return new S3Error(
    'InvalidArgument',
    "The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.",
    { ArgumentName: 'x-amz-tagging' },
  );
}

function formDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, '%20'));
  } catch {
    throw badHeader();
  }
}

/**
 * Parses and validates `x-amz-tagging` (`k1=v1&k2=v2`, form-URL-encoded: `+` is a space). A name
 * without `=` has the empty value; empty pieces are skipped. A piece with a second raw `=`, broken
 * percent-encoding or a repeated name is `InvalidArgument`, as S3 answers the header.
 */
export function parseTaggingHeader(raw: string): ObjectTag[] {
  const tags: ObjectTag[] = [];
  const names = new Set<string>();
  for (const piece of raw.split('&')) {
    if (piece === '') continue;
    const eq = piece.indexOf('=');
    if (eq >= 0 && piece.indexOf('=', eq + 1) >= 0) throw badHeader();
    const key = formDecode(eq < 0 ? piece : piece.slice(0, eq));
    const value = eq < 0 ? '' : formDecode(piece.slice(eq + 1));
    if (names.has(key)) throw badHeader();
    names.add(key);
    tags.push([key, value]);
  }
  return validateTagSet(tags);
}

/** The tags of `x-amz-tagging`, or undefined when the header is absent. */
export function taggingFromHeader(raw: string | undefined): ObjectTag[] | undefined {
  return raw === undefined ? undefined : parseTaggingHeader(raw);
}

/** The `<TagSet>` of a GetObjectTagging answer: tags in key order, as S3 lists them. */
export function tagSetXml(tags: readonly ObjectTag[] | undefined): XmlObject {
  const sorted = [...(tags ?? [])].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { TagSet: { Tag: sorted.map(([Key, Value]) => ({ Key, Value })) } };
}
