// Bucket lifecycle configurations (src/s3/lifecycle.ts, src/lifecycle/rules.ts) as tables: documents S3 takes, written back
// as GetBucketLifecycleConfiguration answers; documents it refuses, with its codes and words; which
// rule expires an object and when, by AWS's own worked example of the day rounding; x-amz-expiration.
import t from 'tap';
import { lifecycleXml, parseLifecycleConfiguration } from '../../src/s3/lifecycle.js';
import { currentExpiration, dueAfterDays, expirationHeader, filterMatches, type LifecycleRule } from '../../src/lifecycle/rules.js';
import { S3Error } from '../../src/errors/s3-errors.js';
import { toXml } from '../../src/s3/xml.js';

const doc = (rules: string) => Buffer.from(`<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${rules}</LifecycleConfiguration>`);
let ids = 0;
const parse = (rules: string) => parseLifecycleConfiguration(doc(rules), () => `generated-${++ids}`);
const DAY = 86_400_000;

t.test('documents S3 takes, read back', async (t) => {
  const rules = parse(`
    <Rule><ID>logs</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>30</Days></Expiration></Rule>
    <Rule><ID>tmp-big</ID><Filter><And><Prefix>tmp/</Prefix><Tag><Key>class</Key><Value>scratch</Value></Tag><ObjectSizeGreaterThan>1024</ObjectSizeGreaterThan></And></Filter>
      <Status>Disabled</Status><Expiration><Date>2027-01-01T00:00:00Z</Date></Expiration></Rule>
    <Rule><Prefix></Prefix><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>7</NoncurrentDays><NewerNoncurrentVersions>3</NewerNoncurrentVersions></NoncurrentVersionExpiration>
      <AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>
    <Rule><ID>markers</ID><Filter></Filter><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>`);
  t.equal(rules.length, 4);
  t.match(rules[0], { id: 'logs', enabled: true, filter: { prefix: 'logs/', tags: [], form: 'filter' }, expiration: { days: 30 } });
  t.match(rules[1], { id: 'tmp-big', enabled: false, filter: { prefix: 'tmp/', tags: [['class', 'scratch']], sizeGreaterThan: 1024 }, expiration: { date: Date.parse('2027-01-01T00:00:00Z') } });
  t.match(rules[2], { id: /^generated-/, filter: { prefix: '', form: 'legacy-prefix' }, noncurrentExpiration: { noncurrentDays: 7, newerNoncurrentVersions: 3 }, abortIncompleteMultipartDays: 2 }, 'an ID given when none');
  t.match(rules[3], { expiration: { expiredObjectDeleteMarker: true }, filter: { prefix: '', form: 'filter' } });
  const xml = toXml('LifecycleConfiguration', lifecycleXml(rules));
  t.match(xml, /<Rule><Expiration><Days>30<\/Days><\/Expiration><ID>logs<\/ID><Filter><Prefix>logs\/<\/Prefix><\/Filter><Status>Enabled<\/Status><\/Rule>/, 'a rule as S3 writes it');
  t.match(xml, /<Filter><And><Prefix>tmp\/<\/Prefix><Tag><Key>class<\/Key><Value>scratch<\/Value><\/Tag><ObjectSizeGreaterThan>1024<\/ObjectSizeGreaterThan><\/And><\/Filter>/, 'And kept');
  t.match(xml, /<Date>2027-01-01T00:00:00Z<\/Date>/);
  t.match(xml, /<Prefix><\/Prefix><Status>Enabled<\/Status><NoncurrentVersionExpiration><NoncurrentDays>7<\/NoncurrentDays><NewerNoncurrentVersions>3<\/NewerNoncurrentVersions>/, 'the legacy Prefix stays a Prefix');
  t.same(parseLifecycleConfiguration(Buffer.from(xml), () => 'x').map((r) => r.id), rules.map((r) => r.id), 'and reads back the same');
  const empty = parse('<Rule><ID>e</ID><Filter><Prefix></Prefix></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>');
  t.match(toXml('LifecycleConfiguration', lifecycleXml(empty)), /<Filter><Prefix><\/Prefix><\/Filter>/, 'an empty Prefix given is given back');
  t.match(xml, /<ID>markers<\/ID><Filter><\/Filter>/, 'an empty Filter stays empty');
});

t.test('documents S3 refuses, with its codes and words', async (t) => {
  const rule = (body: string) => `<Rule><ID>r</ID>${body}</Rule>`;
  const cases: [string, string, string, RegExp?][] = [
    ['no rules', '', 'MalformedXML'],
    ['no Status', rule('<Filter/><Expiration><Days>1</Days></Expiration>'), 'MalformedXML'],
    ['a bad Status', rule('<Filter/><Status>On</Status><Expiration><Days>1</Days></Expiration>'), 'MalformedXML'],
    ['no action', rule('<Filter/><Status>Enabled</Status>'), 'InvalidRequest', /At least one action needs to be specified in a rule/],
    ['Days 0', rule('<Filter/><Status>Enabled</Status><Expiration><Days>0</Days></Expiration>'), 'InvalidArgument', /'Days' for Expiration action must be a positive integer/],
    ['Days and Date', rule('<Filter/><Status>Enabled</Status><Expiration><Days>1</Days><Date>2027-01-01T00:00:00Z</Date></Expiration>'), 'MalformedXML'],
    ['a Date not at midnight', rule('<Filter/><Status>Enabled</Status><Expiration><Date>2027-01-01T10:00:00Z</Date></Expiration>'), 'InvalidArgument', /'Date' must be at midnight GMT/],
    ['Prefix and Filter', rule('<Prefix>a</Prefix><Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>'), 'MalformedXML'],
    ['two conditions outside And', rule('<Filter><Prefix>a</Prefix><ObjectSizeLessThan>9</ObjectSizeLessThan></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>'), 'MalformedXML'],
    ['sizes the wrong way round', rule('<Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>5</ObjectSizeLessThan></And></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>'), 'InvalidArgument', /ObjectSizeLessThan must be greater/],
    ['abort with a tag', rule('<Filter><Tag><Key>a</Key><Value>b</Value></Tag></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload>'), 'InvalidRequest', /cannot be specified with Tags/],
    ['a transition', rule('<Filter/><Status>Enabled</Status><Transition><Days>30</Days><StorageClass>GLACIER</StorageClass></Transition>'), 'InvalidRequest', /one storage class/],
    ['two rules with one ID', rule('<Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration>').repeat(2), 'InvalidArgument', /Rule ID must be unique/],
    ['an ID too long', `<Rule><ID>${'x'.repeat(256)}</ID><Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`, 'InvalidArgument', /ID length should not exceed/],
    ['too many newer versions', rule('<Filter/><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>101</NewerNoncurrentVersions></NoncurrentVersionExpiration>'), 'InvalidArgument', /at most 100/],
    ['an unknown element', rule('<Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration><Colour>red</Colour>'), 'MalformedXML'],
  ];
  for (const [name, body, code, message] of cases) {
    t.throws(() => parse(body), { constructor: S3Error, code, ...(message ? { message } : {}) }, `${name}: ${code}`);
  }
});

t.test("expiry days round up to the next midnight UTC (AWS's example: 1/15 10:30 + 3 days -> 1/19 00:00)", async (t) => {
  t.equal(new Date(dueAfterDays(Date.parse('2014-01-15T10:30:00Z'), 3)).toISOString(), '2014-01-19T00:00:00.000Z');
  t.equal(new Date(dueAfterDays(Date.parse('2014-01-15T23:59:59Z'), 1)).toISOString(), '2014-01-17T00:00:00.000Z');
});

t.test('which rule expires an object, and x-amz-expiration', async (t) => {
  const rules: LifecycleRule[] = parse(`
    <Rule><ID>logs-30</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>30</Days></Expiration></Rule>
    <Rule><ID>debug-1</ID><Filter><And><Prefix>logs/</Prefix><Tag><Key>level</Key><Value>debug</Value></Tag></And></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>
    <Rule><ID>off</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Disabled</Status><Expiration><Days>0001</Days></Expiration></Rule>
    <Rule><ID>small</ID><Filter><ObjectSizeLessThan>100</ObjectSizeLessThan></Filter><Status>Enabled</Status><Expiration><Date>2030-06-01T00:00:00Z</Date></Expiration></Rule>`);
  const at = Date.parse('2026-12-03T08:00:00Z');
  const o = (key: string, size: number, tagging: [string, string][] = []) => ({ key, size, tagging, lastModified: at });
  t.same(currentExpiration(rules, o('logs/a', 500)), { ruleId: 'logs-30', at: Date.parse('2027-01-03T00:00:00Z') }, 'the prefix rule');
  t.same(currentExpiration(rules, o('logs/a', 500, [['level', 'debug']])), { ruleId: 'debug-1', at: Date.parse('2026-12-05T00:00:00Z') }, 'the earliest of the rules that match');
  t.equal(currentExpiration(rules, o('data/a', 500)), undefined, 'no rule: no expiry (a disabled rule does nothing)');
  t.same(currentExpiration(rules, o('data/tiny', 5)), { ruleId: 'small', at: Date.parse('2030-06-01T00:00:00Z') }, 'by size');
  t.equal(expirationHeader(rules, o('logs/a', 500)), 'expiry-date="Sun, 03 Jan 2027 00:00:00 GMT", rule-id="logs-30"');
  t.equal(expirationHeader(rules, o('data/a', 500)), undefined);
  t.ok(filterMatches(rules[1]!.filter, { key: 'logs/x', size: 1, tagging: [['other', '1'], ['level', 'debug']] }), 'every named tag, among others');
  t.notOk(filterMatches(rules[1]!.filter, { key: 'logs/x', size: 1, tagging: [['level', 'info']] }), 'not another value');
});
