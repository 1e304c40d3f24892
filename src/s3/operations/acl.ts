// Bucket and object ACLs. s3edge has one permission model (keys, owners and bucket policies,
// docs/COMPATIBILITY.md), so an ACL is "the owner has FULL_CONTROL", and for a bucket possibly "and
// everyone may read" (public-read) or "read and write" (public-read-write): those two canned ACLs become
// policy statements (src/buckets/bucket-access.ts). Anything else is accepted only where it changes
// nothing: another canned ACL header, or a document granting the owner FULL_CONTROL and nobody anything
// (which makes a bucket private again, as a whole new ACL would).
import type { Bucket, PublicAcl } from '../../db/repos/index.js';
import { S3Error } from '../../errors/s3-errors.js';
import { header, requireBucket, requireKey, type OperationHandler, type S3Request } from '../operation.js';
import { childNames, childValues, isNode, optionalLeaf, parseXmlDocument, readVerifiedBody, type XmlNode } from '../request-body-xml.js';
import { xmlResponse } from '../respond.js';
import { toXml, type XmlObject } from '../xml.js';

export const CANNED_ACLS: ReadonlySet<string> = new Set([
  'private', 'public-read', 'public-read-write', 'authenticated-read', 'aws-exec-read', 'bucket-owner-read',
  'bucket-owner-full-control', 'log-delivery-write',
]);
const GRANT_HEADERS = ['x-amz-grant-read', 'x-amz-grant-write', 'x-amz-grant-read-acp', 'x-amz-grant-write-acp', 'x-amz-grant-full-control'];
const MAX_ACL_BYTES = 64 * 1024;
const XSI = 'http://www.w3.org/2001/XMLSchema-instance';

const ALL_USERS = 'http://acs.amazonaws.com/groups/global/AllUsers';

function aclXml(ownerId: string, acl: PublicAcl | null = null): string {
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

/** Keeps a bucket's public ACL (null: private) and applies it at once in this process. */
export async function setBucketAcl(r: S3Request, bucket: Pick<Bucket, 'id' | 'name'>, acl: PublicAcl | null): Promise<void> {
  if (acl === null) await r.ctx.repos.bucketAcls.delete(bucket.id);
  else await r.ctx.repos.bucketAcls.put(bucket.id, acl);
  r.ctx.bucketAccess.forget(bucket);
}

function notSupported(): S3Error {
  return new S3Error('NotImplemented', 'Only the bucket owner can be granted access: ACLs other than owner FULL_CONTROL are not supported.');
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

/** Accepts an AccessControlPolicy only if it grants FULL_CONTROL to `ownerId` and nothing else. Exported for tests. */
export function checkOwnerOnlyAcl(body: Buffer, ownerId: string): void {
  const root = parseXmlDocument(body, 'AccessControlPolicy');
  const list = child(root, 'AccessControlList');
  if (!list) throw new S3Error('MalformedXML');
  const owner = child(root, 'Owner');
  const ownerIdSent = owner && optionalLeaf(owner, 'ID')?.trim();
  if (ownerIdSent !== undefined && ownerIdSent !== ownerId) throw notSupported();
  const grants = childValues(list, 'Grant');
  if (grants.length === 0) throw notSupported();
  for (const g of grants) {
    if (!isNode(g)) throw new S3Error('MalformedXML');
    const grantee = child(g, 'Grantee');
    if (!grantee) throw new S3Error('MalformedXML');
    const id = optionalLeaf(grantee, 'ID')?.trim();
    const permission = optionalLeaf(g, 'Permission')?.trim();
    const others = childNames(grantee).filter((n) => n !== 'ID' && n !== 'DisplayName');
    if (id !== ownerId || permission !== 'FULL_CONTROL' || others.length > 0) throw notSupported();
  }
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
  checkOwnerOnlyAcl(body, ownerId);
  return null;
}

async function requireObject(r: S3Request, bucket: Bucket): Promise<void> {
  const key = requireKey(r);
  if (!(await r.ctx.objects.get(bucket.id, key))) throw new S3Error('NoSuchKey', undefined, { Key: key });
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
  await requireObject(r, bucket);
  return xmlResponse(aclXml(bucket.ownerId));
};

export const putObjectAcl: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectWrite');
  await requireObject(r, bucket);
  await putAcl(r, bucket.ownerId);
  return { status: 200, headers: { 'content-length': 0 } };
};
