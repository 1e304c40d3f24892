// GetObjectAttributes (`GET /bucket/key?attributes`): what HeadObject and ListParts would say about a
// stored object, from its row alone, without its bytes. The attributes come from
// x-amz-object-attributes; ObjectParts pages with x-amz-max-parts / x-amz-part-number-marker.
// What AWS answers in which case: docs/COMPATIBILITY.md "GetObjectAttributes".
import type { ObjectRecord } from '../../db/repos/objects.js';
import { S3Error } from '../../errors/s3-errors.js';
import { httpDate } from '../../http/http-date.js';
import { checkReadPreconditions } from '../preconditions.js';
import { header, requireBucket, requireKey, type OperationHandler } from '../operation.js';
import { xmlResponse } from '../respond.js';
import { findVersion, servedVersionHeaders, versionIdParam } from '../versioning.js';
import { toXml, type XmlObject } from '../xml.js';
import { bareEtag } from './multipart/compose.js';

const ATTRIBUTES = ['ETag', 'Checksum', 'ObjectParts', 'StorageClass', 'ObjectSize'] as const;
type Attribute = (typeof ATTRIBUTES)[number];
const MAX_PARTS = 1000;

/** The attribute names of x-amz-object-attributes (comma-separated, case-sensitive as on AWS). */
export function parseObjectAttributes(raw: string | undefined): Set<Attribute> {
  const names = (raw ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (names.length === 0) {
    throw new S3Error('InvalidRequest', 'The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty');
  }
  const out = new Set<Attribute>();
  for (const name of names) {
    if (!(ATTRIBUTES as readonly string[]).includes(name)) {
      throw new S3Error('InvalidArgument', 'Invalid attribute name specified.', { ArgumentName: 'x-amz-object-attributes', ArgumentValue: name });
    }
    out.add(name as Attribute);
  }
  return out;
}

/** x-amz-max-parts / x-amz-part-number-marker: a non-negative integer, else InvalidArgument. */
function intHeader(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const v = raw.trim();
  const n = /^\d{1,10}$/.test(v) ? Number(v) : NaN;
  if (!(n <= 2147483647)) {
    throw new S3Error('InvalidArgument', `Provided ${name} not an integer or within integer range`, { ArgumentName: name, ArgumentValue: raw });
  }
  return n;
}

/** `ChecksumCRC32: value` and the type; a COMPOSITE value without its `-N`, as AWS gives it here. */
function checksumXml(rec: ObjectRecord): XmlObject | undefined {
  if (!rec.checksumAlgorithm || !rec.checksumValue) return undefined;
  const type = rec.checksumType ?? 'FULL_OBJECT';
  const value = type === 'COMPOSITE' ? rec.checksumValue.replace(/-\d+$/, '') : rec.checksumValue;
  return { [`Checksum${rec.checksumAlgorithm}`]: value, ChecksumType: type };
}

/**
 * ObjectParts of a multipart object. AWS lists the parts (number, size, checksum) only for a COMPOSITE
 * checksum object; any other multipart object gets its part count alone. Parts carry the numbers they
 * were uploaded as (1, 3, 7 when those were completed), and the marker is a part number: the page holds
 * the parts numbered above it. Manifests written before the numbers were recorded number by place.
 */
export function objectPartsXml(rec: ObjectRecord, maxParts: number, marker: number): XmlObject | undefined {
  if (!rec.parts) return undefined;
  const count = rec.parts.length;
  if (rec.checksumType !== 'COMPOSITE' || !rec.checksumAlgorithm) return { PartsCount: count };
  const limit = Math.min(maxParts, MAX_PARTS);
  const numbered = rec.parts.map((p, i) => ({ p, number: p.number ?? i + 1 }));
  const after = numbered.filter((x) => x.number > marker);
  const page = after.slice(0, limit);
  return {
    IsTruncated: after.length > page.length,
    MaxParts: limit,
    NextPartNumberMarker: page.at(-1)?.number ?? 0,
    PartNumberMarker: marker,
    Part: page.map(({ p, number }) => ({
      ...(p.checksum ? { [`Checksum${rec.checksumAlgorithm}`]: p.checksum } : {}),
      PartNumber: number,
      Size: p.size,
    })),
    PartsCount: count,
  };
}

export const getObjectAttributes: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectRead');
  const key = requireKey(r);
  const wanted = parseObjectAttributes(header(r, 'x-amz-object-attributes'));
  const maxParts = intHeader('x-amz-max-parts', header(r, 'x-amz-max-parts'), MAX_PARTS);
  const marker = intHeader('x-amz-part-number-marker', header(r, 'x-amz-part-number-marker'), 0);
  // Any version by `?versionId=`; delete markers and missing versions answered as GetObject does.
  const versionId = versionIdParam(r.addr.query);
  const { rec } = await findVersion(r, bucket, key, versionId);
  checkReadPreconditions(r.req, rec.etag, rec.lastModified);
  // Element order as in AWS's response syntax; attributes not asked for, or absent, are left out.
  const body: XmlObject = {
    ETag: wanted.has('ETag') ? bareEtag(rec.etag) : undefined,
    Checksum: wanted.has('Checksum') ? checksumXml(rec) : undefined,
    ObjectParts: wanted.has('ObjectParts') ? objectPartsXml(rec, maxParts, marker) : undefined,
    StorageClass: wanted.has('StorageClass') ? 'STANDARD' : undefined,
    ObjectSize: wanted.has('ObjectSize') ? rec.size : undefined,
  };
  return xmlResponse(toXml('GetObjectAttributesResponse', body), 200, {
    'last-modified': httpDate(rec.lastModified),
    ...servedVersionHeaders(bucket, rec, versionId),
  });
};
