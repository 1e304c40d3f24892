// Bucket and object ACLs. s3edge has one permission model (keys, owners and bucket policies,
// docs/COMPATIBILITY.md), so an ACL is "the owner has FULL_CONTROL", possibly with "and everyone may
// read" (public-read) or, for a bucket, "read and write" (public-read-write). A bucket's become policy
// statements (src/buckets/bucket-access.ts: list, and write objects); an object's is kept with its
// version and lets everyone read it (GetObject, HeadObject). Anything else is accepted only where it
// changes nothing: another canned ACL header, or a document granting the owner FULL_CONTROL and nobody
// anything (which makes the bucket or object private again, as a whole new ACL would).
import type { Bucket, PublicAcl } from '../../db/repos/index.js';
import type { ObjectAcl, ObjectRecord } from '../../db/repos/objects.js';
import { S3Error } from '../../errors/s3-errors.js';
import { header, requireBucket, requireKey, type OperationHandler, type S3Request } from '../operation.js';
import { childNames, childValues, isNode, optionalLeaf, parseXmlDocument, readVerifiedBody, type XmlNode } from '../request-body-xml.js';
import { xmlResponse } from '../respond.js';
import { toXml, type XmlObject } from '../xml.js';
import { findVersion, versionIdParam } from '../versioning.js';

export const CANNED_ACLS: ReadonlySet<string> = new Set([
  'private', 'public-read', 'public-read-write', 'authenticated-read', 'aws-exec-read', 'bucket-owner-read',
  'bucket-owner-full-control', 'log-delivery-write',
]);
const GRANT_HEADERS = ['x-amz-grant-read', 'x-amz-grant-write', 'x-amz-grant-read-acp', 'x-amz-grant-write-acp', 'x-amz-grant-full-control'];
const MAX_ACL_BYTES = 64 * 1024;
const XSI = 'http://www.w3.org/2001/XMLSchema-instance';

const ALL_USERS = 'http://acs.amazonaws.com/groups/global/AllUsers';

function aclXml(ownerId: string, acl: PublicAcl | ObjectAcl | null = null): string {
  const owner = { ID: ownerId, DisplayName: ownerId };
  const everyone = (permission: string): XmlObject => ({ Grantee: { '@_xmlns:xsi': XSI, '@_xsi:type': 'Group', URI: ALL_USERS }, Permission: permission });
  const grants: XmlObject[] = [{ Grantee: { '@_xmlns:xsi': XSI, '@_xsi:type': 'CanonicalUser', ...owner }, Permission: 'FULL_CONTROL' }];
  if (acl !== null) grants.push(everyone('READ'));
  if (acl === 'public-read-write') grants.push(everyone('WRITE'));
  return toXml('AccessControlPolicy', { Owner: owner, AccessControlList: { Grant: grants } });
}

/** The canned ACL header of a request, checked: undefined when there is none. */
export function cannedAcl(r: S3Request): string | undefined {
  const canned = header(r, 'x-amz-acl')?.trim();
  if (canned !== undefined && !CANNED_ACLS.has(canned)) throw new S3Error('InvalidArgument', undefined, { ArgumentName: 'x-amz-acl', ArgumentValue: canned });
  return canned;
}

/** What a canned ACL makes of a bucket's public access (the others grant nobody but the owner anything here). */
export function publicAclOf(canned: string | undefined): PublicAcl | null {
  return canned === 'public-read' || canned === 'public-read-write' ? canned : null;
}

/** What a canned ACL makes of an object: readable by everyone, or by its keys and policies only (undefined). */
export function objectAclOf(canned: string | undefined): ObjectAcl | undefined {
  return canned === 'public-read' || canned === 'public-read-write' ? 'public-read' : undefined;
}

/** Keeps a bucket's public ACL (null: private) and applies it at once in this process. */
export async function setBucketAcl(r: S3Request, bucket: Pick<Bucket, 'id' | 'name'>, acl: PublicAcl | null): Promise<void> {
  if (acl === null) await r.ctx.repos.bucketAcls.delete(bucket.id);
  else await r.ctx.repos.bucketAcls.put(bucket.id, acl);
  r.ctx.bucketAccess.forget(bucket);
}

function notSupported(): S3Error {
  return new S3Error('NotImplemented', 'ACLs grant the bucket owner FULL_CONTROL and, at most, everyone (AllUsers) READ or READ and WRITE here: use a bucket policy for anything else.');
}

function child(node: XmlNode, name: string): XmlNode | undefined {
  const values = childValues(node, name);
  if (values.length > 1) throw new S3Error('MalformedXML');
  const v = values[0];
  if (v === undefined) return undefined;
  if (typeof v === 'string' && v.trim() === '') return {};
  if (!isNode(v)) throw new S3Error('MalformedXML');
  return v;
}

/**
 * Reads an AccessControlPolicy this model can hold: the owner's FULL_CONTROL, plus, optionally, READ (and
 * WRITE: public-read-write) for AllUsers, as `s3cmd setacl --acl-public` and a GetBucketAcl answer put
 * back send it. Returns the public access it grants (null: private); any other grant is 501. Exported for tests.
 */
export function aclFromDocument(body: Buffer, ownerId: string): PublicAcl | null {
  const root = parseXmlDocument(body, 'AccessControlPolicy');
  const list = child(root, 'AccessControlList');
  if (!list) throw new S3Error('MalformedXML');
  const owner = child(root, 'Owner');
  const ownerIdSent = owner && optionalLeaf(owner, 'ID')?.trim();
  if (ownerIdSent !== undefined && ownerIdSent !== ownerId) throw notSupported();
  const grants = childValues(list, 'Grant');
  let ownerFull = false;
  const everyone = new Set<string>();
  for (const g of grants) {
    if (!isNode(g)) throw new S3Error('MalformedXML');
    const grantee = child(g, 'Grantee');
    if (!grantee) throw new S3Error('MalformedXML');
    const id = optionalLeaf(grantee, 'ID')?.trim();
    const uri = optionalLeaf(grantee, 'URI')?.trim();
    const permission = optionalLeaf(g, 'Permission')?.trim() ?? '';
    const others = childNames(grantee).filter((n) => n !== 'ID' && n !== 'DisplayName' && n !== 'URI');
    if (others.length > 0 || (id !== undefined) === (uri !== undefined)) throw notSupported();
    if (id === ownerId && permission === 'FULL_CONTROL') ownerFull = true;
    else if (uri === ALL_USERS && (permission === 'READ' || permission === 'WRITE')) everyone.add(permission);
    else throw notSupported();
  }
  if (!ownerFull) throw notSupported();
  if (everyone.has('WRITE')) {
    if (!everyone.has('READ')) throw notSupported();
    return 'public-read-write';
  }
  return everyone.has('READ') ? 'public-read' : null;
}

/** Reads and checks a PutBucketAcl/PutObjectAcl request; returns the public access it sets. */
async function putAcl(r: S3Request, ownerId: string): Promise<PublicAcl | null> {
  if (GRANT_HEADERS.some((h) => header(r, h) !== undefined)) throw notSupported();
  const canned = cannedAcl(r);
  const body = await readVerifiedBody(r, { maxBytes: MAX_ACL_BYTES, requireDigest: false });
  const hasBody = body.toString('utf8').trim() !== '';
  if (canned !== undefined) {
    if (hasBody) throw new S3Error('UnexpectedContent', 'This request does not support content');
    return publicAclOf(canned);
  }
  if (!hasBody) throw new S3Error('MissingSecurityHeader', 'Your request was missing a required header', { MissingHeaderName: 'x-amz-acl' });
  return aclFromDocument(body, ownerId);
}

/** The version the request names (`?versionId=`, else the current one), as GetObject finds it. */
async function requireObject(r: S3Request, bucket: Bucket): Promise<ObjectRecord> {
  return (await findVersion(r, bucket, requireKey(r), versionIdParam(r.addr.query))).rec;
}

export const getBucketAcl: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  return xmlResponse(aclXml(bucket.ownerId, (await r.ctx.repos.bucketAcls.get(bucket.id)) ?? null));
};

export const putBucketAcl: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketAdmin');
  await setBucketAcl(r, bucket, await putAcl(r, bucket.ownerId));
  return { status: 200, headers: { 'content-length': 0 } };
};

export const getObjectAcl: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectRead');
  const rec = await requireObject(r, bucket);
  return xmlResponse(aclXml(bucket.ownerId, rec.acl ?? null));
};

export const putObjectAcl: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectWrite');
  const key = requireKey(r);
  await requireObject(r, bucket);
  const acl = objectAclOf((await putAcl(r, bucket.ownerId)) ?? undefined) ?? null;
  // The version current once the body is in (or the one named) gets it.
  const rec = await requireObject(r, bucket);
  if (!(await r.ctx.commits.run((tx) => tx.objects.setAcl(bucket.id, key, rec.versionId ?? null, acl)))) {
    throw new S3Error('NoSuchKey', undefined, { Key: key });
  }
  return { status: 200, headers: { 'content-length': 0 } };
};
