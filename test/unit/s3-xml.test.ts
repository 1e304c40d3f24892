// The XML writer's last line (src/s3/xml.ts): whatever a handler puts in an answer, the text is
// well-formed XML 1.0. Judged by fast-xml-parser's validator, and by what reading it back gives.
import t from 'tap';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { hasNonXmlChar, toXml, XmlSequence } from '../../src/s3/xml.js';

const reader = new XMLParser({ parseTagValue: false, trimValues: false, processEntities: true, htmlEntities: true });

t.test('characters XML 1.0 cannot carry become U+FFFD; everything else is kept exactly', async (t) => {
  const every = Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(i)).join('') + ' ok \ud83d\ude00 \ufffd\ufffe\uffff';
  const xml = toXml('Error', { Code: 'InvalidArgument', Key: every, List: [{ Prefix: `a${every}` }] }, { namespace: false });
  t.equal(XMLValidator.validate(xml), true, 'well-formed');
  t.notOk(hasNonXmlChar(xml), 'no character XML cannot carry is left');
  const key = (reader.parse(xml) as { Error: { Key: string } }).Error.Key;
  const expected = every.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '\ufffd');
  t.equal(key, expected, 'tab, LF, CR (as references) and the rest come back; the others as U+FFFD');
  t.match(xml, /&#9;&#10;\ufffd\ufffd&#13;/, 'tab, LF and CR written as character references');
});

t.test('hasNonXmlChar', async (t) => {
  for (const c of ['\u0000', '\u0001', '\u0008', '\u000b', '\u000c', '\u000e', '\u001f', '\ufffe', '\uffff']) t.ok(hasNonXmlChar(`a${c}b`), JSON.stringify(c));
  for (const c of ['\t', '\n', '\r', ' ', '\u007f', '\u0085', '\ufffd', '\ud83d\ude00']) t.notOk(hasNonXmlChar(`a${c}b`), JSON.stringify(c));
});

t.test('an XmlSequence writes elements of different names in the given order, escaped like the rest', async (t) => {
  const xml = toXml('ListVersionsResult', {
    Name: 'b',
    IsTruncated: false,
    Entries: new XmlSequence([
      ['Version', { Key: 'a<&>', VersionId: '2' }],
      ['DeleteMarker', { Key: 'a<&>', VersionId: '1', Owner: { ID: 'o' } }],
      ['Version', { Key: `b\u0001\n`, VersionId: 'null', Nested: new XmlSequence([['X', { V: '1' }], ['Y', { V: '2' }]]) }],
    ]),
    CommonPrefixes: [{ Prefix: 'p/' }],
  });
  t.equal(XMLValidator.validate(xml), true, 'well-formed');
  t.notOk(xml.includes('S3edgeXmlSequence'), 'no placeholder is left');
  const order = [...xml.matchAll(/<(Name|IsTruncated|Version|DeleteMarker|CommonPrefixes|X|Y)>/g)].map((m) => m[1]);
  t.same(order, ['Name', 'IsTruncated', 'Version', 'DeleteMarker', 'Version', 'X', 'Y', 'CommonPrefixes'], 'in place and in order');
  t.match(xml, '<Key>a&lt;&amp;&gt;</Key>', 'text in a sequence is escaped');
  t.match(xml, '<Key>b\ufffd&#10;</Key>', 'and swept like the rest');
  t.match(xml, '<DeleteMarker><Key>a&lt;&amp;&gt;</Key><VersionId>1</VersionId><Owner><ID>o</ID></Owner></DeleteMarker>', 'nested objects kept');
});
