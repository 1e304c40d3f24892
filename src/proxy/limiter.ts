// Per-client token buckets and bans for the edge proxy's rate-limit rule. A client is an IPv4 address
// or an IPv6 /64 (one subscriber usually holds a whole /64, so rotating inside it gains nothing). State
// lives in an LRU of at most maxClients entries: a flood from many addresses evicts the least recently
// seen clients instead of growing memory, at the price of forgetting them.
import { LRUCache } from 'lru-cache';
import { clientGroup, parseAddress } from '../net/ip.js';
import type { RateLimitRule } from '../db/repos/hostname-model.js';

export type LimitResult = { ok: true } | { ok: false; reason: 'rate-limited' | 'banned'; retryAfterSeconds: number };

/**
 * What the rate-limit rule asks: this process's ClientLimiter (synchronous), or, in a cluster worker,
 * the supervisor's one (src/cluster/shared-limits.ts), so that a limit holds across every worker.
 */
export interface EdgeLimiter {
  /** `nowMs`: the limiter's own monotonic clock unless given (tests). */
  take(scope: string, ip: string, rule: RateLimitRule, nowMs?: number): LimitResult | Promise<LimitResult>;
}

interface ClientState {
  tokens: number;
  /** When `tokens` was last brought up to date. */
  refilledAt: number;
  /** Refusals counted in the window that started at windowStart (a fixed window: O(1) per client). */
  refusals: number;
  windowStart: number;
  bannedUntil: number;
  /** Bans so far; the next one lasts banSeconds * 2^offences (capped). */
  offences: number;
}

const OK: LimitResult = { ok: true };

/**
 * Who a limit applies to: the IPv4 address (also when written IPv4-mapped, `::ffff:1.2.3.4`), the IPv6
 * /64 as `2001:db8:0:0::/64`, or the raw text (bounded) for something that is no address at all.
 */
export function clientKey(ip: string): string {
  const parsed = parseAddress(ip);
  return parsed ? clientGroup(parsed) : `?${ip.slice(0, 64)}`;
}

function wholeSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

export class ClientLimiter implements EdgeLimiter {
  // Made with the first rate-limited request: the LRU allocates its whole index at once (maxClients).
  private clientsLru: LRUCache<string, ClientState> | undefined;
  private readonly maxClients: number;
  private readonly now: () => number;

  /**
   * `now`: milliseconds of a monotonic clock (default performance.now): buckets refill and bans end by
   * elapsed time, so a wall-clock jump neither empties them for an hour nor lifts every ban.
   */
  constructor(opts: { maxClients: number; now?: () => number }) {
    this.maxClients = Math.max(1, Math.floor(opts.maxClients));
    this.now = opts.now ?? (() => performance.now());
  }

  private get clients(): LRUCache<string, ClientState> {
    return (this.clientsLru ??= new LRUCache<string, ClientState>({ max: this.maxClients }));
  }

  /** Clients tracked now (never more than maxClients). */
  get size(): number {
    return this.clientsLru?.size ?? 0;
  }

  /**
   * One request of `ip` on the hostname `scope` (limits are per hostname) at `nowMs`: takes a token,
   * or says why not and for how long. A banned client is refused without touching its tokens.
   */
  take(scope: string, ip: string, rule: RateLimitRule, nowMs: number = this.now()): LimitResult {
    const key = `${scope} ${clientKey(ip)}`;
    let s = this.clients.get(key);
    if (!s) {
      s = { tokens: rule.burst, refilledAt: nowMs, refusals: 0, windowStart: nowMs, bannedUntil: 0, offences: 0 };
      this.clients.set(key, s);
    }
    if (nowMs < s.bannedUntil) return { ok: false, reason: 'banned', retryAfterSeconds: wholeSeconds(s.bannedUntil - nowMs) };
    // A client that kept clean for maxBanSeconds after its last ban starts over at banSeconds.
    if (s.offences > 0 && nowMs >= s.bannedUntil + rule.maxBanSeconds * 1000) s.offences = 0;

    // max(0, ...): a clock that steps back never takes tokens away. min: a lowered burst applies at once.
    const elapsed = Math.max(0, nowMs - s.refilledAt);
    s.tokens = Math.min(rule.burst, s.tokens + (elapsed / 1000) * rule.requestsPerSecond);
    s.refilledAt = Math.max(s.refilledAt, nowMs);
    if (s.tokens >= 1) {
      s.tokens -= 1;
      return OK;
    }

    if (rule.banAfter > 0) {
      if (nowMs - s.windowStart >= rule.banWindowSeconds * 1000 || s.refusals === 0) {
        s.windowStart = nowMs;
        s.refusals = 0;
      }
      s.refusals += 1;
      if (s.refusals >= rule.banAfter) {
        const seconds = Math.min(rule.maxBanSeconds, rule.banSeconds * 2 ** Math.min(s.offences, 40));
        s.offences += 1;
        s.refusals = 0;
        s.bannedUntil = nowMs + seconds * 1000;
        return { ok: false, reason: 'banned', retryAfterSeconds: wholeSeconds(seconds * 1000) };
      }
    }
    return { ok: false, reason: 'rate-limited', retryAfterSeconds: wholeSeconds(((1 - s.tokens) / rule.requestsPerSecond) * 1000) };
  }
}
