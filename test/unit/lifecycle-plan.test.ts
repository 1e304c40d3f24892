// What the lifecycle job does to one key (src/lifecycle/rules.ts planKey), as tables: a current version
// expired by Days or Date, noncurrent versions by the time since the next version was made and by how
// many newer ones are kept, the delete marker left alone, filters by tag and size, disabled rules; and
// the one prefix a bucket's walk may stay under.
import t from 'tap';
import { parseLifecycleConfiguration } from '../../src/s3/lifecycle.js';
import { actsOnUploads, actsOnVersions, planKey, rulesNeedTags, sharedPrefix, type KeyVersion } from '../../src/lifecycle/rules.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-01-01T00:00:00Z');
const rules = (xml: string) =>
  parseLifecycleConfiguration(Buffer.from(`<LifecycleConfiguration>${xml}</LifecycleConfiguration>`), () => 'generated');
const version = (key: string, versionId: string | null, day: number, extra: Partial<KeyVersion> = {}): KeyVersion => ({
  key, versionId, deleteMarker: false, size: 10, lastModified: T0 + day * DAY, ...extra,
});
const marker = (key: string, versionId: string | null, day: number): KeyVersion => ({ key, versionId, deleteMarker: true, size: 0, lastModified: T0 + day * DAY });

t.test('Expiration of the current version: Days (rounded to the next midnight), Date, filters', async (t) => {
  const r = rules(`
    <Rule><ID>logs</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>3</Days></Expiration></Rule>
    <Rule><ID>big</ID><Filter><And><Prefix>data/</Prefix><ObjectSizeGreaterThan>100</ObjectSizeGreaterThan></And></Filter><Status>Enabled</Status><Expiration><Date>2026-02-01T00:00:00Z</Date></Expiration></Rule>
    <Rule><ID>tagged</ID><Filter><Tag><Key>temp</Key><Value>yes</Value></Tag></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>
    <Rule><ID>off</ID><Filter><Prefix>keep/</Prefix></Filter><Status>Disabled</Status><Expiration><Days>1</Days></Expiration></Rule>`);
  const at = (day: number) => T0 + day * DAY;
  const written = (key: string, extra: Partial<KeyVersion> = {}) => [version(key, null, 0.5, extra)];
  t.equal(planKey(r, written('logs/a'), at(4) - 1).expireCurrent, false, 'day 0.5 + 3 days: due at the midnight after day 3.5, not before');
  t.equal(planKey(r, written('logs/a'), at(4)).expireCurrent, true, 'due at midnight');
  t.equal(planKey(r, written('data/small'), at(40)).expireCurrent, false, 'the size bound');
  t.equal(planKey(r, written('data/large', { size: 101 }), at(31) - 1).expireCurrent, false, 'before the Date');
  t.equal(planKey(r, written('data/large', { size: 101 }), at(31)).expireCurrent, true, 'on the Date');
  t.equal(planKey(r, written('other', { tagging: [['temp', 'yes']] }), at(2)).expireCurrent, true, 'by tag');
  t.equal(planKey(r, written('other', { tagging: [['temp', 'no']] }), at(2)).expireCurrent, false, 'another value');
  t.equal(planKey(r, written('keep/a'), at(400)).expireCurrent, false, 'a disabled rule does nothing');
  t.same(planKey(r, [marker('logs/a', 'm', 0)], at(400)), { expireCurrent: false, removeNoncurrent: [], removeMarker: null }, 'a delete marker is not expired by Days');
  t.same(planKey(r, [], at(1)), { expireCurrent: false, removeNoncurrent: [], removeMarker: null }, 'no versions: nothing');
});

t.test('NoncurrentVersionExpiration: days since the next version was made, NewerNoncurrentVersions kept', async (t) => {
  const r = rules(`<Rule><ID>nc</ID><Filter></Filter><Status>Enabled</Status>
    <NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays><NewerNoncurrentVersions>1</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>`);
  // Newest first: current (day 10), v3 made day 5 (noncurrent since day 10), v2 day 4 (since 5), v1 day 1 (since 4).
  const versions = [version('k', 'cur', 10), version('k', 'v3', 5), version('k', 'v2', 4), version('k', 'v1', 1)];
  t.same(planKey(r, versions, T0 + 6 * DAY).removeNoncurrent, [], 'v1 noncurrent since day 4: due day 7');
  t.same(planKey(r, versions, T0 + 7 * DAY).removeNoncurrent, ['v1'], 'v2 (since day 5) is due day 8');
  t.same(planKey(r, versions, T0 + 8 * DAY).removeNoncurrent, ['v2', 'v1']);
  t.same(planKey(r, versions, T0 + 100 * DAY).removeNoncurrent, ['v2', 'v1'], 'the newest noncurrent version is kept, however old');
  const noNewer = rules(`<Rule><ID>nc</ID><Filter><Prefix>k</Prefix></Filter><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays></NoncurrentVersionExpiration></Rule>`);
  t.same(planKey(noNewer, versions, T0 + 100 * DAY).removeNoncurrent, ['v3', 'v2', 'v1'], 'without NewerNoncurrentVersions every due one goes');
  t.equal(planKey(noNewer, versions, T0 + 100 * DAY).expireCurrent, false, 'never the current version');
  const withMarker = [marker('k', 'dm', 10), version('k', 'v2', 4), marker('k', 'old-dm', 3), version('k', null, 1)];
  t.same(planKey(noNewer, withMarker, T0 + 100 * DAY).removeNoncurrent, ['v2', 'old-dm', null], 'noncurrent delete markers and the "null" version too');
});

t.test('ExpiredObjectDeleteMarker: a delete marker with nothing behind it', async (t) => {
  const r = rules(`
    <Rule><ID>markers</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>
    <Rule><ID>nc</ID><Filter><Prefix>logs/old/</Prefix></Filter><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule>`);
  const now = T0 + 50 * DAY;
  t.same(planKey(r, [marker('logs/a', 'dm', 1)], now).removeMarker, { versionId: 'dm' }, 'a lone marker goes');
  t.same(planKey(r, [marker('logs/a', null, 1)], now).removeMarker, { versionId: null }, 'the "null" marker of a suspended bucket too');
  t.equal(planKey(r, [marker('logs/a', 'dm', 2), version('logs/a', 'v', 1)], now).removeMarker, null, 'not while a version is behind it');
  t.same(planKey(r, [marker('logs/old/a', 'dm', 2), version('logs/old/a', 'v', 1)], now), { expireCurrent: false, removeNoncurrent: ['v'], removeMarker: { versionId: 'dm' } },
    'the versions behind it removed in the same plan: then it goes too');
  t.equal(planKey(r, [marker('data/a', 'dm', 1)], now).removeMarker, null, 'outside the prefix');
  t.equal(planKey(r, [version('logs/a', 'v', 1)], now).removeMarker, null, 'a current object is no marker');
});

t.test('what the walk needs: tags, and the one prefix its rules share', async (t) => {
  const r = rules(`
    <Rule><ID>a</ID><Filter><Prefix>logs/app/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>
    <Rule><ID>b</ID><Filter><And><Prefix>logs/api/</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></And></Filter><Status>Disabled</Status><Expiration><Days>1</Days></Expiration></Rule>
    <Rule><ID>c</ID><Filter><Prefix>logs/db/</Prefix></Filter><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule>
    <Rule><ID>d</ID><Filter><Prefix>tmp/</Prefix></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`);
  t.equal(sharedPrefix(r, actsOnVersions), 'logs/', 'logs/app/ and logs/db/ (b is disabled)');
  t.equal(sharedPrefix(r, actsOnUploads), 'tmp/');
  t.equal(sharedPrefix(r, () => true), '', 'logs/ and tmp/: the whole bucket');
  t.equal(sharedPrefix(r.filter((x) => x.id === 'd'), actsOnVersions), undefined, 'no rule acts on versions');
  t.equal(rulesNeedTags(r), false, 'the tag rule is disabled');
  t.equal(rulesNeedTags(r.map((x) => ({ ...x, enabled: true }))), true);
  t.equal(sharedPrefix(rules(`<Rule><ID>e</ID><Filter><Prefix>a\u{1F600}</Prefix></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>
    <Rule><ID>f</ID><Filter><Prefix>a\u{1F601}</Prefix></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`), actsOnVersions), 'a', 'never half a surrogate pair');
});
