// Carrying out a bucket's lifecycle rules (issue 35 item 2). A walk of a bucket goes through its
// versions in key order (ListObjectVersions' own walk, under the one prefix its rules share), a batch of
// keys at a time, and removes what is due the way a client's DeleteObject would
// (buckets/object-removal.ts: a delete marker on a versioned bucket, the bytes released, the CDN
// purged); then through its multipart uploads, aborting the ones due as AbortMultipartUpload does (their
// parts to the trash, emptied). Every removal is checked again inside its own transaction, so a key
// written meanwhile is never removed for what its older version was.
//
// The lifecycle job (lifecycle/job.ts) walks each bucket once per interval and records after every batch
// where it stands, to resume after a restart; `s3edge lifecycle run` walks now, start to end.
import type { Logger } from 'pino';
import type { Bucket, Repos } from '../db/repos/index.js';
import type { LifecyclePhase, LifecycleRule } from '../db/repos/bucket-lifecycle.js';
import type { MultipartRepo } from '../db/repos/multipart.js';
import type { ObjectVersionsRepo, VersionEntry } from '../db/repos/object-versions.js';
import { removeObjectVersion, type ObjectRemovalDeps } from '../buckets/object-removal.js';
import { drainTrash, type TrashDeps } from '../jobs/multipart-sweep.js';
import { actsOnUploads, actsOnVersions, currentDue, dueAfterDays, planKey, rulesNeedTags, sharedPrefix, type KeyVersion } from './rules.js';

/** Versions (and uploads) a batch reads at most: ListObjectVersions' page. */
export const BATCH_KEYS = 1000;

/** What a walk needs: a serving process's context has it, and so have the jobs' context and the CLI's. */
export interface LifecycleDeps extends ObjectRemovalDeps, TrashDeps {
  repos: Repos;
  multipart: MultipartRepo;
  log: Pick<Logger, 'warn'>;
}

export interface LifecycleCounts {
  /** Current versions expired (Expiration Days or Date): deleted, or on a versioned bucket hidden behind a delete marker. */
  expired: number;
  /** Noncurrent versions and delete markers removed for good (NoncurrentVersionExpiration). */
  noncurrentRemoved: number;
  /** Delete markers removed that had no version left behind them (ExpiredObjectDeleteMarker). */
  deleteMarkersRemoved: number;
  /** Incomplete multipart uploads aborted (AbortIncompleteMultipartUpload). */
  uploadsAborted: number;
}

/** Where a walk stands: what it does, after which key (and upload). */
export interface WalkPosition {
  phase: LifecyclePhase;
  keyMarker: string;
  idMarker: string | null;
}

export interface WalkOptions {
  /** The time the rules are judged at (Unix ms), asked again for every batch. */
  now: () => number;
  /** Resume here; default the start. */
  from?: WalkPosition;
  batch?: number;
  /** After each batch but the last: where the walk stands now (the job records it). */
  onBatch?: (at: WalkPosition) => Promise<void>;
  /** Asked between batches: true ends the walk there (shutdown). */
  stop?: () => boolean;
}

export const START: WalkPosition = { phase: 'versions', keyMarker: '', idMarker: null };
export const DONE: WalkPosition = { phase: 'done', keyMarker: '', idMarker: null };

export function noCounts(): LifecycleCounts {
  return { expired: 0, noncurrentRemoved: 0, deleteMarkersRemoved: 0, uploadsAborted: 0 };
}

export function countsTotal(c: LifecycleCounts): number {
  return c.expired + c.noncurrentRemoved + c.deleteMarkersRemoved + c.uploadsAborted;
}

/** Lets the requests of this process in between batches. */
const breathe = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The next versions after `after` under `prefix`, whole keys only, grouped by key (newest first within
 * one); `done` when the walk has no key left after them. A key with more versions than a batch is read
 * on until it ends.
 */
async function nextKeys(versions: ObjectVersionsRepo, bucketId: string, prefix: string, after: string, batch: number): Promise<{ keys: VersionEntry[][]; done: boolean }> {
  const entries: VersionEntry[] = [];
  let keyMarker = after;
  let versionIdMarker: string | null | undefined;
  for (;;) {
    // One more than a batch: when the page ends inside a key, dropping that key still leaves a batch.
    const page = await versions.list(bucketId, { prefix, delimiter: '', keyMarker, ...(versionIdMarker === undefined ? {} : { versionIdMarker }), maxKeys: batch + 1 });
    entries.push(...page.entries);
    if (!page.isTruncated) return { keys: byKey(entries), done: true };
    // The page may have ended inside its last key: that key is the next batch's.
    const whole = entries.filter((e) => e.key !== page.nextKeyMarker);
    if (whole.length > 0) return { keys: byKey(whole), done: false };
    keyMarker = page.nextKeyMarker ?? keyMarker;
    versionIdMarker = page.nextVersionIdMarker ?? null;
  }
}

function byKey(entries: readonly VersionEntry[]): VersionEntry[][] {
  const keys: VersionEntry[][] = [];
  for (const e of entries) {
    const last = keys[keys.length - 1];
    if (last && last[0]?.key === e.key) last.push(e);
    else keys.push([e]);
  }
  return keys;
}

/** One key's versions as the rules see them; their tags read only when a rule filters by tag. */
async function keyVersions(d: LifecycleDeps, bucketId: string, entries: readonly VersionEntry[], withTags: boolean): Promise<KeyVersion[]> {
  const out: KeyVersion[] = [];
  for (const e of entries) {
    const v: KeyVersion = { key: e.key, versionId: e.versionId, deleteMarker: e.deleteMarker, size: e.size, lastModified: e.lastModified };
    if (withTags && !e.deleteMarker) {
      const read = await d.repos.objects.getVersion(bucketId, e.key, e.versionId);
      if (read && !read.deleteMarker && read.rec.tagging) v.tagging = read.rec.tagging;
    }
    out.push(v);
  }
  return out;
}

/** Carries out the plan for one key; each removal checked again in its transaction. */
async function applyKey(d: LifecycleDeps, bucketId: string, rules: readonly LifecycleRule[], versions: KeyVersion[], now: number, counts: LifecycleCounts): Promise<void> {
  const plan = planKey(rules, versions, now);
  const key = (versions[0] as KeyVersion).key;
  if (plan.expireCurrent) {
    const r = await removeObjectVersion(d, bucketId, key, { ifCurrent: (current) => current !== undefined && currentDue(rules, current, now) });
    if (r.existed) counts.expired++;
  }
  for (const versionId of plan.removeNoncurrent) {
    const r = await removeObjectVersion(d, bucketId, key, { versionId, only: 'noncurrent' });
    if (r.existed) counts.noncurrentRemoved++;
  }
  if (plan.removeMarker) {
    const r = await removeObjectVersion(d, bucketId, key, { versionId: plan.removeMarker.versionId, only: 'lone-delete-marker' });
    if (r.existed) counts.deleteMarkersRemoved++;
  }
}

/** Aborts the uploads of one page that are due; returns how many. */
async function abortDue(d: LifecycleDeps, rules: readonly LifecycleRule[], uploads: readonly { uploadId: string; key: string; initiated: number }[], now: number): Promise<number> {
  let aborted = 0;
  for (const u of uploads) {
    // An upload has no size yet, and the rule cannot name tags: its prefix decides.
    const due = rules.some((r) => r.enabled && r.abortIncompleteMultipartDays !== null && u.key.startsWith(r.filter.prefix) && dueAfterDays(u.initiated, r.abortIncompleteMultipartDays) <= now);
    if (due && (await d.multipart.abort(u.uploadId))) aborted++;
  }
  if (aborted > 0) {
    // The aborted uploads' parts are in the trash now: removed as after an AbortMultipartUpload.
    await drainTrash(d).catch((err: unknown) => d.log.warn({ err }, 'lifecycle: the multipart trash could not be emptied (the sweep tries again)'));
  }
  return aborted;
}

/**
 * Walks one bucket from `from` (default the start) to its end, or until `stop` says so between
 * batches; `done` tells which.
 */
export async function walkBucket(d: LifecycleDeps, bucket: Pick<Bucket, 'id'>, rules: readonly LifecycleRule[], opts: WalkOptions): Promise<{ counts: LifecycleCounts; done: boolean }> {
  const counts = noCounts();
  const batch = opts.batch ?? BATCH_KEYS;
  const withTags = rulesNeedTags(rules);
  const from = opts.from ?? START;
  let at: WalkPosition = { phase: from.phase, keyMarker: from.keyMarker, idMarker: from.idMarker };
  // A phase no rule acts in is skipped.
  const versionsPrefix = sharedPrefix(rules, actsOnVersions);
  const uploadsPrefix = sharedPrefix(rules, actsOnUploads);
  const uploadsFromStart = (): WalkPosition => (uploadsPrefix === undefined ? DONE : { phase: 'uploads', keyMarker: '', idMarker: null });
  if (at.phase === 'versions' && versionsPrefix === undefined) at = uploadsFromStart();
  if (at.phase === 'uploads' && uploadsPrefix === undefined) at = DONE;
  while (at.phase !== 'done') {
    if (at.phase === 'versions') {
      const { keys, done } = await nextKeys(d.repos.objects.versions, bucket.id, versionsPrefix as string, at.keyMarker, batch);
      const now = opts.now();
      for (const entries of keys) await applyKey(d, bucket.id, rules, await keyVersions(d, bucket.id, entries, withTags), now, counts);
      const last = keys[keys.length - 1]?.[0]?.key;
      at = done ? uploadsFromStart() : { phase: 'versions', keyMarker: last ?? at.keyMarker, idMarker: null };
    } else {
      const page = await d.multipart.listUploads(bucket.id, { prefix: uploadsPrefix as string, delimiter: '', keyMarker: at.keyMarker, uploadIdMarker: at.idMarker ?? '', maxUploads: batch });
      counts.uploadsAborted += await abortDue(d, rules, page.uploads, opts.now());
      at = page.isTruncated ? { phase: 'uploads', keyMarker: page.nextKeyMarker ?? at.keyMarker, idMarker: page.nextUploadIdMarker ?? null } : DONE;
    }
    // The end is the caller's to record (the walk's answer says it).
    if (at.phase === 'done') break;
    await opts.onBatch?.(at);
    if (opts.stop?.()) return { counts, done: false };
    await breathe();
  }
  return { counts, done: true };
}

/** The ids of the buckets that have rules, in id order, read a page at a time. */
export async function* bucketsWithRules(repos: Pick<Repos, 'bucketLifecycle'>): AsyncGenerator<string> {
  const PAGE = 100;
  for (let after = ''; ;) {
    const ids = await repos.bucketLifecycle.bucketIds(after, PAGE);
    yield* ids;
    if (ids.length < PAGE) return;
    after = ids[ids.length - 1] as string;
  }
}

export interface BucketRun extends LifecycleCounts {
  bucket: string;
}

/**
 * Walks every bucket that has rules (or the one given), start to end, judging the rules at `now`:
 * `s3edge lifecycle run`. Records nothing of the job's progress.
 */
export async function runLifecycle(d: LifecycleDeps, opts: { now: number; bucket?: Bucket; batch?: number }): Promise<BucketRun[]> {
  const runs: BucketRun[] = [];
  const walk = async (bucket: Bucket): Promise<void> => {
    const rules = await d.repos.bucketLifecycle.get(bucket.id);
    if (!rules) return;
    const { counts } = await walkBucket(d, bucket, rules, { now: () => opts.now, ...(opts.batch === undefined ? {} : { batch: opts.batch }) });
    runs.push({ bucket: bucket.name, ...counts });
  };
  if (opts.bucket) {
    await walk(opts.bucket);
    return runs;
  }
  for await (const id of bucketsWithRules(d.repos)) {
    const bucket = await d.repos.buckets.getById(id);
    if (bucket) await walk(bucket);
  }
  runs.sort((a, b) => (a.bucket < b.bucket ? -1 : a.bucket > b.bucket ? 1 : 0));
  return runs;
}
