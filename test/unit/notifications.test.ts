// Event notifications' pure parts as tables: NotificationConfiguration documents S3 takes and refuses
// (src/s3/notification-config.ts), which configurations an event matches, the AWS S3 event message a
// webhook receives and its signature (src/notifications/event-record.ts).
import t from 'tap';
import { matchingConfigurations, notificationXml, parseNotificationConfiguration, targetIdOf } from '../../src/s3/notification-config.js';
import { eventKey, eventMessage, signBody, signatureValid, type ObjectEvent } from '../../src/notifications/event-record.js';
import { S3Error } from '../../src/errors/s3-errors.js';
import { toXml } from '../../src/s3/xml.js';
import { backoffMs } from '../../src/notifications/dispatcher.js';

const REGION = 'us-east-1';
const TARGETS = new Set(['hooks', 'audit']);
const arn = (id: string, region = REGION) => `arn:s3edge:sqs:${region}:${id}:webhook`;
const doc = (body: string) => Buffer.from(`<NotificationConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${body}</NotificationConfiguration>`);
const queue = (id: string, target: string, events: string[], filter = '') =>
  `<QueueConfiguration><Id>${id}</Id><Queue>${arn(target)}</Queue>${events.map((e) => `<Event>${e}</Event>`).join('')}${filter}</QueueConfiguration>`;
const rules = (...r: [string, string][]) => `<Filter><S3Key>${r.map(([n, v]) => `<FilterRule><Name>${n}</Name><Value>${v}</Value></FilterRule>`).join('')}</S3Key></Filter>`;
let n = 0;
const parse = (body: string) => parseNotificationConfiguration(doc(body), REGION, TARGETS, () => `generated-${++n}`);

t.test('documents S3 takes, written back, and what each event matches', async (t) => {
  const configs = parse(
    queue('images', 'hooks', ['s3:ObjectCreated:*'], rules(['prefix', 'images/'], ['Suffix', '.jpg'])) +
    queue('removals', 'audit', ['s3:ObjectRemoved:Delete', 's3:ObjectRemoved:DeleteMarkerCreated']) +
    `<QueueConfiguration><Queue>${arn('hooks')}</Queue><Event>s3:ObjectCreated:Put</Event>${rules(['prefix', 'docs/'])}</QueueConfiguration>`,
  );
  t.match(configs, [
    { id: 'images', targetId: 'hooks', events: ['s3:ObjectCreated:*'], prefix: 'images/', suffix: '.jpg' },
    { id: 'removals', targetId: 'audit', prefix: '', suffix: '' },
    { id: /^generated-/, events: ['s3:ObjectCreated:Put'], prefix: 'docs/' },
  ]);
  const ids = (event: Parameters<typeof matchingConfigurations>[1], key: string) => matchingConfigurations(configs, event, key).map((c) => c.id);
  t.same(ids('s3:ObjectCreated:Put', 'images/cat.jpg'), ['images'], 'a Put under the prefix, with the suffix');
  t.same(ids('s3:ObjectCreated:CompleteMultipartUpload', 'images/big.jpg'), ['images'], 'ObjectCreated:* takes every creation');
  t.same(ids('s3:ObjectCreated:Put', 'images/cat.png'), [], 'not another suffix');
  t.same(ids('s3:ObjectRemoved:Delete', 'images/cat.jpg'), ['removals'], 'removals anywhere');
  t.same(ids('s3:ObjectCreated:Copy', 'docs/a'), [], 'Put only: not a copy');
  t.same(ids('s3:ObjectCreated:Put', 'docs/a'), [configs[2]!.id]);
  const xml = toXml('NotificationConfiguration', notificationXml(configs));
  t.match(xml, /<QueueConfiguration><Id>images<\/Id><Queue>arn:s3edge:sqs:us-east-1:hooks:webhook<\/Queue><Event>s3:ObjectCreated:\*<\/Event><Filter><S3Key><FilterRule><Name>Prefix<\/Name><Value>images\/<\/Value><\/FilterRule><FilterRule><Name>Suffix<\/Name><Value>\.jpg<\/Value><\/FilterRule><\/S3Key><\/Filter><\/QueueConfiguration>/);
  t.same(parseNotificationConfiguration(Buffer.from(xml), REGION, TARGETS, () => 'x'), configs, 'and reads back the same');
  t.same(parse(''), [], 'an empty document: no configurations');
});

t.test('documents S3 refuses, with its codes and words', async (t) => {
  const cases: [string, string, string, RegExp][] = [
    ['a target nobody defined', queue('a', 'nobody', ['s3:ObjectCreated:*']), 'InvalidArgument', /Unable to validate the following destination configurations: arn:s3edge:sqs:us-east-1:nobody:webhook/],
    ['another region', `<QueueConfiguration><Queue>${arn('hooks', 'eu-west-1')}</Queue><Event>s3:ObjectCreated:*</Event></QueueConfiguration>`, 'InvalidArgument', /Unable to validate/],
    ['an AWS queue', `<QueueConfiguration><Queue>arn:aws:sqs:us-east-1:123456789012:q</Queue><Event>s3:ObjectCreated:*</Event></QueueConfiguration>`, 'InvalidArgument', /Unable to validate/],
    ['an unknown event', queue('a', 'hooks', ['s3:ObjectRestore:Post']), 'InvalidArgument', /The event is not supported for notifications/],
    ['no event', queue('a', 'hooks', []), 'MalformedXML', /./],
    ['a topic', '<TopicConfiguration><Topic>arn:aws:sns:us-east-1:1:t</Topic><Event>s3:ObjectCreated:*</Event></TopicConfiguration>', 'InvalidArgument', /TopicConfiguration is not supported: define a webhook target/],
    ['a rule named otherwise', queue('a', 'hooks', ['s3:ObjectCreated:*'], rules(['middle', 'x'])), 'InvalidArgument', /filter rule name must be either prefix or suffix/],
    ['two prefixes', queue('a', 'hooks', ['s3:ObjectCreated:*'], rules(['prefix', 'a'], ['Prefix', 'b'])), 'InvalidArgument', /more than one prefix rule/],
    ['overlapping configurations', queue('a', 'hooks', ['s3:ObjectCreated:*'], rules(['prefix', 'img/'])) + queue('b', 'audit', ['s3:ObjectCreated:Put'], rules(['prefix', 'img/cats/'])), 'InvalidArgument', /Configurations overlap/],
    ['one id twice', queue('a', 'hooks', ['s3:ObjectCreated:*'], rules(['prefix', 'x/'])) + queue('a', 'audit', ['s3:ObjectRemoved:*']), 'InvalidArgument', /Ids must be unique/],
  ];
  for (const [name, body, code, message] of cases) {
    t.throws(() => parse(body), { constructor: S3Error, code, ...(message ? { message } : {}) }, `${name}: ${code}`);
  }
  t.same(parse(queue('a', 'hooks', ['s3:ObjectCreated:*'], rules(['prefix', 'img/'])) + queue('b', 'audit', ['s3:ObjectCreated:*'], rules(['prefix', 'doc/']))).length, 2, 'disjoint prefixes do not overlap');
  t.equal(targetIdOf(arn('hooks'), REGION), 'hooks');
  t.equal(targetIdOf('arn:s3edge:sqs:us-east-1:hooks:lambda', REGION), undefined);
});

t.test("the message a webhook receives: S3's event record; its signature", async (t) => {
  const e: ObjectEvent = {
    id: 'evt-1', name: 's3:ObjectCreated:Put', time: Date.parse('2026-12-03T09:00:00Z'), region: REGION, bucket: 'photos', bucketOwner: 'ana',
    key: 'holiday pics/beach (1).jpg', size: 1234, etag: '"0123abcd"', versionId: null, principal: 'SEANAKEY', sourceIp: '203.0.113.5',
    requestId: 'REQ1', sequencer: '0000019A1B2C3D4E', configurationId: 'images',
  };
  const m = eventMessage(e);
  t.same(m, {
    Records: [{
      eventVersion: '2.1', eventSource: 'aws:s3', awsRegion: REGION, eventTime: '2026-12-03T09:00:00.000Z', eventName: 'ObjectCreated:Put',
      userIdentity: { principalId: 'SEANAKEY' }, requestParameters: { sourceIPAddress: '203.0.113.5' },
      responseElements: { 'x-amz-request-id': 'REQ1', 'x-amz-id-2': 'evt-1' },
      s3: {
        s3SchemaVersion: '1.0', configurationId: 'images',
        bucket: { name: 'photos', ownerIdentity: { principalId: 'ana' }, arn: 'arn:aws:s3:::photos' },
        object: { key: 'holiday+pics%2Fbeach+%281%29.jpg', sequencer: '0000019A1B2C3D4E', size: 1234, eTag: '0123abcd' },
      },
    }],
  }, 'the shape and names of S3 event messages (version 2.1)');
  const removed = eventMessage({ ...e, name: 's3:ObjectRemoved:DeleteMarkerCreated', versionId: 'v1', etag: null });
  t.same((removed.Records[0]!['s3'] as { object: unknown }).object, { key: 'holiday+pics%2Fbeach+%281%29.jpg', sequencer: '0000019A1B2C3D4E', versionId: 'v1' }, 'a removal: no size');
  t.equal(eventKey('a b/c+d'), 'a+b%2Fc%2Bd', 'keys encoded as a form value');
  const body = JSON.stringify(m);
  const sig = signBody(body, 'shh');
  t.match(sig, /^sha256=[0-9a-f]{64}$/);
  t.ok(signatureValid(body, 'shh', sig), 'the receiver accepts it');
  t.notOk(signatureValid(`${body} `, 'shh', sig), 'not a changed body');
  t.notOk(signatureValid(body, 'other', sig), 'nor another secret');
  t.notOk(signatureValid(body, 'shh', undefined), 'nor none');
});

t.test('retry backoff: 1 s, then doubling, at most 10 minutes', async (t) => {
  t.same([1, 2, 3, 4, 5].map(backoffMs), [1000, 2000, 4000, 8000, 16000]);
  t.equal(backoffMs(11), 600_000);
  t.equal(backoffMs(40), 600_000, 'never beyond the cap');
});
