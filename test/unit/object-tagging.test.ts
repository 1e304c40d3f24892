// Tag sets (src/s3/tagging.ts): the <Tagging> document and the x-amz-tagging header form, checked
// against AWS's limits with AWS's codes and messages; and the ObjectParts page of GetObjectAttributes.
import t from 'tap';
import type { ObjectRecord } from '../../src/db/repos/objects.js';
import { objectPartsXml, parseObjectAttributes } from '../../src/s3/operations/get-object-attributes.js';
import { parseBucketTaggingXml, parseTaggingHeader, parseTaggingXml, tagSetXml, validateTagSet, type ObjectTag } from '../../src/s3/tagging.js';
import { toXml } from '../../src/s3/xml.js';

function doc(tags: string): Buffer {
  return Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>\n<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet>${tags}</TagSet></Tagging>`);
}

function tag(k: string, v: string): string {
  return `<Tag><Key>${k}</Key><Value>${v}</Value></Tag>`;
}

function many(n: number, keyLen = 3, valueLen = 3): ObjectTag[] {
  return Array.from({ length: n }, (_, i): ObjectTag => [`k${i}`.padEnd(keyLen, 'x'), 'v'.repeat(valueLen)]);
}

t.test('the <Tagging> document', async (t) => {
  t.same(parseTaggingXml(doc(tag('b', '2') + tag('a', '1'))), [['b', '2'], ['a', '1']], 'kept in the order given');
  t.same(parseTaggingXml(doc('')), [], 'an empty TagSet is the empty set');
  t.same(parseTaggingXml(Buffer.from('<Tagging><TagSet/></Tagging>')), [], 'self-closed TagSet');
  t.same(parseTaggingXml(doc(tag(' a b ', ''))), [[' a b ', '']], 'keys and values untrimmed; an empty value');
  t.same(parseTaggingXml(doc(tag('ключ', 'значение') + tag('a+-=._:/@', 'x y'))), [['ключ', 'значение'], ['a+-=._:/@', 'x y']], 'letters of any script, the allowed symbols');
  t.same(parseTaggingXml(doc(tag('a&#x20;b', 'x&#43;y'))), [['a b', 'x+y']], 'character references decoded');
});

t.test('the <Tagging> document: errors', async (t) => {
  const code = (body: Buffer): string => {
    try {
      parseTaggingXml(body);
      return 'ok';
    } catch (err) {
      return `${(err as { code: string }).code}: ${(err as Error).message}`;
    }
  };
  t.equal(code(Buffer.from('<Tagging></Tagging>')), 'MalformedXML: The XML that you provided was not well formed or did not validate against our published schema.', 'no TagSet');
  t.match(code(Buffer.from('<Tags><TagSet/></Tags>')), /^MalformedXML/, 'another root');
  t.match(code(Buffer.from('<Tagging><TagSet/><TagSet/></Tagging>')), /^MalformedXML/, 'two TagSets');
  t.match(code(doc('<Tag><Key>a</Key></Tag>')), /^MalformedXML/, 'no Value');
  t.match(code(doc('<Tag><Value>a</Value></Tag>')), /^MalformedXML/, 'no Key');
  t.match(code(doc('<Tag><Key>a</Key><Value>b</Value><Other/></Tag>')), /^MalformedXML/, 'an unknown element');
  t.match(code(doc('<Tag><Key>a</Key><Key>b</Key><Value>b</Value></Tag>')), /^MalformedXML/, 'Key twice');
  t.match(code(Buffer.from('<Tagging><TagSet>')), /^MalformedXML/, 'not well formed');
  t.equal(code(doc(tag('a&amp;b', 'x'))), 'InvalidTag: The TagKey you have provided is invalid', '& is not allowed');
  t.equal(code(doc(tag('a', 'x') + tag('a', 'y'))), 'InvalidTag: Cannot provide multiple Tags with the same key');
  t.equal(code(doc(tag('', 'x'))), 'InvalidTag: The TagKey you have provided is invalid', 'an empty key');
  t.equal(code(doc(tag('aws:x', 'x'))), 'InvalidTag: Your TagKey cannot be prefixed with aws:');
  t.equal(code(doc(tag('a', 'x*'))), 'InvalidTag: The TagValue you have provided is invalid');
  t.equal(code(doc(many(11).map(([k, v]) => tag(k, v)).join(''))), 'BadRequest: Object tags cannot be greater than 10');
});

t.test('limits (s3-tests test_put_max_tags, test_put_max_kvsize_tags, test_put_excess_*)', async (t) => {
  t.equal(validateTagSet(many(10)).length, 10, '10 tags');
  t.equal(validateTagSet(many(10, 128, 256)).length, 10, '10 tags of 128 and 256 characters');
  t.throws(() => validateTagSet(many(11)), { code: 'BadRequest', message: 'Object tags cannot be greater than 10' }, '11 tags: BadRequest, as AWS answers (s3-tests expects InvalidTag)');
  t.throws(() => validateTagSet([['k'.repeat(129), 'v']]), { code: 'InvalidTag', message: 'The TagKey you have provided is too long, max 128' });
  t.throws(() => validateTagSet([['k', 'v'.repeat(257)]]), { code: 'InvalidTag', message: 'The TagValue you have provided is too long, max 256' });
  t.equal(validateTagSet([['é'.repeat(128), 'ü'.repeat(256)]]).length, 1, 'characters, not bytes');
  t.throws(() => validateTagSet([['😀'.repeat(65), 'v']]), { code: 'InvalidTag' }, 'UTF-16 code units: 65 astral characters are 130');
  t.throws(() => validateTagSet([['a\tb', 'v']]), { code: 'InvalidTag' }, 'a tab is not a space');
  t.equal(validateTagSet([['AWS:x', 'v'], ['aws', 'v']]).length, 2, 'only the lowercase aws: prefix is reserved');
});

t.test('the x-amz-tagging header', async (t) => {
  t.same(parseTaggingHeader('tag1=value1&tag2=value2'), [['tag1', 'value1'], ['tag2', 'value2']]);
  t.same(parseTaggingHeader('foo=bar&bar'), [['foo', 'bar'], ['bar', '']], 'a name without = has the empty value (s3-tests test_put_obj_with_tags)');
  t.same(parseTaggingHeader('a+b=c%20d&e%3D=%2B'), [['a b', 'c d'], ['e=', '+']], 'form encoding: + is a space, %XX decoded');
  t.same(parseTaggingHeader('%D0%BA=%C3%A9&&x=y&'), [['к', 'é'], ['x', 'y']], 'UTF-8; empty pieces skipped');
  t.same(parseTaggingHeader(''), [], 'empty');
  const bad = { code: 'InvalidArgument', message: "The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates." };
  t.throws(() => parseTaggingHeader('TagSet=[{Key=string,Value=string}]'), bad, 'raw = in a value (aws-cli issue 2841)');
  t.throws(() => parseTaggingHeader('a=1&a=2'), bad, 'a name twice');
  t.throws(() => parseTaggingHeader('a=%zz'), bad, 'broken percent-encoding');
  t.throws(() => parseTaggingHeader('TagSet%3D%5B%7BKey%3Dstring%7D%5D'), { code: 'InvalidTag', message: 'The TagKey you have provided is invalid' });
  t.throws(() => parseTaggingHeader(Array.from({ length: 11 }, (_, i) => `k${i}=v`).join('&')), { code: 'BadRequest' });
  t.throws(() => parseTaggingHeader('=v'), { code: 'InvalidTag' }, 'an empty key');
  t.throws(() => parseTaggingHeader('price=%E2%82%AC'), { code: 'InvalidTag', message: 'The TagValue you have provided is invalid' }, 'a currency sign is not a letter');
  t.throws(() => parseTaggingHeader('price=%E2%82%AC'), { code: 'InvalidTag', message: 'The TagValue you have provided is invalid' }, 'a currency sign is not a letter');
});

t.test('GetObjectTagging answer: key order, namespace', async (t) => {
  const xml = toXml('Tagging', tagSetXml([['b', '2'], ['a', '1&']]));
  t.match(xml, /<Tagging xmlns="http:\/\/s3.amazonaws.com\/doc\/2006-03-01\/"><TagSet><Tag><Key>a<\/Key><Value>1&amp;<\/Value><\/Tag><Tag><Key>b<\/Key>/);
  t.match(toXml('Tagging', tagSetXml(undefined)), /<TagSet><\/TagSet>|<TagSet\/>/, 'no tags: an empty TagSet');
});

t.test('x-amz-object-attributes', async (t) => {
  t.same([...parseObjectAttributes('ETag, ObjectSize,ObjectParts,Checksum,StorageClass')], ['ETag', 'ObjectSize', 'ObjectParts', 'Checksum', 'StorageClass']);
  for (const raw of [undefined, '', ' , ']) {
    t.throws(() => parseObjectAttributes(raw), { code: 'InvalidRequest', message: 'The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty' });
  }
  t.throws(() => parseObjectAttributes('ETag,etag'), { code: 'InvalidArgument', message: 'Invalid attribute name specified.', extra: { ArgumentValue: 'etag' } });
});

t.test('ObjectParts', async (t) => {
  const base = { size: 30, checksumAlgorithm: 'CRC32', checksumValue: 'AAAAAA==-3', checksumType: 'COMPOSITE' } as ObjectRecord;
  const parts = [1, 2, 3].map((n) => ({ blobId: `b${n}`, size: 10, etag: `"${n}"`, checksum: `c${n}` }));
  const rec = { ...base, parts } as ObjectRecord;
  t.same(objectPartsXml(rec, 2, 0), {
    IsTruncated: true, MaxParts: 2, NextPartNumberMarker: 2, PartNumberMarker: 0,
    Part: [{ ChecksumCRC32: 'c1', PartNumber: 1, Size: 10 }, { ChecksumCRC32: 'c2', PartNumber: 2, Size: 10 }],
    PartsCount: 3,
  }, 'first page');
  t.same(objectPartsXml(rec, 2, 2), {
    IsTruncated: false, MaxParts: 2, NextPartNumberMarker: 3, PartNumberMarker: 2,
    Part: [{ ChecksumCRC32: 'c3', PartNumber: 3, Size: 10 }], PartsCount: 3,
  }, 'last page');
  t.same(objectPartsXml(rec, 5000, 3), { IsTruncated: false, MaxParts: 1000, NextPartNumberMarker: 0, PartNumberMarker: 3, Part: [], PartsCount: 3 }, 'past the end; max-parts capped at 1000');
  t.same(objectPartsXml({ ...rec, checksumType: 'FULL_OBJECT', checksumValue: 'AAAAAA==' } as ObjectRecord, 2, 0), { PartsCount: 3 }, 'FULL_OBJECT: the count alone');
  t.same(objectPartsXml({ ...rec, checksumAlgorithm: null, checksumValue: null, checksumType: null } as ObjectRecord, 2, 0), { PartsCount: 3 }, 'no checksum: the count alone');
  t.equal(objectPartsXml(base, 2, 0), undefined, 'not uploaded in parts: no ObjectParts');
  // Parts 1, 3 and 7 completed: listed by those numbers, and the marker is a part number.
  const gaps = { ...base, parts: [1, 3, 7].map((n) => ({ blobId: `b${n}`, size: n, etag: `"${n}"`, checksum: `c${n}`, number: n })) } as ObjectRecord;
  t.same(objectPartsXml(gaps, 2, 0), {
    IsTruncated: true, MaxParts: 2, NextPartNumberMarker: 3, PartNumberMarker: 0,
    Part: [{ ChecksumCRC32: 'c1', PartNumber: 1, Size: 1 }, { ChecksumCRC32: 'c3', PartNumber: 3, Size: 3 }], PartsCount: 3,
  }, 'numbers as uploaded');
  t.same(objectPartsXml(gaps, 2, 3), {
    IsTruncated: false, MaxParts: 2, NextPartNumberMarker: 7, PartNumberMarker: 3,
    Part: [{ ChecksumCRC32: 'c7', PartNumber: 7, Size: 7 }], PartsCount: 3,
  }, 'after part 3: part 7');
  t.same((objectPartsXml(gaps, 10, 2) as { Part: { PartNumber: number }[] }).Part.map((x) => x.PartNumber), [3, 7], 'a marker between numbers');
});

t.test('bucket tag sets: up to 50, then InvalidTag; the object rules for each tag', async (t) => {
  const xml = (n: number) => doc(many(n).map(([k, v]) => tag(k, v)).join(''));
  t.equal(parseBucketTaggingXml(xml(50)).length, 50, '50 tags');
  t.throws(() => parseBucketTaggingXml(xml(51)), { code: 'InvalidTag', message: 'Bucket tag count cannot be greater than 50' }, '51: InvalidTag');
  t.throws(() => parseBucketTaggingXml(doc(tag('aws:x', '1'))), { code: 'InvalidTag', message: 'Your TagKey cannot be prefixed with aws:' });
  t.throws(() => parseBucketTaggingXml(doc(tag('a', '1') + tag('a', '2'))), { code: 'InvalidTag', message: 'Cannot provide multiple Tags with the same key' });
  t.same(parseBucketTaggingXml(Buffer.from('<Tagging><TagSet/></Tagging>')), [], 'an empty set');
});
