// API keys (bearer tokens) of the management API: the scope table, minting and verifying tokens.
// A token is `s3e_<id>_<secret>`; the database keeps SHA-256(secret) only, which is enough for a
// 256-bit random secret (no password stretching needed), and compares it in constant time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { LRUCache } from 'lru-cache';
import { lazyLru } from '../lazy-lru.js';
import type { ApiKey, ApiKeysRepo } from '../db/repos/api-keys.js';
import { ConstraintError } from '../db/repos/errors.js';
import { newId } from '../db/ids.js';

/** Every scope, with what it allows (docs/API.md shows the same table). */
export const SCOPES = {
  'assets:read': 'list assets, download them, issue signed URLs, read the summary',
  'assets:write': 'upload and delete assets',
  'usage:read': 'read usage events, the credit ledger and proxy logs',
  'storage-keys:manage': 'list, create and delete S3 access keys of buckets the user owns',
  'domains:read': 'domain TLD pricing and availability search',
  'api-keys:manage': "list, create and delete the user's API keys (never with scopes the caller lacks)",
  'buckets:manage': "list and create the user's buckets; make them public on the CDN or private again",
  'objects:read': "list, preview and download the objects of the user's buckets, and make presigned links to them",
  'objects:write': "upload and delete objects in the user's buckets",
  'metrics:read': 'read the gateway metrics (request log drops, cache sizes)',
  'projects:read': "list the user's projects, deployments and hostnames (with their origins, rules and verification records)",
  'projects:write': 'create and delete projects, deployments and hostnames; set origins and rules; verify hostnames; purge their cached answers',
} as const;

export type Scope = keyof typeof SCOPES;
export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

export function isScope(s: string): s is Scope {
  return Object.hasOwn(SCOPES, s);
}

/** Parses `a,b,c` (spaces allowed); returns the unknown names separately so callers can refuse them. */
export function parseScopes(list: string): { scopes: Scope[]; unknown: string[] } {
  const names = [...new Set(list.split(',').map((s) => s.trim()).filter(Boolean))];
  return { scopes: names.filter(isScope), unknown: names.filter((n) => !isScope(n)) };
}

const TOKEN = /^s3e_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;

function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export interface MintedApiKey {
  key: ApiKey;
  /** The bearer token: shown once, never stored. */
  token: string;
}

/** Creates a key for `userId`; retries the (astronomically unlikely) id collision. */
export async function mintApiKey(repo: ApiKeysRepo, userId: string, name: string, scopes: readonly Scope[]): Promise<MintedApiKey> {
  for (let attempt = 0; ; attempt++) {
    const id = newId();
    const secret = randomBytes(32).toString('base64url');
    try {
      const key = await repo.insert({ id, userId, name, secretHash: hashSecret(secret), scopes });
      return { key, token: `s3e_${id}_${secret}` };
    } catch (err) {
      if (err instanceof ConstraintError && err.reason === 'duplicate' && attempt < 3) continue;
      throw err;
    }
  }
}

/** Who a verified bearer token acts for. */
export interface ApiPrincipal {
  keyId: string;
  userId: string;
  scopes: ReadonlySet<string>;
}

/**
 * Verifies bearer tokens. Answers are cached for at most one second, so a key deleted by the admin CLI
 * (another process) stops working within a second; keys deleted through the API are forgotten at once.
 */
export class ApiKeyVerifier {
  private readonly cache: () => LRUCache<string, ApiKey | false>;

  constructor(
    private readonly repo: ApiKeysRepo,
    opts: { ttlMs?: number; max?: number } = {},
  ) {
    this.cache = lazyLru({ max: opts.max ?? 10_000, ttl: opts.ttlMs ?? 1000, ttlAutopurge: false, ttlResolution: 0 });
  }

  /** The principal of a well-formed, known token whose secret matches; undefined otherwise. */
  async verify(token: string): Promise<ApiPrincipal | undefined> {
    const m = TOKEN.exec(token);
    if (!m) return undefined;
    const id = m[1] as string;
    let key = this.cache().get(id);
    if (key === undefined) {
      key = (await this.repo.get(id)) ?? false;
      this.cache().set(id, key);
    }
    if (!key) return undefined;
    const given = Buffer.from(hashSecret(m[2] as string), 'hex');
    const stored = Buffer.from(key.secretHash, 'hex');
    if (given.length !== stored.length || !timingSafeEqual(given, stored)) return undefined;
    return { keyId: key.id, userId: key.userId, scopes: new Set(key.scopes) };
  }

  forget(id: string): void {
    this.cache().delete(id);
  }
}
