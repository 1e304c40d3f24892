// What one serving process may hold (docs/SCALE.md): the configured totals in a single process; in one
// of the N workers of `serve --workers N` (its ProcessShare, cdn/cache/shares.ts), 1/N of what each holds
// in its own memory (the edge cache's memory tier, the upload budget, the metadata row cache), while the
// edge cache's disk tier is one cache for all of them; a supervisor serves nothing and holds none.
import { join } from 'node:path';
import type { Config } from '../config/schema.js';
import { assertShare, type ProcessShare } from '../cdn/cache/shares.js';
import type { ProcessRole } from './roles.js';

/** The edge cache's disk tier, under the data directory. */
const CDN_CACHE_DIR = 'cdn-cache';

/** What one process may hold: the configured totals, its memory divided among the processes of a share. */
export interface ShareLimits {
  /** The disk tier's directory, shared by every serving process; undefined: no disk tier at all. */
  cacheDir: string | undefined;
  memoryBytes: number;
  /** The whole disk tier's bound (one cache for all the processes). */
  diskBytes: number;
  uploadBufferBytes: number;
}

export function shareLimits(config: Config, share?: ProcessShare, role: ProcessRole = 'single'): ShareLimits {
  const root = join(config.dataDir, CDN_CACHE_DIR);
  const { memoryBytes, diskBytes } = config.cdn.cache;
  const upload = config.limits.uploadBufferBytes;
  // A supervisor serves nothing: no cache bytes, and it leaves the workers' disk tier alone.
  if (role === 'supervisor') return { cacheDir: undefined, memoryBytes: 0, diskBytes: 0, uploadBufferBytes: upload };
  if (!share) return { cacheDir: root, memoryBytes, diskBytes, uploadBufferBytes: upload };
  assertShare(share);
  const part = (total: number): number => Math.floor(total / share.of);
  return {
    cacheDir: root,
    // Each worker's heap holds its own memory tier in front of the shared disk tier (whose hot files
    // the OS page cache shares): the sum stays what the operator set.
    memoryBytes: part(memoryBytes),
    diskBytes,
    // 0 is "no cap": a share of a cap stays a cap.
    uploadBufferBytes: upload === 0 ? 0 : Math.max(1, part(upload)),
  };
}

/** The metadata row cache's bytes (db/metadata-cache.ts): split among the workers; the supervisor serves nothing. */
export function readCacheBytes(config: Config, share?: ProcessShare, role: ProcessRole = 'single'): number {
  return role === 'supervisor' ? 0 : Math.floor(config.metadataCacheBytes / (share?.of ?? 1));
}
