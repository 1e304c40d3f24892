// The RFC 9224 bootstrap: validation, longest match on labels, https first; the shipped IANA copy;
// the source that prefers the configured file, then the settings table (re-read once a second), then
// the shipped file.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/open.js';
import { createRepos } from '../../src/db/repos/index.js';
import { Bootstrap, BootstrapError, validateBootstrap } from '../../src/domains/availability/bootstrap.js';
import { BOOTSTRAP_SETTING, BootstrapSource, readBootstrapFile, SHIPPED_BOOTSTRAP_FILE } from '../../src/domains/availability/bootstrap-source.js';
import { bootstrapJson } from '../helpers/rdap-fixture.js';
import { tempDir } from '../helpers/temp-data.js';

const PUBLICATION = '2026-01-01T00:00:00Z';

function file(services: unknown): Record<string, unknown> {
  return { description: 'test', publication: PUBLICATION, services, version: '1.0' };
}

t.test('longest match on whole labels from the right', async (t) => {
  const b = new Bootstrap(
    validateBootstrap(
      file([
        [['uk'], ['https://rdap.nominet.example/uk/']],
        [['co.uk'], ['https://co-uk.example/rdap/']],
        [['com', 'net'], ['https://verisign.example/v1/']],
      ]),
    ),
  );
  t.same(b.serversFor('example.co.uk'), ['https://co-uk.example/rdap/'], 'co.uk entry beats uk');
  t.same(b.serversFor('co.uk'), ['https://co-uk.example/rdap/']);
  t.same(b.serversFor('org.uk'), ['https://rdap.nominet.example/uk/'], 'no org.uk entry: uk');
  t.same(b.serversFor('a.b.example.uk'), ['https://rdap.nominet.example/uk/']);
  t.same(b.serversFor('EXAMPLE.COM.'), ['https://verisign.example/v1/'], 'case and a trailing dot do not matter');
  t.same(b.serversFor('net'), ['https://verisign.example/v1/']);
  t.same(b.serversFor('xuk'), [], 'labels, not string suffixes');
  t.same(b.serversFor('example.de'), [], 'no entry: no server');
  t.equal(b.serviceCount, 3);
  t.equal(b.entryCount, 4);
  t.equal(b.publication, PUBLICATION);
});

t.test('https first; base URLs end with a slash; a repeated entry keeps its first service', async (t) => {
  const b = new Bootstrap(
    validateBootstrap(
      file([
        [['example'], ['http://plain.example/rdap/', 'https://secure.example/rdap']],
        [['plain'], ['http://only-http.example/']],
        [['EXAMPLE', 'other'], ['https://later.example/']],
      ]),
    ),
  );
  t.same(b.serversFor('a.example'), ['https://secure.example/rdap/', 'http://plain.example/rdap/']);
  t.same(b.serversFor('a.plain'), ['http://only-http.example/'], 'http when it is all there is');
  t.same(b.serversFor('a.other'), ['https://later.example/']);
});

t.test('validation names the first problem', async (t) => {
  const bad: [string, unknown][] = [
    ['not an object', []],
    ['no version', { publication: PUBLICATION, services: [] }],
    ['version 2.0', { ...file([]), version: '2.0' }],
    ['no publication', { version: '1.0', services: [] }],
    ['publication not a date-time', { ...file([]), publication: 'yesterday' }],
    ['services not an array', file({})],
    ['a service not a pair', file([[['com']]])],
    ['a service of strings', file([['com', 'https://x.example/']])],
    ['no entries', file([[[], ['https://x.example/']]])],
    ['no URLs', file([[['com'], []]])],
    ['an entry with a leading dot', file([[['.com'], ['https://x.example/']]])],
    ['an entry with a space', file([[['co m'], ['https://x.example/']]])],
    ['an entry that is not a string', file([[[7], ['https://x.example/']]])],
    ['a URL that is not one', file([[['com'], ['not a url']]])],
    ['a URL of another scheme', file([[['com'], ['ftp://x.example/']]])],
    ['a URL with credentials', file([[['com'], ['https://u:p@x.example/']]])],
    ['a URL with a query', file([[['com'], ['https://x.example/?q=1']]])],
  ];
  for (const [what, json] of bad) t.throws(() => validateBootstrap(json), BootstrapError, what);
  t.throws(() => Bootstrap.parse('{"version":'), { name: 'BootstrapError', message: 'RDAP bootstrap: not JSON' });
  t.same(validateBootstrap(file([])).services, [], 'an empty services list is valid (the refresh refuses it)');
});

t.test('the shipped file is IANA format and covers the TLDs we sell; ccTLDs without RDAP are absent', async (t) => {
  const b = readBootstrapFile(SHIPPED_BOOTSTRAP_FILE);
  t.ok(b.serviceCount > 500, `${b.serviceCount} services`);
  t.match(b.file.description, /RDAP bootstrap file for Domain Name System registrations/);
  const expected: Record<string, string> = {
    com: 'https://rdap.verisign.com/com/v1/',
    net: 'https://rdap.verisign.com/net/v1/',
    org: 'https://rdap.publicinterestregistry.org/rdap/',
    info: 'https://rdap.identitydigital.services/rdap/',
    ai: 'https://rdap.identitydigital.services/rdap/',
    biz: 'https://rdap.nic.biz/',
    app: 'https://pubapi.registry.google/rdap/',
    dev: 'https://pubapi.registry.google/rdap/',
    page: 'https://pubapi.registry.google/rdap/',
    xyz: 'https://rdap.centralnic.com/xyz/',
    uk: 'https://rdap.nominet.uk/uk/',
    'co.uk': 'https://rdap.nominet.uk/uk/',
    ng: 'https://rdap.nic.net.ng/',
    cv: 'https://rdap.nic.cv/',
    tv: 'https://rdap.nic.tv/',
    online: 'https://rdap.radix.host/rdap/',
    site: 'https://rdap.radix.host/rdap/',
    store: 'https://rdap.radix.host/rdap/',
    tech: 'https://rdap.radix.host/rdap/',
    shop: 'https://rdap.gmoregistry.net/rdap/',
    blog: 'https://rdap.blog.fury.ca/rdap/',
    cloud: 'https://rdap.registry.cloud/rdap/',
    ca: 'https://rdap.ca.fury.ca/rdap/',
    fr: 'https://rdap.nic.fr/',
    nl: 'https://rdap.sidn.nl/',
    au: 'https://rdap.cctld.au/rdap/',
    in: 'https://rdap.nixiregistry.in/rdap/',
  };
  for (const [tld, url] of Object.entries(expected)) t.same(b.serversFor(`example.${tld}`), [url], tld);
  // IANA lists no RDAP service for these registries (as of the shipped publication): `no-rdap-server`.
  for (const tld of ['io', 'co', 'me', 'de', 'eu', 'us']) t.same(b.serversFor(`example.${tld}`), [], `${tld} absent`);
});

t.test('source: the settings copy when present (re-read at most once a second), else the shipped file', async (t) => {
  const db = openDatabase(join(tempDir(t), 'meta.db'));
  t.teardown(() => db.close());
  const { settings } = createRepos(db);
  let now = 1_000_000;
  const invalid: Error[] = [];
  const source = new BootstrapSource({ settings, now: () => now, onInvalid: (e) => invalid.push(e) });
  const shipped = (await source.current());
  t.same(shipped.serversFor('example.com'), ['https://rdap.verisign.com/com/v1/'], 'nothing stored: shipped');

  await settings.set(BOOTSTRAP_SETTING, JSON.stringify(bootstrapJson(['com', 'test'], 'http://127.0.0.1:1/rdap/')));
  now += 999;
  t.equal((await source.current()), shipped, 'not re-read within the second');
  now += 1;
  t.same((await source.current()).serversFor('a.test'), ['http://127.0.0.1:1/rdap/'], 'the stored copy after a second');
  const stored = (await source.current());
  now += 5000;
  t.equal((await source.current()), stored, 'an unchanged row is not parsed again');

  await settings.set(BOOTSTRAP_SETTING, '{"version":"1.0"');
  now += 1000;
  t.equal((await source.current()), shipped, 'a broken row: the shipped file serves');
  now += 1000;
  await source.current();
  t.equal(invalid.length, 1, 'reported once per stored value');

  await settings.delete(BOOTSTRAP_SETTING);
  now += 1000;
  t.equal((await source.current()), shipped);
});

t.test('source: the lookups of one search, made while the settings row is being read, all get the stored copy', async (t) => {
  let reads = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const settings = {
    get: async () => {
      reads++;
      await gate;
      return JSON.stringify(bootstrapJson(['com', 'net', 'org'], 'http://127.0.0.1:2/rdap/'));
    },
  };
  const source = new BootstrapSource({ settings, now: () => 5_000_000 });
  const lookups = ['a.com', 'a.net', 'a.org'].map(async (name) => (await source.current()).serversFor(name));
  release();
  t.same(await Promise.all(lookups), [['http://127.0.0.1:2/rdap/'], ['http://127.0.0.1:2/rdap/'], ['http://127.0.0.1:2/rdap/']], 'none fell back to the shipped file');
  t.equal(reads, 1, 'one read for all of them');
});

t.test('source: a configured file is the only source and must be readable at start', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'dns.json');
  writeFileSync(path, JSON.stringify(bootstrapJson(['test'], 'http://127.0.0.1:2/rdap/')));
  const settings = { get: async () => JSON.stringify(bootstrapJson(['test'], 'http://127.0.0.1:3/rdap/')) };
  const source = new BootstrapSource({ file: path, settings });
  t.same((await source.current()).serversFor('a.test'), ['http://127.0.0.1:2/rdap/']);
  t.same((await source.current()).serversFor('a.com'), [], 'the shipped file is not merged in');
  t.throws(() => new BootstrapSource({ file: join(dir, 'missing.json') }), { name: 'BootstrapError', message: /cannot read/ });
  writeFileSync(join(dir, 'bad.json'), '{"version":"1.0","publication":"x","services":[]}');
  t.throws(() => new BootstrapSource({ file: join(dir, 'bad.json') }), { name: 'BootstrapError', message: /bad\.json: publication/ });
});
