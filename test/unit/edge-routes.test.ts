// The route table over a real SQLite file: verified hostnames only; this connection's writes seen after
// invalidate(), another connection's (an admin command) once data_version moves and the check interval
// has passed; hostnames removed or given another origin reported stale (their cached answers purged).
import t from 'tap';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/open.js';
import { createRepos } from '../../src/db/repos/index.js';
import { EdgeRoutes } from '../../src/edge/route.js';
import { tempDir } from '../helpers/temp-data.js';

t.test('lookups, reloads and stale hostnames', async (t) => {
  const file = join(tempDir(t), 'meta.db');
  const db = openDatabase(file);
  const other = openDatabase(file);
  t.teardown(() => {
    db.close();
    other.close();
  });
  const repos = createRepos(db);
  const cli = createRepos(other);
  let clock = 0;
  const stale: string[] = [];
  const routes = new EdgeRoutes(repos, { now: () => clock, onStale: (id) => stale.push(id) });

  const user = await repos.users.create('ana');
  const project = repos.projects.createProject(user.id, 'site');
  const a = repos.projects.addHostname(project.id, 'a.example.com', 'tok', { kind: 'url', url: 'https://origin.example.net', preserveHost: false });
  const b = repos.projects.addHostname(project.id, 'b.example.com', 'tok');
  t.equal(routes.lookup('a.example.com'), undefined, 'not verified: not routed');

  repos.projects.markVerified(a.id, 'operator');
  repos.projects.markVerified(b.id, 'dns');
  t.equal(routes.lookup('a.example.com'), undefined, 'own write not seen before invalidate()');
  routes.invalidate();
  t.match(routes.lookup('a.example.com'), { hostnameId: a.id, ownerId: user.id, projectId: project.id, origin: { kind: 'url' } });
  t.equal(routes.size, 2);

  // Another process changes a's origin and removes b: seen once the interval has passed.
  cli.projects.setOrigin(a.id, { kind: 'url', url: 'https://new-origin.example.net', preserveHost: false });
  cli.projects.deleteHostname(b.id);
  t.ok(routes.lookup('b.example.com'), 'still the table of 0 ms ago');
  clock += 300;
  t.equal(routes.lookup('b.example.com'), undefined, 'removed by another process');
  t.match(routes.lookup('a.example.com'), { origin: { url: 'https://new-origin.example.net' } });
  t.same(stale.sort(), [a.id, b.id].sort(), 'the changed origin and the removed hostname are stale');

  // Rules change: the same origin, nothing stale.
  stale.length = 0;
  cli.projects.setRules(a.id, { ...routes.lookup('a.example.com')!.rules, blockCountries: ['KP'] });
  clock += 300;
  t.same(routes.lookup('a.example.com')?.rules.blockCountries, ['KP']);
  t.same(stale, []);
});
