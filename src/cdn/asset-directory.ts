// Asset lookup by id for the CDN hot path (db/found-cache.ts). An asset row never changes after its
// upload (a new upload is a new id), so a found row is reused for up to a second; deleting an asset here
// forgets it at once (api/v3/assets.ts), and an unknown id is never remembered. The profile of a 4 KiB
// CDN GET had this one SQLite read at 12% of the event loop.
import type { AssetRecord, Repos } from '../db/repos/index.js';
import { FoundCache, type FoundCacheOptions } from '../db/found-cache.js';

export class AssetDirectory extends FoundCache<AssetRecord> {
  constructor(repos: Pick<Repos, 'assets'>, opts: FoundCacheOptions = {}) {
    super((id) => repos.assets.get(id), opts);
  }

  byId(id: string): Promise<AssetRecord | undefined> {
    return this.get(id);
  }
}
