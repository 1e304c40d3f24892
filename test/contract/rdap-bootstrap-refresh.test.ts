// refreshBootstrap against a real loopback server: a good file is stored in the settings table and a
// running source picks it up within a second; a failed download or a bad file stores nothing.
import t from 'tap';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/open.js';
import { createRepos } from '../../src/db/repos/index.js';
import { BOOTSTRAP_SETTING, BootstrapSource, refreshBootstrap } from '../../src/domains/availability/bootstrap-source.js';
import { OutboundClient } from '../../src/net/outbound-client.js';
import { bootstrapJson, startRdapFixture } from '../helpers/rdap-fixture.js';
import { tempDir } from '../helpers/temp-data.js';

t.test('refresh from a loopback URL stores the file; a running source sees it within a second', async (t) => {
  const f = await startRdapFixture();
  t.teardown(() => f.close());
  const client = new OutboundClient({ allowPrivateAddresses: true, timeoutMs: 2000, maxAnswerBytes: 1 << 20 });
  t.teardown(() => client.close());
  const db = openDatabase(join(tempDir(t), 'meta.db'));
  t.teardown(() => db.close());
  const { settings } = createRepos(db);
  let now = 0;
  const source = new BootstrapSource({ settings, now: () => now });
  t.same((await source.current()).serversFor('a.test'), [], 'the shipped file has no .test');

  const json = bootstrapJson(['test', 'example'], f.baseUrl);
  f.serve('/dns.json', 200, JSON.stringify(json));
  const summary = await refreshBootstrap(`${f.origin}/dns.json`, client, settings);
  t.same(summary, { url: `${f.origin}/dns.json`, publication: json.publication, services: 1, entries: 2 });
  t.match(JSON.parse((await settings.get(BOOTSTRAP_SETTING)) ?? '{}'), { version: '1.0', services: [[['test', 'example'], [f.baseUrl]]] });
  now += 1000;
  t.same((await source.current()).serversFor('a.test'), [f.baseUrl]);

  const before = await settings.get(BOOTSTRAP_SETTING);
  f.serve('/missing.json', 404, 'no');
  await t.rejects(refreshBootstrap(`${f.origin}/missing.json`, client, settings), { name: 'BootstrapError', message: /HTTP 404/ });
  f.serve('/broken.json', 200, '{"services": [');
  await t.rejects(refreshBootstrap(`${f.origin}/broken.json`, client, settings), { name: 'BootstrapError', message: /not JSON/ });
  f.serve('/empty.json', 200, JSON.stringify({ ...json, services: [] }));
  await t.rejects(refreshBootstrap(`${f.origin}/empty.json`, client, settings), { name: 'BootstrapError', message: /no services/ });
  f.serve('/huge.json', 200, JSON.stringify({ ...json, description: 'x'.repeat(5000) }));
  await t.rejects(refreshBootstrap(`${f.origin}/huge.json`, client, settings, { maxAnswerBytes: 4096 }), { name: 'OutboundError', kind: 'too-large' });
  t.equal((await settings.get(BOOTSTRAP_SETTING)), before, 'nothing stored by the failures');
});

t.test('refresh goes through the address policy', async (t) => {
  const f = await startRdapFixture();
  t.teardown(() => f.close());
  f.serve('/dns.json', 200, JSON.stringify(bootstrapJson(['test'], f.baseUrl)));
  const client = new OutboundClient({ allowPrivateAddresses: false, timeoutMs: 2000, maxAnswerBytes: 1 << 20 });
  t.teardown(() => client.close());
  const stored = new Map<string, string>();
  await t.rejects(refreshBootstrap(`${f.origin}/dns.json`, client, { set: async (k, v) => void stored.set(k, v) }), {
    name: 'OutboundError',
    kind: 'address-refused',
  });
  t.equal(stored.size, 0);
});
