// What a server records about itself when it listens (settings `server.endpoints`: its endpoints, its
// region, and who it is: host, pid, process start), and what another process, an admin command, can
// tell from that record: whether that server is running now.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { ServerEndpoints } from './db/repos/settings.js';

/** A process's start time in clock ticks since boot (/proc/<pid>/stat field 22), where /proc exists. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count from after it (field 3).
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** The record of this process, as a server listening now writes it. */
export function thisServer(endpoints: Pick<ServerEndpoints, 's3' | 's3Tls' | 'cdn' | 'region'>, now: Date): ServerEndpoints {
  const processStart = processStartTime(process.pid);
  return {
    ...endpoints,
    pid: process.pid,
    host: hostname(),
    startedAt: now.getTime(),
    ...(processStart === undefined ? {} : { processStart }),
    stoppedAt: null,
  };
}

/** Whether `record` and `other` were written by the same server start. */
export function sameStart(record: ServerEndpoints, other: ServerEndpoints): boolean {
  return record.pid === other.pid && record.host === other.host && record.startedAt === other.startedAt;
}

/**
 * Is the server that wrote `record` running now? `undefined` when this process cannot tell: the record
 * comes from another host, or from a version that did not record who it was.
 */
export function isRunning(record: ServerEndpoints): boolean | undefined {
  if (typeof record.stoppedAt === 'number') return false;
  if (record.pid === undefined || record.host === undefined) return undefined;
  if (record.host !== hostname()) return undefined;
  try {
    process.kill(record.pid, 0);
  } catch (err) {
    // EPERM: it exists, as another user.
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  // The pid may have been reused since a crash: the same pid started at another time is another process.
  if (record.processStart !== undefined) {
    const start = processStartTime(record.pid);
    if (start !== undefined && start !== record.processStart) return false;
  }
  return true;
}
