// A serving process's background threads yield to serving (docs/ARCHITECTURE.md "Background threads
// yield"): the request log's writer thread (in each process that serves) and the WAL checkpointer (in the
// process that runs the jobs) run under SCHED_IDLE, seen as the kernel reports them
// (/proc/<pid>/task/<tid>/comm and stat's policy field). The suite runs as root, which may give a thread
// normal priority back: the writer yields only where that is allowed (test/unit/log-writer.test.ts).
import t from 'tap';
import { readdir, readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { rawRequest } from '../helpers/raw-http.js';
import { startServer } from '../helpers/server.js';
import { canLeaveIdle } from '../../src/thread-policy.js';

const SCHED_IDLE = 5;

/** Each thread of `pid` named `name`, with its scheduling policy (stat's field 41). */
async function threadsOf(pid: number, name: string): Promise<number[]> {
  const policies: number[] = [];
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const comm = await readFile(`/proc/${pid}/task/${tid}/comm`, 'utf8').catch(() => '');
    if (comm.trim() !== name) continue;
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    policies.push(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]));
  }
  return policies;
}

/** `pid` and its children (a cluster's workers). */
async function processTree(pid: number): Promise<number[]> {
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  return [pid, ...children.split(' ').filter(Boolean).map(Number)];
}

/** Until every thread named `name` in the tree is under SCHED_IDLE and there are `count` of them. */
async function idleThreads(pid: number, name: string, count: number): Promise<number[]> {
  let policies: number[] = [];
  for (let i = 0; i < 500; i++) {
    policies = [];
    for (const p of await processTree(pid)) policies.push(...(await threadsOf(p, name)));
    if (policies.length === count && policies.every((p) => p === SCHED_IDLE)) break;
    await delay(20);
  }
  return policies;
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
    t.same(await idleThreads(server.pid, 'request-log', workers), Array(workers).fill(SCHED_IDLE), `a writer thread in each serving process, under SCHED_IDLE`);
    t.same(await idleThreads(server.pid, 'checkpointer', 1), [SCHED_IDLE], 'one checkpointer, in the process that runs the jobs, under SCHED_IDLE');
  });
}
