// The CDN workload's objects: the same bytes as a public asset on s3edge (uploaded through the
// management API with a key made by the admin CLI, served by its CDN listener under the CDN Host) and
// as a static file of nginx. Also s3edge's request log and edge cache counters (from /api/v3/metrics).
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { FormData, fetch } from 'undici';
import type { Target } from './targets.js';
import { sizeLabel } from './workloads.js';

/** What a CDN GET sends: the request target and the Host header. */
export interface CdnObject {
  path: string;
  host: string;
}

export interface CdnLogCounters {
  flushed: number;
  dropped: number;
  buffered: number;
  /** The edge cache's counters, when the build has them. */
  cacheHits?: number;
  cacheMisses?: number;
}

const tokens = new WeakMap<Target, string>();

/** An API key of a bench user with upload and metrics scopes, made once per s3edge target. */
function token(target: Target): string {
  const known = tokens.get(target);
  if (known) return known;
  if (!target.admin) throw new Error(`${target.name}: no admin CLI`);
  target.admin(['users', 'create', 'bench']);
  const key = target.admin(['api-keys', 'create', '--user', 'bench', '--scopes', 'assets:write,metrics:read', '--name', 'bench']);
  const made = key['token'];
  if (typeof made !== 'string') throw new Error(`${target.name}: api-keys create gave no token: ${JSON.stringify(key)}`);
  tokens.set(target, made);
  return made;
}

/** The edge cache's counters (s3edge_cdn_cache_*), summed over a cluster's workers by the server. */
export interface EdgeCacheCounters {
  hits: number;
  misses: number;
  expired: number;
  /** Reads of the storage backend by the edge cache: origin fetches. */
  storageReads: number;
}

/** `name`: the file's name (default cdn-<size>.bin, the CDN workload's). */
export async function placeCdnObject(target: Target, body: Buffer, name = `cdn-${sizeLabel(body.length).replace(' ', '').toLowerCase()}.bin`): Promise<CdnObject> {
  if (target.kind === 'nginx') {
    const file = join(target.wwwDir!, 'cdn', name);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, body);
    return { path: `/cdn/${name}`, host: new URL(target.url).host };
  }
  if (target.name !== 's3edge') throw new Error(`${target.name} has no CDN`);
  const form = new FormData();
  form.append('visibility', 'public');
  form.append('file', new Blob([new Uint8Array(body)], { type: 'application/octet-stream' }), name);
  const res = await fetch(new URL('/api/v3/cdn/assets', target.url), { method: 'POST', headers: { authorization: `Bearer ${token(target)}` }, body: form });
  const parsed = (await res.json()) as { asset?: { publicUrl?: unknown } };
  const publicUrl = parsed.asset?.publicUrl;
  if (res.status !== 201 || typeof publicUrl !== 'string') throw new Error(`s3edge: asset upload failed: ${res.status} ${JSON.stringify(parsed)}`);
  const u = new URL(publicUrl);
  return { path: u.pathname, host: u.host };
}

/** One reading of s3edge's /api/v3/metrics: a metric's value by name (unlabelled), or undefined. */
async function readMetrics(target: Target): Promise<((name: string) => number | undefined) | undefined> {
  const res = await fetch(new URL('/api/v3/metrics', target.url), { headers: { authorization: `Bearer ${token(target)}` } });
  if (res.status !== 200) return undefined;
  const text = await res.text();
  return (name: string): number | undefined => {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
}

/** s3edge's edge cache counters now (after placeCdnObject made its key). */
export async function edgeCacheCounters(target: Target): Promise<EdgeCacheCounters> {
  const value = await readMetrics(target);
  if (!value) throw new Error(`${target.name}: /api/v3/metrics did not answer 200`);
  const need = (name: string): number => {
    const v = value(name);
    if (v === undefined || !Number.isFinite(v)) throw new Error(`${target.name}: /api/v3/metrics without ${name}`);
    return v;
  };
  return {
    hits: need('s3edge_cdn_cache_hits_total'),
    misses: need('s3edge_cdn_cache_misses_total'),
    expired: need('s3edge_cdn_cache_expired_total'),
    storageReads: need('s3edge_cdn_cache_storage_reads_total'),
  };
}

/** s3edge's request log counters, or undefined when they cannot be read (no CDN cell ran). */
export async function cdnLogCounters(target: Target): Promise<CdnLogCounters | undefined> {
  if (!tokens.has(target)) return undefined;
  const value = await readMetrics(target);
  if (!value) return undefined;
  const hits = value('s3edge_cdn_cache_hits_total');
  const misses = value('s3edge_cdn_cache_misses_total');
  return {
    flushed: value('s3edge_cdn_log_flushed_total') ?? NaN,
    dropped: value('s3edge_cdn_log_dropped_total') ?? NaN,
    buffered: value('s3edge_cdn_log_buffered') ?? NaN,
    ...(hits !== undefined && misses !== undefined ? { cacheHits: hits, cacheMisses: misses } : {}),
  };
}
