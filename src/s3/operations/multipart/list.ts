// AbortMultipartUpload, ListParts and ListMultipartUploads.
import { S3Error } from '../../../errors/s3-errors.js';
import { isoDate, requireBucket, type OperationHandler, type S3Request } from '../../operation.js';
import { xmlResponse } from '../../respond.js';
import { toXml, type XmlObject } from '../../xml.js';
import { encodingOf, listParam } from '../../listing-params.js';
import { MAX_LIST, owner, requireUpload, scheduleTrashDrain } from './common.js';

function parseMax(r: S3Request, name: string): number {
  const raw = r.addr.query.get(name);
  if (raw === undefined || raw === '') return MAX_LIST;
  if (!/^\d+$/.test(raw)) {
    throw new S3Error('InvalidArgument', `Provided ${name} not an integer or within integer range`, { ArgumentName: name, ArgumentValue: raw });
  }
  return Math.min(Number(raw), MAX_LIST);
}

export const abortMultipartUpload: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'ObjectWrite');
  const upload = await requireUpload(r, bucket);
  if (!(await r.ctx.multipart.abort(upload.uploadId))) throw new S3Error('NoSuchUpload', undefined, { UploadId: upload.uploadId });
  scheduleTrashDrain(r);
  return { status: 204 };
};

export const listParts: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  const upload = await requireUpload(r, bucket);
  const maxParts = parseMax(r, 'max-parts');
  const markerRaw = r.addr.query.get('part-number-marker') ?? '';
  if (markerRaw !== '' && !/^\d+$/.test(markerRaw)) {
    throw new S3Error('InvalidArgument', 'Provided part-number-marker not an integer or within integer range', { ArgumentName: 'part-number-marker', ArgumentValue: markerRaw });
  }
  const marker = markerRaw === '' ? 0 : Number(markerRaw);
  const rows = await r.ctx.multipart.listParts(upload.uploadId, marker, maxParts + 1);
  const page = rows.slice(0, maxParts);
  const last = page[page.length - 1];
  const body: XmlObject = {
    Bucket: bucket.name,
    Key: upload.key,
    UploadId: upload.uploadId,
    PartNumberMarker: marker,
    NextPartNumberMarker: last ? last.partNumber : undefined,
    MaxParts: maxParts,
    IsTruncated: rows.length > maxParts,
    Part: page.map((p) => {
      const part: XmlObject = { PartNumber: p.partNumber, LastModified: isoDate(p.lastModified), ETag: p.etag, Size: p.size };
      if (p.checksumAlgorithm && p.checksumValue && p.checksumAlgorithm === upload.checksumAlgorithm) {
        part[`Checksum${p.checksumAlgorithm}`] = p.checksumValue;
      }
      return part;
    }),
    Initiator: owner(upload.ownerId),
    Owner: owner(upload.ownerId),
    StorageClass: 'STANDARD',
    ChecksumAlgorithm: upload.checksumAlgorithm ?? undefined,
    ChecksumType: upload.checksumType ?? undefined,
  };
  return xmlResponse(toXml('ListPartsResult', body));
};

export const listMultipartUploads: OperationHandler = async (r) => {
  const bucket = await requireBucket(r, 'BucketRead');
  const q = r.addr.query;
  const enc = encodingOf(r);
  const prefix = listParam(r, 'prefix');
  const delimiter = listParam(r, 'delimiter');
  const keyMarker = listParam(r, 'key-marker');
  // S3 ignores the upload id marker without a key marker.
  const uploadIdMarker = keyMarker ? listParam(r, 'upload-id-marker', false) : '';
  const maxUploads = parseMax(r, 'max-uploads');
  const page = await r.ctx.multipart.listUploads(bucket.id, { prefix, delimiter, keyMarker, uploadIdMarker, maxUploads });
  const body: XmlObject = {
    Bucket: bucket.name,
    KeyMarker: enc(keyMarker),
    UploadIdMarker: uploadIdMarker,
    NextKeyMarker: page.isTruncated && page.nextKeyMarker !== undefined ? enc(page.nextKeyMarker) : undefined,
    NextUploadIdMarker: page.isTruncated ? page.nextUploadIdMarker : undefined,
    Delimiter: delimiter ? enc(delimiter) : undefined,
    Prefix: enc(prefix),
    MaxUploads: maxUploads,
    IsTruncated: page.isTruncated,
    EncodingType: q.get('encoding-type') || undefined,
    Upload: page.uploads.map((u) => ({
      Key: enc(u.key),
      UploadId: u.uploadId,
      Initiator: owner(u.ownerId),
      Owner: owner(u.ownerId),
      StorageClass: 'STANDARD',
      Initiated: isoDate(u.initiated),
      ChecksumAlgorithm: u.checksumAlgorithm ?? undefined,
      ChecksumType: u.checksumType ?? undefined,
    })),
    CommonPrefixes: page.commonPrefixes.map((p) => ({ Prefix: enc(p) })),
  };
  return xmlResponse(toXml('ListMultipartUploadsResult', body));
};
