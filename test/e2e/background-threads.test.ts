// A serving process's background threads yield to serving (docs/ARCHITECTURE.md "Background threads
// yield"): the WAL checkpointer (in the process that runs the jobs) runs under SCHED_IDLE, and so does the
// request log's writer thread (in each process that serves) where the serving processes leave a core free;
// where they fill every core (two workers on this 2-core machine) the writers keep normal priority. Seen as
// the kernel reports them (/proc/<pid>/task/<tid>/comm, and threadPolicyOf: stat's policy field). The
// suite runs as root, which may give a thread normal priority back: the writer yields only where that is
// allowed (test/unit/log-writer.test.ts).
import t from 'tap';
import { readdir, readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { rawRequest } from '../helpers/raw-http.js';
import { startServer } from '../helpers/server.js';
import { canLeaveIdle, threadPolicyOf } from '../../src/thread-policy.js';
import { eventually } from '../helpers/api.js';

/** The policy of each thread of `pid` named `name`. */
async function policiesOf(pid: number, name: string): Promise<(string | undefined)[]> {
  const policies: (string | undefined)[] = [];
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const comm = await readFile(`/proc/${pid}/task/${tid}/comm`, 'utf8').catch(() => '');
    if (comm.trim() === name) policies.push(threadPolicyOf(Number(tid), pid));
  }
  return policies;
}

/** `pid` and its children (a cluster's workers). */
async function processTree(pid: number): Promise<number[]> {
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return [pid, ...children.split(' ').filter(Boolean).map(Number)];
}

/** The policies of the threads named `name` in the tree, once there are `count` and all are `policy` (or after the bound). */
async function threadsUnder(pid: number, name: string, count: number, policy: string): Promise<(string | undefined)[]> {
  const read = async (): Promise<(string | undefined)[]> => (await Promise.all((await processTree(pid)).map((p) => policiesOf(p, name)))).flat();
  const settled = async (): Promise<boolean> => {
    const policies = await read();
    return policies.length === count && policies.every((p) => p === policy);
  };
  await eventually(settled, `${count} ${name} thread(s) under ${policy}`, 10_000).catch(() => undefined);
  return read();
}

for (const workers of [1, 2]) {
  const writers = workers < availableParallelism() ? 'idle' : 'normal';
  t.test(`--workers ${workers} on ${availableParallelism()} cores: the request log's writers run ${writers === 'idle' ? 'under SCHED_IDLE' : 'at normal priority'}, the checkpointer under SCHED_IDLE`, async (t) => {
    t.ok(canLeaveIdle(), 'the suite may give a thread normal priority back (run it as root or with CAP_SYS_NICE)');
    const server = await startServer({ workers });
    t.teardown(() => server.stop());
    const host = `cdn.localhost:${new URL(server.cdnUrl).port}`;
    // Requests to every worker (node:cluster hands connections out in turn): each is a row of the request
    // log, whose first flush starts that process's writer thread.
    for (let i = 0; i < 4 * workers; i++) {
      const res = await rawRequest({ url: server.cdnUrl }, { method: 'GET', target: `/nothing-${i}/here.txt`, headers: [['host', host], ['connection', 'close']] });
      t.equal(res.status, 404, `request ${i + 1}: the CDN's bare 404, logged`);
    }
    t.same(await threadsUnder(server.pid, 'request-log', workers, writers), Array(workers).fill(writers), `a writer thread in each serving process, ${writers === 'idle' ? 'under SCHED_IDLE: a core is left free' : 'at normal priority: the workers fill every core'}`);
    t.same(await threadsUnder(server.pid, 'checkpointer', 1, 'idle'), ['idle'], 'one checkpointer, in the process that runs the jobs, under SCHED_IDLE');
  });
}
