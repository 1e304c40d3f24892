// One edge anomaly monitor for the whole cluster (docs/SCALE.md): it lives in the supervisor, and each
// worker's ctx.edgeMonitor forwards its observations there in batches (a note every BATCH_MS, or at
// BATCH_MAX records), so the detectors see every worker's traffic as one process's. A reader's evaluate()
// sends its worker's batch, then asks the supervisor's monitor to evaluate (the notes and the request
// travel in order on one channel). Other workers' batches reach it at most BATCH_MS late.
import type { Logger } from 'pino';
import type { ObservedRequest, TrafficMonitor } from '../proxy/detect/monitor.js';
import type { WorkerChannel } from './ipc.js';

export const MONITOR_MESSAGES = { observed: 'monitor.observed', evaluate: 'monitor.evaluate' } as const;

export const BATCH_MS = 100;
export const BATCH_MAX = 256;

/** A worker's monitor: batches observations to the supervisor's EdgeMonitor. */
export class MonitorForwarder implements TrafficMonitor {
  private batch: ObservedRequest[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly channel: WorkerChannel,
    private readonly log: Pick<Logger, 'warn'>,
  ) {}

  observe(r: ObservedRequest): void {
    this.batch.push(r);
    if (this.batch.length >= BATCH_MAX) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), BATCH_MS);
      this.timer.unref();
    }
  }

  async evaluate(): Promise<void> {
    this.flush();
    try {
      await this.channel.request(MONITOR_MESSAGES.evaluate, null);
    } catch (err) {
      // The events recorded so far are still listed; the buckets just closed wait for the next evaluation.
      this.log.warn({ err }, 'cluster: the supervisor did not evaluate the edge anomaly monitor');
    }
  }

  close(): void {
    this.flush();
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.batch.length === 0) return;
    const batch = this.batch;
    this.batch = [];
    this.channel.note(MONITOR_MESSAGES.observed, batch);
  }
}

/** The supervisor's side: a worker's batch into the one monitor (which drops malformed records itself). */
export function observeBatch(monitor: TrafficMonitor, body: unknown): void {
  if (!Array.isArray(body)) return;
  for (const r of body) if (typeof r === 'object' && r !== null) monitor.observe(r as ObservedRequest);
}
