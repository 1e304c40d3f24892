// A cluster worker (docs/SCALE.md): serves on the listeners it shares with the other workers (node:cluster
// hands them the connections) and runs no background job. It tells its supervisor where it listens, or
// why it could not start, and drains when told to stop, when signalled, or when the supervisor is gone.
import type { Config } from '../config/schema.js';
import { createContext, type AppContext } from '../context.js';
import { startServer, type RunningServer } from '../server.js';
import { describeStartupFailure, type Listening, type StartupFailure } from './serve-lifecycle.js';
import { DATA_DIR_READY, STOP_NOTE, WORKER_NOTES, WorkerChannel } from '../cluster/ipc.js';
import { WORKER_METRICS, workerMetrics } from '../metrics/cluster-metrics.js';
import { saveCompileCache } from './compile-cache.js';

/** The worker's slot (1..N) and N, given by the supervisor in the environment. */
export function workerSlot(env: NodeJS.ProcessEnv = process.env): { slot: number; of: number } {
  return { slot: Number(env['S3EDGE_WORKER_SLOT'] ?? 1), of: Number(env['S3EDGE_WORKER_COUNT'] ?? 1) };
}

export async function runWorker(config: Config): Promise<number> {
  const channel = new WorkerChannel();
  // A terminal's Ctrl-C reaches every process of the group and the supervisor relays its own stop: each
  // of these starts the one drain (heard from the start: a stop may come while this worker still starts);
  // forcing a stop is the supervisor's (it kills what is left).
  const stopAsked = new Promise<void>((resolve) => {
    channel.onNote(STOP_NOTE, () => resolve());
    // `on`, not `once`: a repeated signal must not kill this worker mid-drain.
    process.on('SIGTERM', () => resolve());
    process.on('SIGINT', () => resolve());
    process.once('disconnect', () => resolve());
  });
  try {
    // The supervisor opens the data directory first (migrations, the root user, the TLD seed).
    await channel.request(DATA_DIR_READY, null, 0);
  } catch {
    // It could not (it says why and stops every worker), or it is gone.
    return leave(1);
  }
  let ctx: AppContext | undefined;
  let server: RunningServer;
  try {
    ctx = await createContext(config, { role: 'worker', channel, share: workerSlot() });
    server = await startServer(ctx, { record: false });
  } catch (err) {
    await ctx?.close().catch(() => undefined);
    const failure = describeFailure(err);
    channel.note(WORKER_NOTES.failed, failure);
    return leave(failure.exitCode);
  }
  const serving = ctx;
  channel.handle(WORKER_METRICS, () => workerMetrics(serving));
  const at: Listening = { s3: server.url, s3Tls: server.tlsUrl ?? null, cdn: server.cdnUrl ?? null, cdnBase: ctx.endpoints.cdn };
  // Before the note: once the cluster says it listens, the next start finds these modules cached.
  saveCompileCache();
  channel.note(WORKER_NOTES.listening, at);

  await stopAsked;
  await server.close();
  await ctx.close();
  return leave(0);
}

/** The failure as the supervisor will print it: a start that fails in a worker fails the server. */
function describeFailure(err: unknown): StartupFailure {
  return describeStartupFailure(err) ?? { message: `a worker failed to start: ${(err as Error).message}`, exitCode: 1 };
}

/** Lets the process end: the IPC channel would keep it alive. */
function leave(code: number): number {
  if (process.connected) process.disconnect();
  return code;
}
