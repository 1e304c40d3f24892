// Access key lookup for SigV4: decrypts on a miss, caches hits and misses for at most one second so a
// key deleted by the admin CLI (another process) stops working within a second.
import { LRUCache } from 'lru-cache';
import type { Repos } from '../db/repos/index.js';
import type { Principal } from './principal.js';
import { decryptSecret } from './secrets.js';

export interface KeyLookup {
  secretKey: string;
  principal: Principal;
}

export interface KeyStoreOptions {
  /** Milliseconds an answer (found or not) is reused. Default 1000. */
  ttlMs?: number;
  /** Entries kept per cache (found, not found). Default 10000. */
  max?: number;
  /** Millisecond clock for the TTL (tests inject one); default performance.now. */
  now?: () => number;
}

/** Anything else cannot be a key id we issued or accept (see config rootAccessKey); not looked up, not cached. */
const KEY_ID = /^[A-Za-z0-9]{3,128}$/;

export class KeyStore {
  private readonly found: LRUCache<string, KeyLookup>;
  private readonly missing: LRUCache<string, true>;

  constructor(
    private readonly repos: Repos,
    private readonly masterKey: Buffer,
    opts: KeyStoreOptions = {},
  ) {
    const ttl = opts.ttlMs ?? 1000;
    const max = opts.max ?? 10_000;
    const perf = opts.now ? { now: opts.now } : undefined;
    // ttlResolution 0: every read checks the clock, so "within a second" holds to the millisecond.
    this.found = new LRUCache({ max, ttl, ttlAutopurge: false, ttlResolution: 0, perf });
    this.missing = new LRUCache({ max, ttl, ttlAutopurge: false, ttlResolution: 0, perf });
  }

  /** The secret and principal of a key, or undefined for an unknown key. Throws if the secret cannot be decrypted. */
  async lookup(accessKeyId: string): Promise<KeyLookup | undefined> {
    if (!KEY_ID.test(accessKeyId)) return undefined;
    const hit = this.found.get(accessKeyId);
    if (hit) return hit;
    if (this.missing.get(accessKeyId)) return undefined;
    const loaded = await this.load(accessKeyId);
    if (loaded) this.found.set(accessKeyId, loaded);
    else this.missing.set(accessKeyId, true);
    return loaded;
  }

  /**
   * Runs a signature check whose getSecret is synchronous: at once when the key is cached (the hot
   * path), else again once the key it asked for is loaded. Returns what `verify` returns.
   */
  async verify<T>(verify: (getSecret: (accessKeyId: string) => string | undefined) => T): Promise<T> {
    let asked: string | undefined;
    try {
      return verify((id) => {
        asked = id;
        return this.found.get(id)?.secretKey;
      });
    } catch (err) {
      if (asked === undefined || this.found.has(asked)) throw err;
    }
    const found = await this.lookup(asked);
    return verify((id) => (id === asked ? found?.secretKey : undefined));
  }

  /** Entries held (found + not found), for tests and metrics. */
  get cacheSize(): number {
    return this.found.size + this.missing.size;
  }

  /** Forgets cached answers (e.g. right after this process created or deleted a key). */
  invalidate(accessKeyId?: string): void {
    if (accessKeyId === undefined) {
      this.found.clear();
      this.missing.clear();
    } else {
      this.found.delete(accessKeyId);
      this.missing.delete(accessKeyId);
    }
  }

  private async load(accessKeyId: string): Promise<KeyLookup | undefined> {
    const key = this.repos.accessKeys.get(accessKeyId);
    if (!key) return undefined;
    let principal: Principal;
    if (key.kind === 'bucket') {
      const bucket = key.bucketId === null ? undefined : await this.repos.buckets.getById(key.bucketId);
      if (!bucket || key.permission === null) return undefined;
      principal = {
        kind: 'bucket',
        userId: key.userId,
        accessKeyId,
        bucketId: bucket.id,
        bucketName: bucket.name,
        permission: key.permission,
      };
    } else {
      principal = { kind: key.kind, userId: key.userId, accessKeyId };
    }
    return { secretKey: decryptSecret(this.masterKey, key.secretEnc), principal };
  }
}
