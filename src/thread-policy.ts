// Background threads (the request log's writer, the WAL checkpointer) under Linux's SCHED_IDLE: they run
// on CPU time nothing else wants, so they never take a core from an event loop that serves requests.
//
// Why not a nice value: measured (docs/ARCHITECTURE.md "Background threads yield"), the cost of such a
// thread at normal priority is less its own CPU than where the scheduler then puts a local client woken
// by an answer: with the other core busy with the writer, the kernel wakes the client on the event loop's
// core and preempts it (thousands of times a second, the loop runnable but waiting ~15% of the time). The
// kernel counts a core that runs only SCHED_IDLE threads as idle when it places a woken thread; it does
// not count a niced one.
//
// Node has no call for a thread's scheduling policy, so util-linux's `chrt` (BusyBox's too) sets it, by
// thread id (a thread learns its own from /proc/thread-self). Without Linux or chrt nothing changes
// (normal priority, as before). Each change is a child process: ~3.7 ms of the caller's event loop (the
// fork of a ~100 MB process), so callers change a policy seldom.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';

/** A background thread's first message: its OS id (0 when unknown), so its starter can set its policy. */
export interface ThreadOnline {
  threadId: number;
}

/** `idle`: SCHED_IDLE; `normal`: SCHED_OTHER at nice 0 (every thread's default). */
export type ThreadPolicy = 'idle' | 'normal';

/** Looked up at these paths only, never through PATH. */
const CHRT_PATHS = ['/usr/bin/chrt', '/bin/chrt'];
const CAP_SYS_NICE = 23n;

let chrtPath: string | null | undefined;

function chrt(): string | null {
  if (chrtPath === undefined) chrtPath = process.platform === 'linux' ? (CHRT_PATHS.find((p) => existsSync(p)) ?? null) : null;
  return chrtPath;
}

/** The OS id of the calling thread (Linux: /proc/thread-self names it), or undefined. */
export function ownThreadId(): number | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const id = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(id) && id > 0 ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The policy a thread runs under (`/proc/<pid>/task/<id>/stat`, field 41; this process's by default):
 * `other` for any but SCHED_IDLE and SCHED_OTHER (batch, real-time); undefined when the thread is gone
 * or off Linux.
 */
export function threadPolicyOf(threadId: number, pid: number | 'self' = 'self'): ThreadPolicy | 'other' | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${threadId}/stat`, 'utf8');
    const policy = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
    return policy === 5 ? 'idle' : policy === 0 ? 'normal' : 'other';
  } catch {
    return undefined;
  }
}

/**
 * Whether a thread put under SCHED_IDLE can be given normal priority back: Linux allows it only with
 * CAP_SYS_NICE or a nice limit (`ulimit -e`, systemd's LimitNICE=) of 20 or more.
 */
export function canLeaveIdle(): boolean {
  if (chrt() === null) return false;
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const caps = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1];
    if (caps !== undefined && ((BigInt(`0x${caps}`) >> CAP_SYS_NICE) & 1n) === 1n) return true;
    const limit = /^Max nice priority\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    return limit === 'unlimited' || Number(limit) >= 20;
  } catch {
    return false;
  }
}

/**
 * Puts a thread of this process (its OS id, ownThreadId) under `policy`. Resolves to whether it was set;
 * never rejects (no Linux, no chrt, the thread gone, or not allowed: the thread stays as it was).
 */
export function setThreadPolicy(threadId: number, policy: ThreadPolicy): Promise<boolean> {
  const bin = chrt();
  if (bin === null || !Number.isInteger(threadId) || threadId <= 0) return Promise.resolve(false);
  const flag = policy === 'idle' ? '--idle' : '--other';
  return new Promise((resolve) => {
    execFile(bin, [flag, '-p', '0', String(threadId)], { timeout: 5000 }, (err) => resolve(err === null));
  });
}
