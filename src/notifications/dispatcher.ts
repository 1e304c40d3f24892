// Delivers the outbox (bucket notifications, issue 35): a singleton job (once per cluster, or per set of
// nodes on one PostgreSQL) that POSTs each due event to its target through the outbound client (its
// address policy: public addresses only unless notifications.allowPrivateTargets; its deadline), signed
// with the target's secret. Delivery is at least once: an event is claimed (counted, and out of reach
// for a lease) before it is sent and deleted only once a 2xx came back, so a crash in between sends it
// again after the lease; receivers drop repeats by x-s3edge-event-id. A failed attempt is tried again
// after 1 s, 2 s, 4 s, ... (at most 10 min apart); after notifications.maxAttempts it is a dead letter,
// kept and counted (/metrics: s3edge_notification_dead_letters).
import type { Logger } from 'pino';
import { decryptSecret } from '../auth/secrets.js';
import type { NotificationsConfig } from '../config/schema.js';
import type { OutboxEvent, Repos } from '../db/repos/index.js';
import { OutboundClient, OutboundError } from '../net/outbound-client.js';
import { EVENT_ID_HEADER, SIGNATURE_HEADER, signBody } from './event-record.js';

export interface DispatcherDeps {
  repos: Pick<Repos, 'notificationOutbox' | 'notificationTargets'>;
  masterKey: Buffer;
  config: NotificationsConfig;
  log: Pick<Logger, 'info' | 'warn'>;
  /** Unix ms. */
  now: () => number;
}

export interface DispatcherStats {
  delivered: number;
  failedAttempts: number;
  deadLettered: number;
}

/** How often the outbox is looked at when it was empty. */
const POLL_MS = 250;
/** Events taken per round. */
const BATCH = 32;
const MAX_BACKOFF_MS = 10 * 60_000;
/** How long after an attempt's deadline a claimed event is left alone (its sender may be slow to record the outcome). */
const LEASE_MARGIN_MS = 1000;
/** What an answer's body is read up to (a receiver's "ok"): the rest is refused, not waited for. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** The wait before attempt n + 1, after n failed ones. */
export function backoffMs(attempts: number): number {
  return Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.max(0, attempts - 1));
}

export class NotificationDispatcher {
  private readonly client: OutboundClient;
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  private stopped = false;
  private readonly counts: DispatcherStats = { delivered: 0, failedAttempts: 0, deadLettered: 0 };

  constructor(private readonly deps: DispatcherDeps) {
    this.client = new OutboundClient({
      timeoutMs: deps.config.timeoutMs,
      maxAnswerBytes: MAX_ANSWER_BYTES,
      allowPrivateAddresses: deps.config.allowPrivateTargets,
      userAgent: 's3edge-notifications',
    });
  }

  start(): void {
    if (this.timer || this.stopped) return;
    const tick = (): void => {
      this.timer = undefined;
      if (this.stopped) return;
      this.round = this.drain()
        .catch((err: unknown) => this.deps.log.warn({ err }, 'notifications: a delivery round failed (tried again on the next)'))
        .finally(() => {
          this.round = undefined;
          if (!this.stopped) this.schedule(tick);
        });
    };
    this.schedule(tick);
  }

  stats(): DispatcherStats {
    return { ...this.counts };
  }

  /** Stops polling, waits for the round under way, closes the connections. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.round;
    await this.client.close();
  }

  /** Delivers what is due now, batch after batch, until nothing is. */
  async drain(): Promise<void> {
    for (;;) {
      const due = await this.deps.repos.notificationOutbox.due(this.deps.now(), BATCH);
      if (due.length === 0 || this.stopped) return;
      await Promise.all(due.map((e) => this.attempt(e)));
      if (due.length < BATCH) return;
    }
  }

  private schedule(tick: () => void): void {
    this.timer = setTimeout(tick, POLL_MS);
    this.timer.unref();
  }

  private async attempt(e: OutboxEvent): Promise<void> {
    const { repos, config, log } = this.deps;
    // Out of reach until the attempt's deadline has surely passed: a crash meanwhile means a resend then.
    if (!(await repos.notificationOutbox.claim(e, this.deps.now() + config.timeoutMs + LEASE_MARGIN_MS))) return;
    const attempts = e.attempts + 1;
    const target = await repos.notificationTargets.get(e.targetId);
    let failure: string | undefined;
    if (!target) {
      failure = `target '${e.targetId}' was removed`;
    } else {
      try {
        const secret = decryptSecret(this.deps.masterKey, target.secretEnc);
        const res = await this.client.post(target.url, e.body, {
          headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signBody(e.body, secret), [EVENT_ID_HEADER]: e.id },
        });
        if (res.status >= 200 && res.status < 300) {
          await repos.notificationOutbox.delete(e.id);
          this.counts.delivered++;
          return;
        }
        failure = `HTTP ${res.status}`;
      } catch (err) {
        failure = err instanceof OutboundError ? `${err.kind}: ${err.message}` : String(err);
      }
    }
    this.counts.failedAttempts++;
    const dead = !target || attempts >= config.maxAttempts;
    await repos.notificationOutbox.failed(e.id, failure.slice(0, 500), dead ? null : this.deps.now() + backoffMs(attempts));
    if (dead) {
      this.counts.deadLettered++;
      log.warn({ eventId: e.id, target: e.targetId, attempts, error: failure }, 'notifications: an event could not be delivered and is kept as a dead letter');
    }
  }
}
