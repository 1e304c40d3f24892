// A serving process's background threads yield to serving (docs/ARCHITECTURE.md "Background threads
// yield"): the request log's writer thread (in each process that serves) and the WAL checkpointer (in the
// process that runs the jobs) run under SCHED_IDLE, seen as the kernel reports them
// (/proc/<pid>/task/<tid>/comm, and threadPolicyOf: stat's policy field). The suite runs as root, which may give a thread
// normal priority back: the writer yields only where that is allowed (test/unit/log-writer.test.ts).
import t from 'tap';
import { readdir, readFile } from 'node:fs/promises';
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

/** The policies of the threads named `name` in the tree, once there are `count` and all are idle (or after the bound). */
async function idleThreads(pid: number, name: string, count: number): Promise<(string | undefined)[]> {
  const read = async (): Promise<(string | undefined)[]> => (await Promise.all((await processTree(pid)).map((p) => policiesOf(p, name)))).flat();
  const settled = async (): Promise<boolean> => {
    const policies = await read();
    return policies.length === count && policies.every((p) => p === 'idle');
  };
  await eventually(settled, `${count} ${name} thread(s) under SCHED_IDLE`, 10_000).catch(() => undefined);
  return read();
}

for (const workers of [1, 2]) {
  t.test(`--workers ${workers}: the request log's writer and the checkpointer run under SCHED_IDLE`, async (t) => {
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
    t.same(await idleThreads(server.pid, 'request-log', workers), Array(workers).fill('idle'), `a writer thread in each serving process, under SCHED_IDLE`);
    t.same(await idleThreads(server.pid, 'checkpointer', 1), ['idle'], 'one checkpointer, in the process that runs the jobs, under SCHED_IDLE');
  });
}
