// Object tagging, GetObjectAttributes and per-part checksums against the real server: one boto3 script
// (test/python/boto3_tagging_attributes.py), a few aws cli calls, and raw signed requests for what the
// clients never send (no digest, a read-only key, a malformed document, conditional headers).
import t from 'tap';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBucketKey, startServer } from '../helpers/server.js';
import { awsForServer, isolatedAwsEnv } from '../helpers/aws-cli.js';
import { md5Base64 } from '../helpers/checksums.js';
import { RawS3, errorCode } from '../helpers/s3-client.js';
import { xmlTexts } from '../helpers/xml.js';

const PY_SCRIPT = fileURLToPath(new URL('../../../test/python/boto3_tagging_attributes.py', import.meta.url));
const BUCKET = 'tags-attrs';

const server = await startServer();
t.teardown(() => server.stop());
const { files: awsFiles, aws } = await awsForServer(server);
const root = new RawS3({ url: server.url }, server.rootKey);

function python(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('python3', args, { env: isolatedAwsEnv(awsFiles, server.rootKey), maxBuffer: 16 * 1024 * 1024, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

function tagging(pairs: Array<[string, string]>): Buffer {
  return Buffer.from(`<Tagging><TagSet>${pairs.map(([k, v]) => `<Tag><Key>${k}</Key><Value>${v}</Value></Tag>`).join('')}</TagSet></Tagging>`);
}

t.before(async () => {
  const r = await root.createBucket(BUCKET);
  if (r.status !== 200) throw new Error(`create bucket: ${r.status} ${r.text}`);
});

t.test('boto3: tags, GetObjectAttributes, part checksums', async (t) => {
  const r = await python([PY_SCRIPT, '--endpoint', server.url, '--bucket', BUCKET]);
  t.equal(r.code, 0, `boto3 script\nstderr: ${r.stderr.slice(-3000)}`);
  // The script's JSON, read field by field below.
  const out = JSON.parse(r.stdout) as Record<string, any>;
  t.comment(`botocore ${String(out['botocore'])}`);

  t.same(out['putTags'], [['a', '1'], ['empty', ''], ['space', 'two words'], ['z', 'last']], 'put_object(Tagging=): form-decoded, listed in key order');
  t.equal(out['headCount'], '4', 'HEAD: x-amz-tagging-count');
  t.equal(out['getTagCount'], 4, 'GET: TagCount');
  t.equal(out['tenTags'], 10, '10 tags of 128 and 256 characters');
  t.equal(out['unchanged'], true, 'PutObjectTagging changes neither ETag nor LastModified');
  t.ok((out['wire'] as string[][]).every((h) => h.length > 0), `botocore sent a digest with PutObjectTagging: ${JSON.stringify(out['wire'])}`);
  t.equal(out['eleven'], 'BadRequest: Object tags cannot be greater than 10');
  t.equal(out['longKey'], 'InvalidTag: The TagKey you have provided is too long, max 128');
  t.equal(out['longValue'], 'InvalidTag: The TagValue you have provided is too long, max 256');
  t.equal(out['duplicate'], 'InvalidTag: Cannot provide multiple Tags with the same key');
  t.equal(out['awsPrefix'], 'InvalidTag: Your TagKey cannot be prefixed with aws:');
  t.match(out['badHeader'], /^InvalidArgument: The header 'x-amz-tagging' shall be encoded/);
  t.match(out['badHeaderStored'], /^404/, 'a refused x-amz-tagging stores nothing');
  t.equal(out['noSuchKey'], 'NoSuchKey: The specified key does not exist.');
  t.equal(out['tagsAfterErrors'], 10, 'refused tag sets change nothing');
  t.equal(out['versionNull'], 'ok', 'versionId=null is the current version');
  t.match(out['versionOther'], /^NoSuchVersion/, 'a well-formed id the key does not have');
  t.equal(out['versionMalformed'], 'InvalidArgument: Invalid version id specified', 'an id not of the server\'s form');
  t.equal(out['deleteStatus'], 204);
  t.same(out['afterDelete'], [], 'DeleteObjectTagging: an empty TagSet');
  t.equal(out['headCountAfterDelete'], null, 'no x-amz-tagging-count without tags');

  t.same(out['copyDefault'], [['src', '1']], "CopyObject keeps the source's tags by default (x-amz-tagging ignored)");
  t.same(out['copyReplace'], [['dst', '2']], 'TaggingDirective REPLACE takes the request Tagging');
  t.same(out['copyReplaceNone'], [], 'REPLACE without Tagging: no tags');
  t.match(out['copyBadDirective'], /^InvalidArgument: Unknown tagging directive/);

  t.same(out['mpTags'], [['mp', 'yes']], 'create_multipart_upload(Tagging=) tags the completed object');
  const mp = out['mp'];
  const partChecksums = mp['partChecksums'] as string[];
  t.same(mp['page1'], {
    LastModified: mp['headLastModified'],
    ETag: (mp['headETag'] as string).replace(/"/g, ''),
    Checksum: { ChecksumCRC32: (mp['headChecksum'] as string).replace(/-3$/, ''), ChecksumType: 'COMPOSITE' },
    ObjectParts: {
      TotalPartsCount: 3, PartNumberMarker: 0, NextPartNumberMarker: 2, MaxParts: 2, IsTruncated: true,
      Parts: [
        { PartNumber: 1, Size: 5 * 1024 * 1024, ChecksumCRC32: partChecksums[0] },
        { PartNumber: 2, Size: 5 * 1024 * 1024, ChecksumCRC32: partChecksums[1] },
      ],
    },
    StorageClass: 'STANDARD',
    ObjectSize: 10 * 1024 * 1024 + 1000,
  }, 'get_object_attributes, first page: unquoted ETag, COMPOSITE checksum without -N');
  t.same(mp['page2'], {
    LastModified: mp['headLastModified'],
    ObjectParts: {
      TotalPartsCount: 3, PartNumberMarker: 2, NextPartNumberMarker: 3, MaxParts: 2, IsTruncated: false,
      Parts: [{ PartNumber: 3, Size: 1000, ChecksumCRC32: partChecksums[2] }],
    },
  }, 'second page from PartNumberMarker');
  t.same(out['mpPartReads'], { head2: partChecksums[1], head2Type: 'COMPOSITE', get3: partChecksums[2], get3BodyOk: true, headCount: '1' },
    "a part read answers that part's checksum; botocore validated part 3");

  const full = out['full'];
  t.equal(full['checksum']['ChecksumType'], 'FULL_OBJECT');
  t.equal(full['checksum']['ChecksumCRC32'], full['headChecksum']);
  t.same(full['objectParts'], { TotalPartsCount: 2 }, 'FULL_OBJECT: the part count alone');
  t.equal(full['part1Checksum'], null, 'FULL_OBJECT: no checksum for one of several parts');
  t.equal(full['part1BodyOk'], true);

  t.equal(out['plain']['ObjectSize'], 5);
  t.equal(out['plain']['ObjectParts'], undefined, 'no ObjectParts for an object not uploaded in parts');
  t.equal(out['plain']['Checksum']['ChecksumType'], 'FULL_OBJECT');
  t.equal(out['plainPart1'], out['plain']['Checksum']['ChecksumSHA256'], 'part 1 of a plain object is all of it, checksum included');
  t.equal(out['attrErrors']['bogus'], 'InvalidArgument: Invalid attribute name specified.');
  t.match(out['attrErrors']['missing'], /^NoSuchKey/);
});

t.test('aws cli: put-object-tagging, get-object-tagging, get-object-attributes', async (t) => {
  const put = await aws(['s3api', 'put-object', '--bucket', BUCKET, '--key', 'cli/obj', '--body', PY_SCRIPT, '--tagging', 'k1=v1']);
  t.equal(put.code, 0, put.stderr);
  const putTags = await aws(['s3api', 'put-object-tagging', '--bucket', BUCKET, '--key', 'cli/obj', '--tagging', 'TagSet=[{Key=cli,Value=yes},{Key=b,Value=2}]']);
  t.equal(putTags.code, 0, putTags.stderr);
  const got = await aws(['s3api', 'get-object-tagging', '--bucket', BUCKET, '--key', 'cli/obj']);
  t.same(got.json, { TagSet: [{ Key: 'b', Value: '2' }, { Key: 'cli', Value: 'yes' }] }, got.stderr);
  const attrs = await aws(['s3api', 'get-object-attributes', '--bucket', BUCKET, '--key', 'cli/obj', '--object-attributes', 'ETag', 'ObjectSize', 'StorageClass']);
  t.equal(attrs.code, 0, attrs.stderr);
  const j = attrs.json as Record<string, unknown>;
  t.match(j, { ETag: /^[0-9a-f]{32}$/, StorageClass: 'STANDARD', ObjectSize: Number }, 'ETag, size, storage class');
  t.ok(j['LastModified'], 'LastModified from the header');
});

t.test('raw requests: digest, permissions, documents, conditionals', async (t) => {
  const key = 'raw/obj';
  t.equal((await root.putObject(BUCKET, key, Buffer.from('raw'))).status, 200);
  const put = (body: Buffer, headers: Record<string, string>, who: RawS3 = root) =>
    who.send({ method: 'PUT', bucket: BUCKET, key, query: { tagging: '' }, body, headers });
  const doc = tagging([['a', '1']]);
  t.equal(errorCode(await put(doc, {})), 'InvalidRequest', 'no Content-MD5 nor checksum');
  t.equal(errorCode(await put(doc, { 'content-md5': md5Base64('other') })), 'BadDigest');
  t.equal((await put(doc, { 'content-md5': md5Base64(doc) })).status, 200, 'with Content-MD5');
  const bad = Buffer.from('<Tagging><Tag><Key>a</Key><Value>1</Value></Tag></Tagging>');
  t.equal(errorCode(await put(bad, { 'content-md5': md5Base64(bad) })), 'MalformedXML', 'no TagSet');
  const bad2 = Buffer.from('<Tagging><TagSet>');
  t.equal(errorCode(await put(bad2, { 'content-md5': md5Base64(bad2) })), 'MalformedXML', 'not well formed');

  const reader = root.as(await createBucketKey(server, BUCKET, 'read'));
  t.equal(errorCode(await put(doc, { 'content-md5': md5Base64(doc) }, reader)), 'AccessDenied', 'a read key cannot tag');
  t.equal(errorCode(await reader.send({ method: 'DELETE', bucket: BUCKET, key, query: { tagging: '' } })), 'AccessDenied', 'nor untag');
  const read = await reader.send({ method: 'GET', bucket: BUCKET, key, query: { tagging: '' } });
  t.same(xmlTexts(read.text, 'Key'), ['a'], 'but may read the tags');
  t.match(read.text, /^<\?xml[^>]*>\s*<Tagging xmlns="http:\/\/s3\.amazonaws\.com\/doc\/2006-03-01\/">/);

  const attrs = (headers: Record<string, string>) => root.send({ method: 'GET', bucket: BUCKET, key, query: { attributes: '' }, headers });
  t.equal(errorCode(await attrs({})), 'InvalidRequest', 'no x-amz-object-attributes');
  t.equal(errorCode(await attrs({ 'x-amz-object-attributes': 'ETag', 'x-amz-max-parts': 'x' })), 'InvalidArgument', 'x-amz-max-parts not an integer');
  t.equal(errorCode(await attrs({ 'x-amz-object-attributes': 'ETag', 'x-amz-part-number-marker': '-1' })), 'InvalidArgument', 'a negative marker');
  const head = await root.headObject(BUCKET, key);
  const etag = String(head.headers['etag']);
  const ok = await attrs({ 'x-amz-object-attributes': 'ETag', 'if-match': etag });
  t.equal(ok.status, 200);
  t.equal(ok.headers['last-modified'], head.headers['last-modified'], 'Last-Modified header');
  t.same(xmlTexts(ok.text, 'ETag'), [etag.replace(/"/g, '')], 'ETag without quotes');
  t.equal((await attrs({ 'x-amz-object-attributes': 'ETag', 'if-none-match': etag })).status, 304, 'If-None-Match: 304');
  t.equal(errorCode(await attrs({ 'x-amz-object-attributes': 'ETag', 'if-match': '"nope"' })), 'PreconditionFailed', 'If-Match: 412');
});

t.test('bucket tagging: aws cli puts, gets and deletes; 50 tags at most; administration only', async (t) => {
  const tagSet = (n: number) => JSON.stringify({ TagSet: Array.from({ length: n }, (_, i) => ({ Key: `team-${String(i).padStart(2, '0')}`, Value: `v${i}` })) });
  const none = await aws(['s3api', 'get-bucket-tagging', '--bucket', BUCKET]);
  t.match(none.stderr, /NoSuchTagSet/, 'no tags yet: NoSuchTagSet');
  const put = await aws(['s3api', 'put-bucket-tagging', '--bucket', BUCKET, '--tagging', JSON.stringify({ TagSet: [{ Key: 'project', Value: 'blue' }, { Key: 'cost-center', Value: '42' }] })]);
  t.equal(put.code, 0, put.stderr);
  const got = await aws(['s3api', 'get-bucket-tagging', '--bucket', BUCKET]);
  t.equal(got.code, 0, got.stderr);
  t.same((got.json as { TagSet: unknown[] }).TagSet, [{ Key: 'cost-center', Value: '42' }, { Key: 'project', Value: 'blue' }], 'in key order');
  const fifty = await aws(['s3api', 'put-bucket-tagging', '--bucket', BUCKET, '--tagging', tagSet(50)]);
  t.equal(fifty.code, 0, `50 tags: ${fifty.stderr}`);
  t.equal(((await aws(['s3api', 'get-bucket-tagging', '--bucket', BUCKET])).json as { TagSet: unknown[] }).TagSet.length, 50, 'all 50, the earlier set replaced');
  const many = await aws(['s3api', 'put-bucket-tagging', '--bucket', BUCKET, '--tagging', tagSet(51)]);
  t.match(many.stderr, /InvalidTag.*Bucket tag count cannot be greater than 50/, '51: InvalidTag');
  const badKey = await aws(['s3api', 'put-bucket-tagging', '--bucket', BUCKET, '--tagging', JSON.stringify({ TagSet: [{ Key: 'aws:x', Value: '1' }] })]);
  t.match(badKey.stderr, /InvalidTag.*cannot be prefixed with aws:/, 'the object rules for keys');

  const writer = root.as(await createBucketKey(server, BUCKET, 'read_write'));
  const doc = tagging([['a', '1']]);
  const byKey = await writer.send({ method: 'PUT', bucket: BUCKET, query: { tagging: '' }, body: doc, headers: { 'content-md5': md5Base64(doc) } });
  t.equal(errorCode(byKey), 'AccessDenied', 'a bucket key cannot change them');
  const readByKey = await writer.send({ method: 'GET', bucket: BUCKET, query: { tagging: '' } });
  t.equal(xmlTexts(readByKey.text, 'Key').length, 50, 'but may read them');
  t.equal(errorCode(await root.send({ method: 'PUT', bucket: BUCKET, query: { tagging: '' }, body: doc })), 'InvalidRequest', 'no Content-MD5 nor checksum');

  const del = await aws(['s3api', 'delete-bucket-tagging', '--bucket', BUCKET]);
  t.equal(del.code, 0, del.stderr);
  t.match((await aws(['s3api', 'get-bucket-tagging', '--bucket', BUCKET])).stderr, /NoSuchTagSet/, 'gone');
});

t.test('ObjectParts lists parts by the numbers they were uploaded as (aws cli, parts 1 and 3)', async (t) => {
  const key = 'cli/gaps';
  const first = join(server.tmpRoot, 'part1.bin');
  const third = join(server.tmpRoot, 'part3.bin');
  await writeFile(first, Buffer.alloc(5 * 1024 * 1024, 1));
  await writeFile(third, Buffer.from('the last part'));
  const created = await aws(['s3api', 'create-multipart-upload', '--bucket', BUCKET, '--key', key, '--checksum-algorithm', 'CRC32']);
  t.equal(created.code, 0, created.stderr);
  const uploadId = String((created.json as { UploadId: string }).UploadId);
  const parts: { PartNumber: number; ETag: string; ChecksumCRC32: string }[] = [];
  for (const [n, file] of [[1, first], [3, third]] as const) {
    const up = await aws(['s3api', 'upload-part', '--bucket', BUCKET, '--key', key, '--upload-id', uploadId, '--part-number', String(n), '--body', file, '--checksum-algorithm', 'CRC32']);
    t.equal(up.code, 0, up.stderr);
    const j = up.json as { ETag: string; ChecksumCRC32: string };
    parts.push({ PartNumber: n, ETag: j.ETag, ChecksumCRC32: j.ChecksumCRC32 });
  }
  const done = await aws(['s3api', 'complete-multipart-upload', '--bucket', BUCKET, '--key', key, '--upload-id', uploadId, '--multipart-upload', JSON.stringify({ Parts: parts })]);
  t.equal(done.code, 0, done.stderr);
  const attrs = await aws(['s3api', 'get-object-attributes', '--bucket', BUCKET, '--key', key, '--object-attributes', 'ObjectParts']);
  t.equal(attrs.code, 0, attrs.stderr);
  const objectParts = (attrs.json as { ObjectParts: { TotalPartsCount: number; Parts: { PartNumber: number; Size: number }[] } }).ObjectParts;
  t.equal(objectParts.TotalPartsCount, 2);
  t.same(objectParts.Parts.map((p) => [p.PartNumber, p.Size]), [[1, 5 * 1024 * 1024], [3, 13]], 'parts 1 and 3, as uploaded');
  const after = await aws(['s3api', 'get-object-attributes', '--bucket', BUCKET, '--key', key, '--object-attributes', 'ObjectParts', '--part-number-marker', '1']);
  t.same((after.json as { ObjectParts: { Parts: { PartNumber: number }[] } }).ObjectParts.Parts.map((p) => p.PartNumber), [3], 'after part 1: part 3');
});
