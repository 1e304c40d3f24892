// The route table over a real SQLite file: verified hostnames only; lookups synchronous, from memory;
// this connection's writes seen once invalidate() resolves, another connection's (an admin command)
// once the check interval has passed and fresh()'s load is done (a load only when the store's change
// version moved); one load at a time; hostnames removed or given another origin reported stale (their
// cached answers purged).
import t from 'tap';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/open.js';
import { createRepos, type Repos } from '../../src/db/repos/index.js';
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
  const project = await repos.projects.createProject(user.id, 'site');
  const a = await repos.projects.addHostname(project.id, 'a.example.com', 'tok', { kind: 'url', url: 'https://origin.example.net', preserveHost: false });
  const b = await repos.projects.addHostname(project.id, 'b.example.com', 'tok');
  const first = routes.fresh();
  t.ok(first, 'nothing loaded yet: the first check starts the load');
  t.equal(routes.fresh(), first, 'a check during a load waits for that load');
  await first;
  t.equal(routes.fresh(), undefined, 'current: nothing to wait for');
  t.equal(routes.lookup('a.example.com'), undefined, 'not verified: not routed');

  await repos.projects.markVerified(a.id, 'operator');
  await repos.projects.markVerified(b.id, 'dns');
  t.equal(routes.lookup('a.example.com'), undefined, 'own write not seen before invalidate()');
  await routes.invalidate();
  t.match(routes.lookup('a.example.com'), { hostnameId: a.id, ownerId: user.id, projectId: project.id, origin: { kind: 'url' } });
  t.equal(routes.size, 2);

  // Another process changes a's origin and removes b: seen once the interval has passed.
  await cli.projects.setOrigin(a.id, { kind: 'url', url: 'https://new-origin.example.net', preserveHost: false });
  await cli.projects.deleteHostname(b.id);
  t.equal(routes.fresh(), undefined, 'not checked again within the interval');
  t.ok(routes.lookup('b.example.com'), 'still the table of 0 ms ago');
  clock += 300;
  const reload = routes.fresh();
  t.ok(reload, 'the change version moved: a load to wait for');
  await reload;
  t.equal(routes.lookup('b.example.com'), undefined, 'removed by another process');
  t.match(routes.lookup('a.example.com'), { origin: { url: 'https://new-origin.example.net' } });
  t.same(stale.sort(), [a.id, b.id].sort(), 'the changed origin and the removed hostname are stale');
  clock += 300;
  t.equal(routes.fresh(), undefined, 'nothing changed since: no load');

  // Rules change: the same origin, nothing stale.
  stale.length = 0;
  await cli.projects.setRules(a.id, { ...routes.lookup('a.example.com')!.rules, blockCountries: ['KP'] });
  clock += 300;
  await routes.fresh();
  t.same(routes.lookup('a.example.com')?.rules.blockCountries, ['KP']);
  t.same(stale, []);
});

t.test('one load at a time: a reload asked for during a load runs once after it, and sees what was written meanwhile', async (t) => {
  const db = openDatabase(join(tempDir(t), 'meta.db'));
  t.teardown(() => db.close());
  const repos = createRepos(db);
  let loads = 0;
  let inFlight = 0;
  let most = 0;
  const counted: Pick<Repos, 'projects' | 'dataVersion'> = {
    dataVersion: () => repos.dataVersion(),
    projects: Object.assign(Object.create(repos.projects) as Repos['projects'], {
      routes: async () => {
        loads++;
        most = Math.max(most, ++inFlight);
        try {
          await new Promise((resolve) => setImmediate(resolve));
          return await repos.projects.routes();
        } finally {
          inFlight--;
        }
      },
    }),
  };
  const routes = new EdgeRoutes(counted);
  const user = await repos.users.create('ana');
  const project = await repos.projects.createProject(user.id, 'site');
  const first = routes.reload();
  const h = await repos.projects.addHostname(project.id, 'late.example.com', 'tok');
  await repos.projects.markVerified(h.id, 'operator');
  const second = routes.invalidate();
  const third = routes.invalidate();
  t.equal(third, second, 'asked twice during a load: one load after it');
  await Promise.all([first, second, third]);
  t.equal(loads, 2);
  t.equal(most, 1, 'never two at once');
  t.ok(routes.lookup('late.example.com'), 'the write made during the first load is routed');
});
