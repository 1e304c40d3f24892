// Bucket and object ACLs. s3edge has one permission model (keys and owners, docs/COMPATIBILITY.md), so
// the ACL is always "the owner has FULL_CONTROL". Setting it is accepted only where it changes nothing:
// a canned ACL header (a no-op) or a document granting the owner FULL_CONTROL and nobody anything.
import type { Bucket } from '../../db/repos/index.js';
import { S3Error } from '../../errors/s3-errors.js';
import { header, requireBucket, requireKey, type OperationHandler, type S3Request } from '../operation.js';
import { childNames, childValues, isNode, optionalLeaf, parseXmlDocument, readVerifiedBody, type XmlNode } from '../request-body-xml.js';
import { xmlResponse } from '../respond.js';
import { toXml } from '../xml.js';

export const CANNED_ACLS: ReadonlySet<string> = new Set([
  'private', 'public-read', 'public-read-write', 'authenticated-read', 'aws-exec-read', 'bucket-owner-read',
  'bucket-owner-full-control', 'log-delivery-write',
]);
const GRANT_HEADERS = ['x-amz-grant-read', 'x-amz-grant-write', 'x-amz-grant-read-acp', 'x-amz-grant-write-acp', 'x-amz-grant-full-control'];
const MAX_ACL_BYTES = 64 * 1024;
const XSI = 'http://www.w3.org/2001/XMLSchema-instance';

function aclXml(ownerId: string): string {
  const owner = { ID: ownerId, DisplayName: ownerId };
  return toXml('AccessControlPolicy', {
    Owner: owner,
    AccessControlList: {
      Grant: [{ Grantee: { '@_xmlns:xsi': XSI, '@_xsi:type': 'CanonicalUser', ...owner }, Permission: 'FULL_CONTROL' }],
    },
  });
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

async function putAcl(r: S3Request, ownerId: string): Promise<void> {
  if (GRANT_HEADERS.some((h) => header(r, h) !== undefined)) throw notSupported();
  const canned = header(r, 'x-amz-acl');
  const body = await readVerifiedBody(r, { maxBytes: MAX_ACL_BYTES, requireDigest: false });
  const hasBody = body.toString('utf8').trim() !== '';
  if (canned !== undefined) {
    if (!CANNED_ACLS.has(canned.trim())) throw new S3Error('InvalidArgument', undefined, { ArgumentName: 'x-amz-acl', ArgumentValue: canned });
    if (hasBody) throw new S3Error('UnexpectedContent', 'This request does not support content');
    return;
  }
  if (!hasBody) throw new S3Error('MissingSecurityHeader', 'Your request was missing a required header', { MissingHeaderName: 'x-amz-acl' });
  checkOwnerOnlyAcl(body, ownerId);
}

async function requireObject(r: S3Request, bucket: Bucket): Promise<void> {
  const key = requireKey(r);
  if (!(await r.ctx.objects.get(bucket.id, key))) throw new S3Error('NoSuchKey', undefined, { Key: key });
}

export const getBucketAcl: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  return xmlResponse(aclXml(bucket.ownerId));
};

export const putBucketAcl: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketAdmin');
  await putAcl(r, bucket.ownerId);
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
