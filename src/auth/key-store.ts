// Access key lookup for SigV4: decrypts on a miss, caches hits and misses for at most one second so a
// key deleted by the admin CLI (another process) stops working within a second.
import type { LRUCache } from 'lru-cache';
import { lazyLru } from '../lazy-lru.js';
import type { Repos } from '../db/repos/index.js';
import type { SignedPrincipal } from './principal.js';
import { decryptSecret } from './secrets.js';

export interface KeyLookup {
  secretKey: string;
  principal: SignedPrincipal;
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

/** Thrown through a signature check by KeyStore.verify's getSecret for a key not cached yet. */
const NOT_CACHED = Symbol('key not cached');

export class KeyStore {
  private readonly found: () => LRUCache<string, KeyLookup>;
  private readonly missing: () => LRUCache<string, true>;
  private readonly loading = new Map<string, Promise<KeyLookup | undefined>>();
  /** Moves at every invalidate(). */
  private generation = 0;

  constructor(
    private readonly repos: Pick<Repos, 'accessKeys'>,
    private readonly masterKey: Buffer,
    opts: KeyStoreOptions = {},
  ) {
    const ttl = opts.ttlMs ?? 1000;
    const max = opts.max ?? 10_000;
    const perf = opts.now ? { now: opts.now } : undefined;
    // ttlResolution 0: every read checks the clock, so "within a second" holds to the millisecond.
    this.found = lazyLru({ max, ttl, ttlAutopurge: false, ttlResolution: 0, perf });
    this.missing = lazyLru({ max, ttl, ttlAutopurge: false, ttlResolution: 0, perf });
  }

  /** The secret and principal of a key, or undefined for an unknown key. Throws if the secret cannot be decrypted. */
  async lookup(accessKeyId: string): Promise<KeyLookup | undefined> {
    const cached = this.peek(accessKeyId);
    if (cached !== undefined) return cached ?? undefined;
    // Concurrent misses of one key share its load.
    let loading = this.loading.get(accessKeyId);
    if (!loading) {
      loading = this.load(accessKeyId).finally(() => this.loading.delete(accessKeyId));
      this.loading.set(accessKeyId, loading);
    }
    const generation = this.generation;
    const loaded = await loading;
    // Not cached when invalidated meanwhile: the row read may predate the change.
    if (generation === this.generation) {
      if (loaded) this.found().set(accessKeyId, loaded);
      else this.missing().set(accessKeyId, true);
    }
    return loaded;
  }

  /** The cached answer: the key, null for a cached (or impossible) unknown key, undefined when not cached. */
  peek(accessKeyId: string): KeyLookup | null | undefined {
    if (!KEY_ID.test(accessKeyId)) return null;
    const hit = this.found().get(accessKeyId);
    if (hit) return hit;
    return this.missing().get(accessKeyId) ? null : undefined;
  }

  /**
   * Runs `check`, a signature check that asks for a key's secret synchronously, over the cache: a key
   * it asks for that is not cached is loaded (the one await) and `check` runs again. Returns its value
   * and the key whose secret it was given (undefined when it asked for none, or an unknown one).
   */
  async verify<T>(check: (getSecret: (accessKeyId: string) => string | undefined) => T): Promise<{ value: T; key: KeyLookup | undefined }> {
    let key: KeyLookup | undefined;
    let wanted: string | undefined;
    try {
      const value = check((id) => {
        const cached = this.peek(id);
        if (cached === undefined) {
          wanted = id;
          throw NOT_CACHED;
        }
        key = cached ?? undefined;
        return key?.secretKey;
      });
      return { value, key };
    } catch (err) {
      if (err !== NOT_CACHED || wanted === undefined) throw err;
    }
    const loaded = await this.lookup(wanted);
    const asked = wanted;
    const value = check((id) => {
      key = id === asked ? loaded : (this.peek(id) ?? undefined);
      return key?.secretKey;
    });
    return { value, key };
  }

  /** Entries held (found + not found), for tests and metrics. */
  get cacheSize(): number {
    return this.found().size + this.missing().size;
  }

  /** Forgets cached answers (e.g. right after this process created or deleted a key). */
  invalidate(accessKeyId?: string): void {
    this.generation++;
    if (accessKeyId === undefined) {
      this.found().clear();
      this.missing().clear();
    } else {
      this.found().delete(accessKeyId);
      this.missing().delete(accessKeyId);
    }
  }

  /** One statement: the key with its bucket's name. */
  private async load(accessKeyId: string): Promise<KeyLookup | undefined> {
    const key = await this.repos.accessKeys.getWithBucket(accessKeyId);
    if (!key) return undefined;
    let principal: SignedPrincipal;
    if (key.kind === 'bucket') {
      if (key.bucketId === null || key.bucketName === null || key.permission === null) return undefined;
      principal = {
        kind: 'bucket',
        userId: key.userId,
        userName: key.userName,
        accessKeyId,
        bucketId: key.bucketId,
        bucketName: key.bucketName,
        permission: key.permission,
      };
    } else {
      principal = { kind: key.kind, userId: key.userId, userName: key.userName, accessKeyId };
    }
    return { secretKey: decryptSecret(this.masterKey, key.secretEnc), principal };
  }
}
