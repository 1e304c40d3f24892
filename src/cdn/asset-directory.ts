// Asset lookup by id for the CDN hot path. An asset row never changes after its upload (a new upload
// is a new id), so a found row is reused for at most `ttlMs`; deleting an asset in this process
// forgets it at once (api/v3/assets.ts). A miss is never cached: a fresh upload is served at once.
// The profile of a 4 KiB CDN GET had this one SQLite read at 12% of the event loop.
import { LRUCache } from 'lru-cache';
import type { AssetRecord, Repos } from '../db/repos/index.js';

export interface AssetDirectoryOptions {
  ttlMs?: number;
  max?: number;
  /** Millisecond clock for the TTL (tests inject one); default performance.now. */
  now?: () => number;
}

export class AssetDirectory {
  private readonly found: LRUCache<string, AssetRecord>;

  constructor(
    private readonly repos: Pick<Repos, 'assets'>,
    opts: AssetDirectoryOptions = {},
  ) {
    const perf = opts.now ? { now: opts.now } : undefined;
    this.found = new LRUCache({ max: opts.max ?? 10_000, ttl: opts.ttlMs ?? 1000, ttlAutopurge: false, ttlResolution: 0, perf });
  }

  byId(id: string): AssetRecord | undefined {
    const hit = this.found.get(id);
    if (hit) return hit;
    const asset = this.repos.assets.get(id);
    if (asset) this.found.set(id, asset);
    return asset;
  }

  /** Call after deleting an asset in this process, in the same tick. */
  forget(id: string): void {
    this.found.delete(id);
  }
}
