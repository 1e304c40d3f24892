// CompleteMultipartUpload's decisions, without a server: the XML it accepts, the checksum settings of
// CreateMultipartUpload and UploadPart, and every error planCompletion can answer.
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import type { MultipartUpload, UploadPart } from '../../src/db/repos/multipart.js';
import { parseChecksumSettings, partChecksumAlgorithm } from '../../src/s3/operations/multipart/common.js';
import { parseCompleteXml, planCompletion, type CompleteHeaders, type RequestedPart } from '../../src/s3/operations/multipart/complete.js';
import { checksumBase64, md5Hex } from '../helpers/checksums.js';

const MIB = 1024 * 1024;

function upload(extra: Partial<MultipartUpload> = {}): MultipartUpload {
  return {
    uploadId: 'u1', bucketId: 'b', key: 'k', ownerId: 'o', initiated: 0, checksumAlgorithm: null, checksumType: null,
    contentType: 'text/plain', contentEncoding: null, contentDisposition: null, contentLanguage: null, cacheControl: 'no-cache',
    expires: null, userMetadata: { m: 'v' }, ...extra,
  };
}

/** Stored parts with these sizes (only their MD5s and CRC32s are real: the bytes are small stand-ins). */
function stored(sizes: number[], algo?: 'CRC32'): { parts: UploadPart[]; bytes: Buffer[] } {
  const bytes = sizes.map(() => randomBytes(64));
  const parts = sizes.map((size, i) => ({
    uploadId: 'u1', partNumber: i + 1, blobId: `blob${i + 1}`, size, etag: `"${md5Hex(bytes[i] as Buffer)}"`, crc32c: null,
    checksumAlgorithm: algo ?? null, checksumValue: algo ? checksumBase64(algo, bytes[i] as Buffer) : null, lastModified: 0,
  }));
  return { parts, bytes };
}

function wanted(parts: UploadPart[], extra: (p: UploadPart) => Partial<RequestedPart> = () => ({})): RequestedPart[] {
  return parts.map((p) => ({ partNumber: p.partNumber, etag: p.etag, checksums: {}, ...extra(p) }));
}

t.test('the Complete XML', async (t) => {
  const parts = parseCompleteXml(
    '<?xml version="1.0"?><CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' +
      '<Part><PartNumber>1</PartNumber><ETag>&quot;aa&quot;</ETag><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part>' +
      '<Part><ETag>bb</ETag><PartNumber>2</PartNumber></Part></CompleteMultipartUpload>',
  );
  t.same(parts, [
    { partNumber: 1, etag: '"aa"', checksums: { CRC32: 'AAAAAA==' } },
    { partNumber: 2, etag: 'bb', checksums: {} },
  ]);
  t.same(parseCompleteXml('<CompleteMultipartUpload><Part><PartNumber>7</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>').length, 1, 'one part is not an object but a list');
  t.same(
    parseCompleteXml('<CompleteMultipartUpload><Part><ETag>&#34;cc&#34;</ETag><PartNumber>3</PartNumber></Part></CompleteMultipartUpload>'),
    [{ partNumber: 3, etag: '"cc"', checksums: {} }],
    'character references (the Go SDK writes quotes as &#34;)',
  );
  for (const bad of ['', 'nonsense', '<Other/>', '<CompleteMultipartUpload></CompleteMultipartUpload>', '<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>', '<!DOCTYPE x [<!ENTITY a "b">]><CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&a;</ETag></Part></CompleteMultipartUpload>']) {
    t.throws(() => parseCompleteXml(bad), { code: 'MalformedXML' }, JSON.stringify(bad.slice(0, 60)));
  }
  t.throws(() => parseCompleteXml('<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>'), { code: 'InvalidArgument' });
  t.throws(() => parseCompleteXml('<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>'), { code: 'InvalidArgument' });
  t.throws(() => parseCompleteXml('<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>'), { code: 'InvalidPart' });
});

t.test('checksum settings of CreateMultipartUpload', async (t) => {
  t.same(parseChecksumSettings(undefined, undefined), { algorithm: null, type: null });
  t.same(parseChecksumSettings('crc32', undefined), { algorithm: 'CRC32', type: 'COMPOSITE' });
  t.same(parseChecksumSettings('SHA256', undefined), { algorithm: 'SHA256', type: 'COMPOSITE' });
  t.same(parseChecksumSettings('CRC64NVME', undefined), { algorithm: 'CRC64NVME', type: 'FULL_OBJECT' });
  t.same(parseChecksumSettings('CRC32C', 'full_object'), { algorithm: 'CRC32C', type: 'FULL_OBJECT' });
  t.throws(() => parseChecksumSettings('SHA1', 'FULL_OBJECT'), { code: 'InvalidRequest' });
  t.throws(() => parseChecksumSettings('CRC64NVME', 'COMPOSITE'), { code: 'InvalidRequest' });
  t.throws(() => parseChecksumSettings(undefined, 'COMPOSITE'), { code: 'InvalidRequest' });
  t.throws(() => parseChecksumSettings('CRC32', 'PARTIAL'), { code: 'InvalidRequest' });
  t.throws(() => parseChecksumSettings('MD5', undefined), { code: 'InvalidRequest' });
});

t.test('the checksum a part is hashed with', async (t) => {
  t.equal(partChecksumAlgorithm(upload(), undefined), undefined);
  t.equal(partChecksumAlgorithm(upload(), 'SHA1'), 'SHA1', 'no upload algorithm: any');
  const composite = upload({ checksumAlgorithm: 'CRC32', checksumType: 'COMPOSITE' });
  t.equal(partChecksumAlgorithm(composite, 'CRC32'), 'CRC32');
  t.throws(() => partChecksumAlgorithm(composite, undefined), { code: 'InvalidRequest', message: /expected checksum Type: crc32, actual checksum Type: null/ });
  t.throws(() => partChecksumAlgorithm(composite, 'SHA256'), { code: 'InvalidRequest' });
  const full = upload({ checksumAlgorithm: 'CRC32C', checksumType: 'FULL_OBJECT' });
  t.equal(partChecksumAlgorithm(full, undefined), 'CRC32C', 'computed for FULL_OBJECT');
  t.throws(() => partChecksumAlgorithm(full, 'CRC32'), { code: 'InvalidRequest' });
});

t.test('planCompletion: the object it decides', async (t) => {
  const { parts, bytes } = stored([5 * MIB, 5 * MIB, 10]);
  const plan = planCompletion(upload(), [...parts].reverse(), wanted(parts), { checksums: {} }, 1_700_000_000_123);
  const etag = createHash('md5').update(Buffer.concat(bytes.map((b) => createHash('md5').update(b).digest()))).digest('hex');
  t.equal(plan.record.etag, `"${etag}-3"`);
  t.equal(plan.record.size, 10 * MIB + 10);
  t.equal(plan.record.lastModified, 1_700_000_000_000, 'second precision');
  t.same(plan.record.parts?.map((p) => p.blobId), ['blob1', 'blob2', 'blob3']);
  t.match(plan.record, { contentType: 'text/plain', cacheControl: 'no-cache', userMetadata: { m: 'v' }, checksumAlgorithm: null, blobId: '' });
  t.same(plan.claimed, [1, 2, 3]);
  const subset = planCompletion(upload(), parts, wanted([parts[0] as UploadPart, parts[2] as UploadPart]), { checksums: {} }, 0);
  t.same(subset.claimed, [1, 3], 'only the listed parts');
  t.equal(planCompletion(upload(), parts, wanted(parts, (p) => ({ etag: p.etag.replace(/"/g, '') })), { checksums: {} }, 0).record.etag, `"${etag}-3"`, 'ETags without quotes');
});

t.test('planCompletion: the errors', async (t) => {
  const { parts } = stored([5 * MIB, 100, 5 * MIB]);
  const u = upload();
  const plan = (w: RequestedPart[], h: CompleteHeaders = { checksums: {} }) => () => planCompletion(u, parts, w, h, 0);
  const [p1, p2, p3] = parts as [UploadPart, UploadPart, UploadPart];
  t.throws(plan(wanted([p1, p2, p3])), { code: 'EntityTooSmall' }, 'a small part that is not the last');
  t.doesNotThrow(plan(wanted([p1, p2])), 'a small last part');
  t.throws(plan(wanted([p3, p1])), { code: 'InvalidPartOrder' });
  t.throws(plan(wanted([p1, p1])), { code: 'InvalidPartOrder' }, 'a number twice');
  t.throws(plan([{ partNumber: 1, etag: '"00"', checksums: {} }]), { code: 'InvalidPart' });
  t.throws(plan([{ partNumber: 4, etag: p1.etag, checksums: {} }]), { code: 'InvalidPart' });
  t.throws(plan(wanted([p1, p2]), { checksums: {}, objectSize: 1 }), { code: 'InvalidRequest', message: /x-amz-mp-object-size/ });
  t.doesNotThrow(plan(wanted([p1, p2]), { checksums: {}, objectSize: 5 * MIB + 100 }));
  t.throws(plan(wanted([p1, p2]), { checksums: {}, checksumType: 'COMPOSITE' }), { code: 'InvalidRequest', message: /checksum mode/ });
});

t.test('planCompletion: COMPOSITE and FULL_OBJECT checksums', async (t) => {
  const { parts, bytes } = stored([5 * MIB, 7], 'CRC32');
  const composite = upload({ checksumAlgorithm: 'CRC32', checksumType: 'COMPOSITE' });
  const listed = wanted(parts, (p) => ({ checksums: { CRC32: p.checksumValue ?? '' } }));
  const expected = `${checksumBase64('CRC32', Buffer.concat(parts.map((p) => Buffer.from(p.checksumValue ?? '', 'base64'))))}-2`;
  const plan = planCompletion(composite, parts, listed, { checksums: {} }, 0);
  t.match(plan.record, { checksumAlgorithm: 'CRC32', checksumType: 'COMPOSITE', checksumValue: expected });
  t.same(plan.record.parts?.map((p) => p.checksum), parts.map((p) => p.checksumValue));
  t.throws(() => planCompletion(composite, parts, wanted(parts), { checksums: {} }, 0), { code: 'InvalidRequest', message: /must include the checksum for each part/ });
  t.throws(() => planCompletion(composite, parts, wanted(parts, () => ({ checksums: { CRC32: 'AAAAAA==' } })), { checksums: {} }, 0), { code: 'InvalidPart' });
  t.throws(() => planCompletion(composite, parts, wanted(parts, () => ({ checksums: { SHA1: 'x' } })), { checksums: {} }, 0), { code: 'InvalidRequest' });
  t.doesNotThrow(() => planCompletion(composite, parts, listed, { checksums: { CRC32: expected } }, 0), 'whole-object value with -N');
  t.doesNotThrow(() => planCompletion(composite, parts, listed, { checksums: { CRC32: expected.replace(/-2$/, '') } }, 0), 'and without');
  t.throws(() => planCompletion(composite, parts, listed, { checksums: { CRC32: 'AAAAAA==' } }, 0), { code: 'BadDigest' });

  // FULL_OBJECT: the stand-in bytes are 64 bytes long, so combine with those sizes.
  const real = parts.map((p, i) => ({ ...p, size: (bytes[i] as Buffer).length }));
  const last = real[real.length - 1] as UploadPart;
  const full = upload({ checksumAlgorithm: 'CRC32', checksumType: 'FULL_OBJECT' });
  const whole = checksumBase64('CRC32', Buffer.concat(bytes));
  const fplan = planCompletion(full, [last], wanted([last]), { checksums: {} }, 0);
  t.equal(fplan.record.checksumValue, checksumBase64('CRC32', bytes[1] as Buffer), 'one part: its own CRC');
  const both = real.map((p, i) => ({ ...p, size: i === 0 ? 5 * MIB : p.size }));
  t.ok(planCompletion(full, both, wanted(both), { checksums: {} }, 0).record.checksumValue, 'parts without listed checksums are fine for FULL_OBJECT');
  t.throws(() => planCompletion(full, [last], wanted([last]), { checksums: { CRC32: whole } }, 0), { code: 'BadDigest' }, 'a whole-object CRC that does not match');
  t.doesNotThrow(() => planCompletion(full, [last], wanted([last]), { checksums: { CRC32: checksumBase64('CRC32', bytes[1] as Buffer) } }, 0));
});
