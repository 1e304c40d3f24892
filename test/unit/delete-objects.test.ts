// The DeleteObjects request document, and the owner-only ACL check: XML parsed exactly (keys keep
// their spaces; entities and character references decoded once).
import t from 'tap';
import { parseDeleteRequest } from '../../src/s3/operations/delete-objects.js';
import { aclFromDocument } from '../../src/s3/operations/acl.js';
import { decodeXmlText } from '../../src/s3/request-body-xml.js';
import { toXml } from '../../src/s3/xml.js';

function doc(inner: string): Buffer {
  return Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>\n<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${inner}</Delete>`);
}

t.test('parse', async (t) => {
  t.same(parseDeleteRequest(doc('<Object><Key>a</Key></Object>')), { quiet: false, objects: [{ key: 'a' }] });
  t.same(
    parseDeleteRequest(doc('\n  <Quiet>true</Quiet>\n  <Object>\n    <Key>a</Key>\n    <VersionId>null</VersionId>\n  </Object>\n  <Object><Key>b</Key></Object>\n')),
    { quiet: true, objects: [{ key: 'a', versionId: 'null' }, { key: 'b' }] },
    'whitespace between elements, Quiet, VersionId',
  );
  t.same(parseDeleteRequest(doc('<Quiet> FALSE </Quiet><Object><Key>a</Key></Object>')).quiet, false);
  t.same(parseDeleteRequest(doc('<Object><Key>  spaced  </Key></Object>')).objects, [{ key: '  spaced  ' }], 'keys are not trimmed');
  t.same(
    parseDeleteRequest(doc('<Object><Key>a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos; &#13;&#x41;&#x1F600; &amp;#13;</Key></Object>')).objects,
    [{ key: 'a & b <c> "d" \'e\' \rA😀 &#13;' }],
    'entities decoded exactly once',
  );
  t.same(parseDeleteRequest(doc('<Object><Key>ünï/../x</Key></Object>')).objects, [{ key: 'ünï/../x' }]);
  t.same(parseDeleteRequest(doc('<Object><Key>   </Key></Object><Object><Key>\n x \n</Key></Object>')).objects, [{ key: '   ' }, { key: '\n x \n' }], 'whitespace-only and newline keys');
  t.same(parseDeleteRequest(doc('<Object><Key><![CDATA[a&amp;<b>]]></Key></Object>')).objects, [{ key: 'a&amp;<b>' }], 'CDATA is literal');
  t.same(parseDeleteRequest(doc('<Object><Key></Key></Object>')).objects, [{ key: '' }], 'an empty key is left to the per-key check');
  t.same(parseDeleteRequest(doc('<Object><Key>k</Key><ETag>"x"</ETag></Object>')).objects, [{ key: 'k' }], 'optional newer elements are tolerated');
  const thousand = Array.from({ length: 1000 }, (_, i) => `<Object><Key>k${i}</Key></Object>`).join('');
  t.equal(parseDeleteRequest(doc(thousand)).objects.length, 1000);
  const built = toXml('Delete', { Object: [{ Key: ' <&> ' }, { Key: 'x' }] });
  t.same(parseDeleteRequest(Buffer.from(built)).objects, [{ key: ' <&> ' }, { key: 'x' }], 'round trip through our own builder');
});

t.test('malformed', async (t) => {
  const cases: Array<[string, Buffer]> = [
    ['1001 keys', doc(Array.from({ length: 1001 }, (_, i) => `<Object><Key>k${i}</Key></Object>`).join(''))],
    ['no objects', doc('<Quiet>true</Quiet>')],
    ['empty document', Buffer.from('')],
    ['object without key', doc('<Object><VersionId>x</VersionId></Object>')],
    ['two keys in one object', doc('<Object><Key>a</Key><Key>b</Key></Object>')],
    ['key with child elements', doc('<Object><Key><b>x</b></Key></Object>')],
    ['unknown element', doc('<Object><Key>a</Key></Object><Bogus/>')],
    ['bad quiet', doc('<Quiet>yes</Quiet><Object><Key>a</Key></Object>')],
    ['wrong root', Buffer.from('<Remove><Object><Key>a</Key></Object></Remove>')],
    ['unclosed', Buffer.from('<Delete><Object><Key>a</Key></Object>')],
    ['DOCTYPE', Buffer.from('<!DOCTYPE d [<!ENTITY x "y">]><Delete><Object><Key>&x;</Key></Object></Delete>')],
    ['bad character reference', doc('<Object><Key>&#xD800;</Key></Object>')],
    ['CDATA mixed with text', doc('<Object><Key>a<![CDATA[b]]></Key></Object>')],
  ];
  for (const [what, body] of cases) t.throws(() => parseDeleteRequest(body), { code: 'MalformedXML' }, what);
});

t.test('decodeXmlText', async (t) => {
  t.equal(decodeXmlText('plain'), 'plain');
  t.equal(decodeXmlText('&amp;amp;'), '&amp;', 'one pass');
  t.equal(decodeXmlText('&unknown;'), '&unknown;', 'unknown entities are left alone');
});

t.test('ACL documents: the owner FULL_CONTROL, and at most AllUsers READ (and WRITE)', async (t) => {
  const owner = 'user-1';
  const acl = (grants: string, ownerId = owner) =>
    Buffer.from(`<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Owner><ID>${ownerId}</ID></Owner><AccessControlList>${grants}</AccessControlList></AccessControlPolicy>`);
  const grant = (grantee: string, permission: string) =>
    `<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser">${grantee}</Grantee><Permission>${permission}</Permission></Grant>`;
  const full = grant(`<ID>${owner}</ID><DisplayName>me</DisplayName>`, 'FULL_CONTROL');
  const allUsers = (permission: string) => grant('<URI>http://acs.amazonaws.com/groups/global/AllUsers</URI>', permission);
  t.equal(aclFromDocument(acl(full), owner), null, 'owner only: private');
  t.equal(aclFromDocument(acl(full + allUsers('READ')), owner), 'public-read', 's3cmd setacl --acl-public');
  t.equal(aclFromDocument(acl(full + allUsers('READ') + allUsers('WRITE')), owner), 'public-read-write');
  t.throws(() => aclFromDocument(acl(full + allUsers('WRITE')), owner), { code: 'NotImplemented' }, 'write without read');
  t.throws(() => aclFromDocument(acl(full + allUsers('READ_ACP')), owner), { code: 'NotImplemented' }, 'another permission for everyone');
  t.throws(() => aclFromDocument(acl(full + grant('<URI>http://acs.amazonaws.com/groups/global/AuthenticatedUsers</URI>', 'READ')), owner), { code: 'NotImplemented' }, 'another group');
  t.throws(() => aclFromDocument(acl(grant('<ID>other</ID>', 'FULL_CONTROL')), owner), { code: 'NotImplemented' }, 'another grantee');
  t.throws(() => aclFromDocument(acl(grant(`<ID>${owner}</ID>`, 'READ')), owner), { code: 'NotImplemented' }, 'a lesser permission');
  t.throws(() => aclFromDocument(acl(allUsers('READ')), owner), { code: 'NotImplemented' }, 'public without the owner');
  t.throws(() => aclFromDocument(acl(''), owner), { code: 'NotImplemented' }, 'no grants');
  t.throws(() => aclFromDocument(acl(full, 'other'), owner), { code: 'NotImplemented' }, 'another owner');
  t.throws(() => aclFromDocument(Buffer.from('<AccessControlPolicy/>'), owner), { code: 'MalformedXML' });
});
