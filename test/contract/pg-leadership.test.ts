// The singleton jobs' leadership across nodes on one PostgreSQL (src/db/store/pg-leadership.ts), on a
// real server: of three nodes exactly one leads; when its session ends (it closed, or its connection was
// cut as in a failover) another takes the lead on its next attempt, and still only one leads.
import t from 'tap';
import { PgLeadership } from '../../src/db/store/pg-leadership.js';
import { startPostgres } from '../helpers/postgres.js';

const server = await startPostgres(t);

async function until(check: () => boolean): Promise<boolean> {
  const deadline = Date.now() + 10_000;
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return check();
}

t.test('one leader at a time; the lead passes on when the leader goes', async (t) => {
  const url = await server.database();
  const changes: string[] = [];
  const nodes = ['a', 'b', 'c'].map((name) => new PgLeadership(url, { retryMs: 100, onChange: (leader) => changes.push(`${name}:${leader}`) }));
  t.teardown(() => Promise.all(nodes.map((n) => n.close())));
  for (const n of nodes) await n.start();
  const leaders = (): PgLeadership[] => nodes.filter((n) => n.isLeader());
  t.equal(leaders().length, 1, 'exactly one of three leads');
  t.same(changes, ['a:true'], 'the first to try');
  await (nodes[0] as PgLeadership).close();
  t.ok(await until(() => leaders().length === 1), 'another node took the lead after the leader closed');
  t.equal(leaders().length, 1, 'and only one');
  const second = leaders()[0] as PgLeadership;
  // A failover or a network cut ends the leader's session without it closing.
  await server.admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 's3edge-jobs' AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)");
  t.ok(await until(() => !second.isLeader()), 'the cut leader knows it no longer leads');
  t.ok(await until(() => leaders().length === 1), 'one node leads again');
  t.equal(leaders().length, 1);
});
