// A cluster's processes as a test sees them from outside: the supervisor's live children (from /proc),
// and which of them logged a given line (the JSON log lines carry each process's pid).
import { readdirSync, readFileSync } from 'node:fs';

/** The live children of `pid` (from /proc: field 4 of stat is the parent). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid && fields[0] !== 'Z') out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out.sort((a, b) => a - b);
}

/** The pids of the processes that logged a line with this message. */
export function pidsLogging(output: string, msg: string): number[] {
  const pids: number[] = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const rec = JSON.parse(line) as { pid?: number; msg?: string };
      if (rec.msg === msg && typeof rec.pid === 'number') pids.push(rec.pid);
    } catch {
      // not a log line
    }
  }
  return pids;
}
