// Storage quotas (issue 37): a user's (`s3edge users set-quota`: their buckets and assets together) and a
// bucket's (`s3edge buckets set-quota`), in bytes, enforced before an upload's bytes are stored.
//
// What is stored is counted exactly by the triggers of migration 027 (db/repos/storage-usage.ts). An
// upload reserves the bytes it may add before reading its body: one transaction (IMMEDIATE on SQLite,
// SERIALIZABLE on PostgreSQL, as credit reservations: credits.ts) reads what is stored and what live
// reservations of every process hold, and inserts its own, or refuses. So concurrent uploads through
// any number of processes never reserve past a quota: the store can pass it by no more than what the
// uploads in flight reserved, and only while both count (the reservation goes after the commit that
// stored the bytes: for a moment they count twice, never not at all). Reservations of a process that
// died stop counting within a minute (reservation-holder.ts).
//
// The rules (docs/COMPATIBILITY.md "Storage quotas"):
// - an upload counts in full, an overwrite too (MinIO's hard quota: the bytes it replaces are not
//   subtracted beforehand; on a versioned bucket they stay stored anyway);
// - a known size (Content-Length, x-amz-decoded-content-length, a copy's source) is reserved exactly;
//   an unknown one, or a form whose file is at most the request's length, reserves up to what is left
//   and the upload is refused when it outgrows that while it streams;
// - a multipart upload's parts count as stored when each is uploaded; its completion adds nothing and is
//   refused only while the store is over its quota (one lowered below what is stored).
//
// The hot path: a store without quotas costs one cached read per user and bucket per second
// (the quotas of every worker and node follow a change within that second), and no write.
import type { Repos } from '../db/repos/index.js';
import type { QuotaLimits } from '../db/repos/storage-quotas.js';
import { FoundCache } from '../db/found-cache.js';
import { newId } from '../db/ids.js';
import { Refusal } from '../errors/refusal.js';
import type { ReservationHolder } from './reservation-holder.js';

/** Whose quotas an upload counts against: its bucket's owner and the bucket, or a user alone (an asset). */
export interface QuotaTarget {
  userId: string;
  bucket?: { id: string; name: string };
}

/** What to reserve: exactly `bytes`, or up to `upTo` (undefined: unbounded) and no less than `atLeast`. */
export type QuotaWant = { bytes: number } | { upTo: number | undefined; atLeast?: number };

export interface QuotaReservation {
  /** The most the upload may store (Infinity when no quota applies). */
  readonly maxBytes: number;
  /** The refusal for an upload that turned out to need at least `size` bytes, above maxBytes (figures read now). */
  refusal(size: number): Promise<Refusal>;
  /** Gives the reserved bytes back; idempotent, never throws: call after the commit, or after a failure. */
  release(): Promise<void>;
}

export interface StorageReport {
  user: { storedBytes: number; assetBytes: number; quotaBytes: number | null };
  buckets: Array<{ name: string; storedBytes: number; quotaBytes: number | null }>;
}

export type QuotaRepos = Pick<Repos, 'storageQuotas' | 'storageUsage' | 'users' | 'creditReservations' | 'transact'>;

export interface QuotaOptions {
  /** How long a process keeps a user's and bucket's quotas (ms); default 1000. */
  ttlMs?: number;
  /** Millisecond clock for that (tests); default performance.now. */
  monotonic?: () => number;
}

type Scope = 'user' | 'bucket';

/** One quota's figures at the moment of a decision. */
interface Standing {
  scope: Scope;
  quota: number;
  stored: number;
  reserved: number;
}

const UNLIMITED: QuotaReservation = Object.freeze({
  maxBytes: Infinity,
  refusal: () => Promise.reject(new Error('no quota applies')),
  release: () => Promise.resolve(),
});

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** `10 GiB`, `1.5 MiB`, `512 B`: bytes as people read a quota. */
export function formatBytes(n: number): string {
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : Number(v.toFixed(2))} ${UNITS[i]}`;
}

const both = (n: number): string => `${formatBytes(n)} (${n} bytes)`;

function applies(limits: QuotaLimits, target: QuotaTarget): boolean {
  return limits.user !== null || (target.bucket !== undefined && limits.bucket !== null);
}

/** Room left under one quota; the tighter of two decides. */
const room = (s: Standing): number => s.quota - s.stored - s.reserved;

export class QuotaService {
  private readonly cache: FoundCache<QuotaLimits>;

  constructor(
    private readonly repos: QuotaRepos,
    private readonly holders: ReservationHolder,
    private readonly now: () => Date,
    opts: QuotaOptions = {},
  ) {
    this.cache = new FoundCache<QuotaLimits>((key) => {
      const slash = key.indexOf('/');
      return this.repos.storageQuotas.limits(key.slice(0, slash), key.slice(slash + 1));
    }, { ttlMs: opts.ttlMs ?? 1000, ...(opts.monotonic ? { now: opts.monotonic } : {}) });
  }

  /** User ids and bucket ids are ours: no '/'. */
  private key(target: QuotaTarget): string {
    return `${target.userId}/${target.bucket?.id ?? ''}`;
  }

  /** The quotas of the target as this process holds them (read at most a second ago). */
  async limits(target: QuotaTarget): Promise<QuotaLimits> {
    const key = this.key(target);
    return this.cache.held(key) ?? ((await this.cache.get(key)) as QuotaLimits);
  }

  /** True when it is known now, without waiting, that no quota applies to the target: a copy's synchronous look. */
  unlimitedNow(target: QuotaTarget): boolean {
    const held = this.cache.held(this.key(target));
    return held !== undefined && !applies(held, target);
  }

  /** Call after changing a quota in this process (other processes see it within the TTL). */
  forget(target: QuotaTarget): void {
    this.cache.forget(this.key(target));
  }

  /** The quotas of the target that apply, with what is stored and reserved against each, read in `r`. */
  private async standings(r: Pick<Repos, 'storageQuotas' | 'storageUsage'>, target: QuotaTarget, limits: QuotaLimits, exceptId = ''): Promise<Standing[]> {
    const liveSince = this.holders.liveSince();
    const out: Standing[] = [];
    if (limits.user !== null) {
      out.push({
        scope: 'user', quota: limits.user,
        stored: await r.storageUsage.ownerBytes(target.userId),
        reserved: await r.storageQuotas.liveUserSum(target.userId, liveSince, exceptId),
      });
    }
    if (target.bucket && limits.bucket !== null) {
      out.push({
        scope: 'bucket', quota: limits.bucket,
        stored: await r.storageUsage.bucketBytes(target.bucket.id),
        reserved: await r.storageQuotas.liveBucketSum(target.bucket.id, liveSince, exceptId),
      });
    }
    return out;
  }

  /** The refusal naming the quota, its size, what is stored, what the upload needed, and what to do. */
  private async refusalOf(target: QuotaTarget, s: Standing, needed: number | undefined, lowerBound = false): Promise<Refusal> {
    let what: string;
    let fix: string;
    if (s.scope === 'bucket' && target.bucket) {
      what = `the bucket '${target.bucket.name}'`;
      fix = `Delete objects from it (noncurrent versions and unfinished multipart uploads count too), or ask the operator to raise its quota: s3edge buckets set-quota ${target.bucket.name} --storage SIZE`;
    } else {
      const name = (await this.repos.users.getById(target.userId))?.name ?? target.userId;
      what = `the account '${name}' (its buckets and assets together)`;
      fix = `Delete objects or assets to make room, or ask the operator to raise the quota: s3edge users set-quota ${name} --storage SIZE`;
    }
    const reserved = s.reserved > 0 ? `, and uploads in progress have reserved ${both(s.reserved)} more` : '';
    // Over already (a quota lowered below what is stored): that is what to say, whatever the upload.
    const need = needed === undefined || room(s) < 0
      ? `: it is over its quota (lowered below what it stores), so nothing new can be stored until it is under it again`
      : `; this upload needs ${lowerBound ? 'at least ' : ''}${both(needed)}`;
    const message = `Storage quota exceeded: ${what} may store ${both(s.quota)} and stores ${both(s.stored)}${reserved}${need}. ${fix}.`;
    return new Refusal('quota_exceeded', 'quota_exceeded', message, {
      quota: s.scope,
      ...(s.scope === 'bucket' && target.bucket ? { bucket: target.bucket.name } : {}),
      quotaBytes: s.quota,
      storedBytes: s.stored,
      reservedBytes: s.reserved,
      requiredBytes: needed ?? 0,
    });
  }

  /**
   * Reserves room for an upload into `target` before its body is read, or throws the quota_exceeded
   * Refusal. Without a quota that applies it costs a cached read and reserves nothing.
   */
  async reserve(target: QuotaTarget, want: QuotaWant): Promise<QuotaReservation> {
    const held = this.cache.held(this.key(target));
    if (held !== undefined && !applies(held, target)) return UNLIMITED;
    if (!applies(held ?? (await this.limits(target)), target)) return UNLIMITED;
    const id = newId();
    const visit = this.holders.visit();
    const exact = 'bytes' in want;
    const wanted = exact ? want.bytes : (want.upTo ?? Infinity);
    const atLeast = exact ? want.bytes : (want.atLeast ?? 0);
    // One transaction: no other process reserves between the sums and the insert. The quotas are read
    // again in it: what the cache held may be a second old.
    const decided = await this.repos.transact(async (r): Promise<{ amount: number } | { refused: Standing }> => {
      const standings = await this.standings(r, target, await r.storageQuotas.limits(target.userId, target.bucket?.id ?? ''));
      if (standings.length === 0) return { amount: Infinity };
      const tightest = standings.reduce((a, b) => (room(b) < room(a) ? b : a));
      // Refused when not even its least fits; over already (a quota lowered below what is stored): not even an empty upload.
      if (atLeast > room(tightest)) return { refused: tightest };
      const amount = Math.min(wanted, Math.max(0, room(tightest)));
      if (amount === 0) return { amount };
      await visit.beat(r);
      await r.storageQuotas.insert({ id, userId: target.userId, bucketId: target.bucket?.id ?? '', bytes: amount, holder: this.holders.name, createdAt: this.now().getTime() });
      return { amount };
    });
    if ('refused' in decided) throw await this.refusalOf(target, decided.refused, atLeast);
    const maxBytes = decided.amount;
    if (maxBytes === Infinity) return UNLIMITED;
    const refusal = async (size: number): Promise<Refusal> => {
      const limits = await this.repos.storageQuotas.limits(target.userId, target.bucket?.id ?? '');
      const standings = await this.standings(this.repos, target, limits, id);
      const s = standings.reduce<Standing | undefined>((a, b) => (a === undefined || room(b) < room(a) ? b : a), undefined);
      return this.refusalOf(target, s ?? { scope: target.bucket ? 'bucket' : 'user', quota: maxBytes, stored: 0, reserved: 0 }, size, true);
    };
    if (maxBytes === 0) return { maxBytes, refusal, release: () => Promise.resolve() };
    visit.committed();
    this.holders.hold();
    let settled = false;
    return {
      maxBytes,
      refusal,
      release: async () => {
        await this.holders.release(`storage:${id}`, (r: Pick<Repos, 'storageQuotas'>) => r.storageQuotas.delete(id), this.repos);
        if (settled) return;
        settled = true;
        this.holders.letGo();
      },
    };
  }

  /**
   * For a multipart completion, whose parts are stored already and which adds nothing: refused only while
   * the store is over a quota now (one lowered below what is stored).
   */
  async checkStored(target: QuotaTarget): Promise<void> {
    if (!applies(await this.limits(target), target)) return;
    const limits = await this.repos.storageQuotas.limits(target.userId, target.bucket?.id ?? '');
    for (const s of await this.standings(this.repos, target, limits)) {
      if (s.stored > s.quota) throw await this.refusalOf(target, { ...s, reserved: 0 }, undefined);
    }
  }

  /** What the user stores and may store, and each of their buckets: the API's and the dashboard's view. */
  async report(userId: string): Promise<StorageReport> {
    const [storedBytes, assetBytes, quotaBytes, buckets] = await Promise.all([
      this.repos.storageUsage.ownerBytes(userId),
      this.repos.storageUsage.assetBytes(userId),
      this.repos.storageQuotas.userQuota(userId),
      this.repos.storageQuotas.bucketsOf(userId),
    ]);
    return {
      user: { storedBytes, assetBytes, quotaBytes },
      buckets: buckets.map((b) => ({ name: b.name, storedBytes: b.bytes, quotaBytes: b.quota })),
    };
  }
}
