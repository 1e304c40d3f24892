// Admin commands (users, account-keys, buckets, access-keys) against a data directory. Safe to run
// while the server uses the same directory: SQLite WAL + busy_timeout serialise the writes.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { mintApiKey, parseScopes, ALL_SCOPES } from '../auth/api-keys.js';
import { issueAccessKey, type AccessKeyFields, type IssuedAccessKey } from '../auth/access-key-issuer.js';
import { CreditsService, fromMilli } from '../credits/credits.js';
import { ROOT_USER } from '../auth/root.js';
import { configFlags, ConfigError, givenExplicitly, loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { ConstraintError, type Bucket, type BucketPermission, type Repos, type User } from '../db/repos/index.js';
import { S3Error } from '../errors/s3-errors.js';
import { bucketNameProblem } from '../s3/bucket-name.js';
import { createBucket, deleteBucket } from '../s3/bucket-service.js';
import { NoDataDirError, openDataDir } from '../db/data-dir.js';
import { isRunning } from '../server-record.js';
import { attachDashValues, didYouMean, unknownOption } from './suggest.js';
import { passwordHashFromStdin } from './password-input.js';
import { AdminError, FailedResult, iso, type Command, type ServerView } from './command.js';
import { DOMAIN_COMMANDS, DOMAIN_FLAGS, DOMAIN_GROUPS } from './domain-commands.js';
import { PROJECT_COMMANDS, PROJECT_FLAGS, PROJECT_GROUPS } from './project-commands.js';
import { METADATA_COMMANDS, METADATA_FLAGS, METADATA_GROUPS } from './metadata-commands.js';

type Values = Record<string, string | boolean | undefined>;

/** Bad invocation: exit code 2, one line plus usage. */
class UsageError extends Error {
  constructor(
    message: string,
    /** The group (and command) whose usage to print; none: the command list. */
    readonly group?: string,
    readonly action?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

const COMMAND_FLAGS = {
  user: { type: 'string' },
  name: { type: 'string' },
  bucket: { type: 'string' },
  permission: { type: 'string' },
  scopes: { type: 'string' },
  amount: { type: 'string' },
  /** api-keys create: print the token alone, for `TOKEN=$(s3edge api-keys create ... --token-only)`. */
  'token-only': { type: 'boolean' },
  /** users create: read the dashboard password from standard input. */
  'password-stdin': { type: 'boolean' },
  ...Object.fromEntries(Object.keys(DOMAIN_FLAGS).map((f) => [f, { type: 'string' as const }])),
  ...Object.fromEntries(Object.entries(PROJECT_FLAGS).map(([f, o]) => [f, { type: o.type }])),
  ...Object.fromEntries(Object.entries(METADATA_FLAGS).map(([f, o]) => [f, { type: o.type }])),
} as const satisfies Record<string, { type: 'string' | 'boolean' }>;

/** The command flags that take a value. */
const VALUED_FLAGS = Object.entries(COMMAND_FLAGS).flatMap(([name, o]) => (o.type === 'string' ? [name] : []));

/** The sections of `s3edge --help`, in order, and each group's one line there. */
export const GROUPS: Readonly<Record<string, { section: string; summary: string }>> = {
  users: { section: 'Accounts and keys', summary: 'accounts that own buckets, assets and credits' },
  'account-keys': { section: 'Accounts and keys', summary: "S3 keys with a user's rights: create buckets, use all of theirs" },
  'access-keys': { section: 'Accounts and keys', summary: 'S3 keys for one bucket, read or read_write' },
  'api-keys': { section: 'Accounts and keys', summary: 'bearer tokens for the management API, with scopes' },
  buckets: { section: 'Buckets', summary: 'create, list and delete buckets; serve one publicly on the CDN' },
  spaces: { section: 'Spaces and credits', summary: "suspend or resume a user's space" },
  credits: { section: 'Spaces and credits', summary: 'grant credits to a user' },
  scrub: { section: 'Storage', summary: 're-read stored bytes against their digests; list what was found corrupt' },
  ...METADATA_GROUPS,
  ...DOMAIN_GROUPS,
  ...PROJECT_GROUPS,
};

/** Options every admin command takes besides its own. */
const COMMON_OPTIONS = ['json', 'help', 'config'] as const;

const PERMISSIONS: readonly BucketPermission[] = ['read', 'read_write'];
const USER_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
const MAX_LABEL = 128;

/**
 * What this data directory's server looks like from here: the configured publicUrl, else the endpoint
 * the server recorded when it last started (never a guess from host and port, which is wrong whenever
 * the server runs with other flags or on port 0), and whether that server still runs.
 */
async function serverView(config: Config, repos: Repos, regionGiven: boolean): Promise<ServerView> {
  const recorded = await repos.settings.serverEndpoints();
  const region = regionGiven ? config.region : (recorded?.region ?? config.region);
  if (config.publicUrl !== '') return { endpoint: config.publicUrl, endpointStatus: 'configured', region };
  if (!recorded) return { endpoint: null, endpointStatus: 'unknown', region };
  const running = isRunning(recorded);
  return { endpoint: recorded.s3, endpointStatus: running === undefined ? 'unverified' : running ? 'running' : 'not-running', region };
}

/** The human output's endpoint line: the URL, and what to make of it. */
function endpointLine(endpoint: unknown, status: unknown): string {
  if (endpoint === null) return 'unknown: no server has started on this data directory yet (start it, or pass --public-url)';
  if (status === 'not-running') return `${String(endpoint)} (from when the server last ran on this data directory: it is not running now)`;
  if (status === 'unverified') return `${String(endpoint)} (recorded by the server when it started: whether it runs now cannot be told from here)`;
  return String(endpoint);
}

async function requireUser(repos: Repos, name: string): Promise<User> {
  const user = await repos.users.getByName(name);
  if (!user) throw new AdminError('NoSuchUser', `no user named '${name}'`);
  return user;
}

async function requireBucket(repos: Repos, name: string): Promise<Bucket> {
  const bucket = await repos.buckets.getByName(name);
  if (!bucket) throw new AdminError('NoSuchBucket', `no bucket named '${name}'`);
  return bucket;
}

/** A running server checks the flag on every CDN request: the change applies to the next one. */
async function setBucketPublic(repos: Repos, name: string, isPublic: boolean) {
  const bucket = await requireBucket(repos, name);
  if (!(await repos.buckets.setPublic(bucket.id, isPublic))) throw new AdminError('NoSuchBucket', `no bucket named '${name}'`);
  return { name: bucket.name, public: isPublic };
}

function label(value: string | undefined): string {
  const v = value ?? '';
  if (v.length > MAX_LABEL || /[\u0000-\u001f\u007f]/.test(v)) {
    throw new AdminError('InvalidName', `--name must be at most ${MAX_LABEL} printable characters`);
  }
  return v;
}

function permission(value: string | undefined): BucketPermission {
  const p = PERMISSIONS.find((x) => x === value);
  if (!p) throw new AdminError('InvalidPermission', `--permission must be 'read' or 'read_write' (got '${value ?? ''}')`);
  return p;
}

/** issueAccessKey, with a vanished user or bucket reported as a failed command. */
async function insertKey(repos: Repos, masterKey: Buffer, fields: AccessKeyFields): Promise<IssuedAccessKey> {
  try {
    return await issueAccessKey(repos, masterKey, fields);
  } catch (err) {
    if (err instanceof ConstraintError && err.reason === 'in_use') {
      throw new AdminError('Conflict', 'the user or bucket was deleted meanwhile');
    }
    throw err;
  }
}

async function deleteKey(repos: Repos, id: string, kind: 'account' | 'bucket') {
  const key = await repos.accessKeys.get(id);
  if (!key || key.kind !== kind) {
    throw new AdminError('NoSuchAccessKey', `no ${kind === 'account' ? 'account key' : 'bucket access key'} '${id}'`);
  }
  await repos.accessKeys.delete(id);
  return { deleted: true, accessKeyId: id };
}

async function userNames(repos: Repos): Promise<(id: string) => string> {
  const names = new Map((await repos.users.list()).map((u) => [u.id, u.name]));
  return (id) => names.get(id) ?? id;
}

function spaceView(space: { id: string; name: string; status: string; suspendedAt: number | null }, user: string) {
  return { user, id: space.id, name: space.name, status: space.status, suspendedAt: space.suspendedAt === null ? null : iso(space.suspendedAt) };
}

/** Credits with at most 3 decimals (milli-credits are the ledger's unit). */
function creditAmount(value: string | undefined): number {
  const v = (value ?? '').trim();
  if (!/^\d{1,12}(\.\d{1,3})?$/.test(v) || Number(v) <= 0) {
    throw new AdminError('InvalidAmount', `--amount must be a positive number of credits with at most 3 decimals (got '${value ?? ''}')`);
  }
  return Number(v);
}

const COMMANDS: Record<string, Record<string, Command>> = {
  users: {
    create: {
      args: ['NAME'],
      flags: ['password-stdin'],
      summary: 'create a user (an account that owns buckets); --password-stdin sets its dashboard password from standard input',
      example: 's3edge users create alice',
      initialises: true,
      run: async ({ repos, args, flags }) => {
        const name = args.NAME as string;
        if (!USER_NAME.test(name)) {
          throw new AdminError('InvalidUserName', 'a user name is 1-64 characters: letters, digits, . _ @ - (not starting with a symbol)');
        }
        if (name === ROOT_USER) throw new AdminError('InvalidUserName', `'${ROOT_USER}' is the built-in root user`);
        // Read and checked first: a refused password creates no user.
        const hash = flags['password-stdin'] === 'true' ? await passwordHashFromStdin() : undefined;
        try {
          const user = await repos.users.create(name);
          if (hash !== undefined) await repos.users.setPasswordHash(user.id, hash);
          return { id: user.id, name: user.name, createdAt: iso(user.createdAt), hasPassword: hash !== undefined };
        } catch (err) {
          if (err instanceof ConstraintError && err.reason === 'duplicate') {
            throw new AdminError('UserAlreadyExists', `user '${name}' already exists`);
          }
          throw err;
        }
      },
    },
    list: {
      args: [],
      flags: [],
      summary: 'list users',
      example: 's3edge users list --json',
      run: async ({ repos }) => {
        const users = await repos.users.list();
        const out = [];
        for (const u of users) out.push({ id: u.id, name: u.name, createdAt: iso(u.createdAt), hasPassword: (await repos.users.passwordHash(u.id)) !== undefined });
        return out;
      },
    },
    passwd: {
      args: ['NAME'],
      flags: [],
      summary: "set a user's dashboard password from standard input (the first line; at least 12 characters); ends the user's dashboard sessions",
      example: "printf '%s\\n' \"$PASSWORD\" | s3edge users passwd alice",
      run: async ({ repos, args }) => {
        const name = args.NAME as string;
        if (name === ROOT_USER) throw new AdminError('InvalidUserName', `'${ROOT_USER}' is the built-in root user: it has keys, not a password`);
        const user = await requireUser(repos, name);
        const hash = await passwordHashFromStdin();
        // One transaction: no session opened with the old password outlives the change. A running
        // server reads the session row on every request, so the next one is refused.
        const sessionsEnded = await repos.transact(async (r) => {
          await r.users.setPasswordHash(user.id, hash);
          return r.sessions.deleteForUser(user.id);
        });
        return { name, hasPassword: true, sessionsEnded };
      },
    },
    signout: {
      args: ['NAME'],
      flags: [],
      summary: "end every dashboard session of a user (a lost or shared device); the password stays",
      example: 's3edge users signout alice',
      run: async ({ repos, args }) => {
        const user = await requireUser(repos, args.NAME as string);
        return { name: user.name, sessionsEnded: await repos.sessions.deleteForUser(user.id) };
      },
    },
    delete: {
      args: ['NAME'],
      flags: [],
      summary: 'delete a user and its keys (it must own no buckets and no assets)',
      example: 's3edge users delete alice',
      run: async ({ repos, args }) => {
        const name = args.NAME as string;
        if (name === ROOT_USER) throw new AdminError('InvalidUserName', `'${ROOT_USER}' is the built-in root user and cannot be deleted`);
        const user = await requireUser(repos, name);
        try {
          if (!(await repos.users.delete(user.id))) throw new AdminError('NoSuchUser', `no user named '${name}'`);
        } catch (err) {
          if (err instanceof ConstraintError && err.reason === 'in_use') {
            throw new AdminError('UserHasBuckets', `user '${name}' owns buckets or assets: delete them first`);
          }
          throw err;
        }
        return { deleted: true, name };
      },
    },
  },
  'account-keys': {
    create: {
      args: [],
      flags: ['user', 'name'],
      required: ['user'],
      summary: "create a key with the user's rights: its buckets, and creating buckets",
      example: 's3edge account-keys create --user alice --name laptop',
      run: async ({ repos, masterKey, server, flags }) => {
        const user = await requireUser(repos, flags.user as string);
        const name = label(flags.name);
        const { key, secretAccessKey } = await insertKey(repos, masterKey, { kind: 'account', userId: user.id, bucketId: null, permission: null, name });
        const { endpoint, endpointStatus, region } = await server();
        return { accessKeyId: key.accessKeyId, secretAccessKey, user: user.name, name: key.name, endpoint, endpointStatus, region };
      },
    },
    list: {
      args: [],
      flags: ['user'],
      summary: 'list account keys (never their secrets)',
      example: 's3edge account-keys list --user alice',
      run: async ({ repos, flags }) => {
        const userId = flags.user === undefined ? undefined : (await requireUser(repos, flags.user)).id;
        const nameOf = await userNames(repos);
        return (await repos.accessKeys.list({ kind: 'account', ...(userId === undefined ? {} : { userId }) }))
          .map((k) => ({ accessKeyId: k.accessKeyId, user: nameOf(k.userId), name: k.name, createdAt: iso(k.createdAt) }));
      },
    },
    delete: {
      args: ['ACCESS_KEY_ID'],
      flags: [],
      summary: 'delete an account key',
      example: 's3edge account-keys delete SEEXAMPLEKEYID234567',
      run: ({ repos, args }) => deleteKey(repos, args.ACCESS_KEY_ID as string, 'account'),
    },
  },
  buckets: {
    create: {
      args: ['NAME'],
      flags: ['user'],
      required: ['user'],
      summary: 'create a bucket owned by a user',
      example: 's3edge buckets create photos --user alice',
      run: async ({ repos, server, args, flags }) => {
        const user = await requireUser(repos, flags.user as string);
        const name = args.NAME as string;
        const problem = bucketNameProblem(name);
        if (problem) throw new AdminError('InvalidBucketName', `invalid bucket name '${name}': the name ${problem}`);
        const { region } = await server();
        let bucket: Bucket;
        try {
          bucket = await createBucket(repos, { name, ownerId: user.id, region });
        } catch (err) {
          if (err instanceof S3Error && (err.code === 'BucketAlreadyExists' || err.code === 'BucketAlreadyOwnedByYou')) {
            const owner = await repos.buckets.getByName(name);
            const ownerName = owner ? (await repos.users.getById(owner.ownerId))?.name : undefined;
            throw new AdminError('BucketAlreadyExists', `bucket '${name}' already exists${ownerName ? ` (owner: ${ownerName})` : ''}`);
          }
          throw err;
        }
        return { name: bucket.name, owner: user.name, region: bucket.region, createdAt: iso(bucket.createdAt) };
      },
    },
    list: {
      args: [],
      flags: ['user'],
      summary: 'list buckets with their object counts',
      example: 's3edge buckets list --user alice',
      run: async ({ repos, flags }) => {
        const ownerId = flags.user === undefined ? undefined : (await requireUser(repos, flags.user)).id;
        const nameOf = await userNames(repos);
        const rows = [];
        for (const b of await repos.buckets.list(ownerId)) {
          rows.push({
            name: b.name,
            owner: nameOf(b.ownerId),
            region: b.region,
            createdAt: iso(b.createdAt),
            objects: await repos.buckets.countObjects(b.id),
            public: b.public,
          });
        }
        return rows;
      },
    },
    public: {
      args: ['NAME'],
      flags: [],
      summary: 'serve the bucket\'s objects to anyone on the CDN host at /b/NAME/<key>',
      example: 's3edge buckets public photos',
      run: ({ repos, args }) => setBucketPublic(repos, args.NAME as string, true),
    },
    private: {
      args: ['NAME'],
      flags: [],
      summary: 'stop serving the bucket\'s objects on the CDN host (the default)',
      example: 's3edge buckets private photos',
      run: ({ repos, args }) => setBucketPublic(repos, args.NAME as string, false),
    },
    delete: {
      args: ['NAME'],
      flags: [],
      summary: 'delete an empty bucket and its access keys',
      example: 's3edge buckets delete photos',
      run: async ({ repos, args }) => {
        const bucket = await requireBucket(repos, args.NAME as string);
        try {
          await deleteBucket(repos, bucket);
        } catch (err) {
          if (err instanceof S3Error && err.code === 'BucketNotEmpty') {
            throw new AdminError('BucketNotEmpty', `bucket '${bucket.name}' is not empty: delete its objects (and, if it was ever versioned, every version and delete marker) first`);
          }
          if (err instanceof S3Error && err.code === 'NoSuchBucket') throw new AdminError('NoSuchBucket', `no bucket named '${bucket.name}'`);
          throw err;
        }
        return { deleted: true, name: bucket.name };
      },
    },
  },
  'api-keys': {
    create: {
      args: [],
      flags: ['user', 'scopes', 'name', 'token-only'],
      required: ['user', 'scopes'],
      summary: `create a management API key (bearer token; --token-only prints it alone); scopes: ${ALL_SCOPES.join(',')}`,
      example: 's3edge api-keys create --user alice --scopes assets:read,assets:write --name backend',
      run: async ({ repos, flags }) => {
        const user = await requireUser(repos, flags.user as string);
        const { scopes, unknown } = parseScopes(flags.scopes ?? '');
        if (unknown.length > 0) throw new AdminError('InvalidScope', `unknown scope(s): ${unknown.join(', ')} (known: ${ALL_SCOPES.join(', ')})`);
        if (scopes.length === 0) throw new AdminError('InvalidScope', `--scopes needs at least one of: ${ALL_SCOPES.join(', ')}`);
        const { key, token } = await mintApiKey(repos.apiKeys, user.id, label(flags.name), scopes);
        // --token-only: the token alone, printed as is (TOKEN=$(...)).
        if (flags['token-only'] !== undefined) return token;
        return { id: key.id, token, user: user.name, name: key.name, scopes: key.scopes.join(','), createdAt: iso(key.createdAt) };
      },
    },
    list: {
      args: [],
      flags: ['user'],
      summary: 'list API keys (never their tokens)',
      example: 's3edge api-keys list --user alice',
      run: async ({ repos, flags }) => {
        const userId = flags.user === undefined ? undefined : (await requireUser(repos, flags.user)).id;
        const nameOf = await userNames(repos);
        return (await repos.apiKeys.list(userId))
          .map((k) => ({ id: k.id, user: nameOf(k.userId), name: k.name, scopes: k.scopes.join(','), createdAt: iso(k.createdAt) }));
      },
    },
    delete: {
      args: ['ID'],
      flags: [],
      summary: 'delete an API key (it stops working within a second)',
      example: 's3edge api-keys delete 3f2a9c0d1e4b5a6f7e8d9c0b1a2f3e4d',
      run: async ({ repos, args }) => {
        const id = args.ID as string;
        if (!(await repos.apiKeys.delete(id))) throw new AdminError('NoSuchApiKey', `no API key '${id}'`);
        return { deleted: true, id };
      },
    },
  },
  spaces: {
    suspend: {
      args: [],
      flags: ['user'],
      required: ['user'],
      summary: "suspend a user's space: uploads are refused and its public assets are no longer served",
      example: 's3edge spaces suspend --user alice',
      run: async ({ repos, flags }) => {
        const user = await requireUser(repos, flags.user as string);
        return spaceView(await repos.spaces.setStatus(user.id, 'suspended'), user.name);
      },
    },
    resume: {
      args: [],
      flags: ['user'],
      required: ['user'],
      summary: "resume a suspended space",
      example: 's3edge spaces resume --user alice',
      run: async ({ repos, flags }) => {
        const user = await requireUser(repos, flags.user as string);
        return spaceView(await repos.spaces.setStatus(user.id, 'active'), user.name);
      },
    },
  },
  credits: {
    grant: {
      args: [],
      flags: ['user', 'amount'],
      required: ['user', 'amount'],
      summary: 'add credits to a user (a ledger entry)',
      example: 's3edge credits grant --user alice --amount 100',
      run: async ({ repos, config, flags }) => {
        const user = await requireUser(repos, flags.user as string);
        const amount = creditAmount(flags.amount);
        const entry = await repos.transact(async (r) => {
          const credits = new CreditsService(r, config.credits, () => new Date());
          await credits.ensureMonthlyGrant(user.id);
          return credits.grant(user.id, amount, 'granted by an administrator');
        });
        return { user: user.name, entryId: entry.id, credits: amount, balance: fromMilli(entry.balanceAfterMilli), createdAt: iso(entry.createdAt) };
      },
    },
  },
  scrub: {
    run: {
      args: [],
      flags: [],
      summary: 're-read every stored blob now, at full speed, and check it against the digest recorded at write time (exit status 1 when anything is corrupt or missing)',
      example: 's3edge scrub run --json',
      run: async ({ config, repos }) => {
        // The one command that reads blobs loads the storage backends (the upstream client's imports
        // alone are a fifth of a second): every other command starts without them.
        const [{ createStorage }, { scrubBlobs }, { CorruptionReporter }] = await Promise.all([
          import('../storage/select.js'),
          import('../storage/scrub.js'),
          import('../storage/corruption.js'),
        ]);
        // No init(): it would clear a running server's uploads in flight.
        const storage = await createStorage(config);
        try {
          // What it finds is marked for `scrub list` and reported here; the log stays quiet.
          const quiet = { warn: () => undefined };
          const corruption = new CorruptionReporter(repos.integrity, quiet, () => new Date());
          const run = await scrubBlobs({ storage, integrity: repos.integrity, blobRefs: repos.blobRefs, objects: repos.objects, corruption, log: quiet }, { bytesPerSecond: 0 });
          const result = {
            checked: run.checked,
            bytes: run.bytes,
            corrupt: run.corrupt.length,
            missing: run.missing.length,
            corruptBlobs: run.corrupt.map((c) => c.owner).join(', '),
            missingBlobs: run.missing.join(', '),
          };
          // Damage found: printed like any result, and exit status 1 for scripts (as fsck does).
          return run.corrupt.length + run.missing.length > 0 ? new FailedResult(result) : result;
        } finally {
          await storage.close();
        }
      },
    },
    list: {
      args: [],
      flags: [],
      summary: 'list the blobs a scrub or a read found corrupt (until they check out again or their object is rewritten)',
      example: 's3edge scrub list',
      run: async ({ repos }) =>
        (await repos.integrity.corrupt()).map((c) => ({ owner: c.owner, expected: c.expected, actual: c.actual, foundBy: c.foundBy, detectedAt: iso(c.detectedAt) })),
    },
  },
  'access-keys': {
    create: {
      args: [],
      flags: ['bucket', 'permission', 'name'],
      required: ['bucket', 'permission'],
      summary: 'create a key limited to one bucket (read | read_write)',
      example: 's3edge access-keys create --bucket photos --permission read_write --name ci',
      run: async ({ repos, masterKey, server, flags }) => {
        const perm = permission(flags.permission);
        const name = label(flags.name);
        const bucket = await requireBucket(repos, flags.bucket as string);
        const { key, secretAccessKey } = await insertKey(repos, masterKey, {
          kind: 'bucket',
          userId: bucket.ownerId,
          bucketId: bucket.id,
          permission: perm,
          name,
        });
        const { endpoint, endpointStatus } = await server();
        return {
          accessKeyId: key.accessKeyId,
          secretAccessKey,
          name: key.name,
          bucket: bucket.name,
          permission: perm,
          endpoint,
          endpointStatus,
          region: bucket.region,
          forcePathStyle: true,
        };
      },
    },
    list: {
      args: [],
      flags: ['bucket'],
      summary: 'list bucket access keys (never their secrets)',
      example: 's3edge access-keys list --bucket photos',
      run: async ({ repos, flags }) => {
        const bucketId = flags.bucket === undefined ? undefined : (await requireBucket(repos, flags.bucket)).id;
        const bucketNames = new Map((await repos.buckets.list()).map((b) => [b.id, b.name]));
        return (await repos.accessKeys.list({ kind: 'bucket', ...(bucketId === undefined ? {} : { bucketId }) })).map((k) => ({
          accessKeyId: k.accessKeyId,
          name: k.name,
          bucket: (k.bucketId !== null && bucketNames.get(k.bucketId)) || '',
          permission: k.permission,
          createdAt: iso(k.createdAt),
        }));
      },
    },
    delete: {
      args: ['ACCESS_KEY_ID'],
      flags: [],
      summary: 'delete a bucket access key',
      example: 's3edge access-keys delete SEEXAMPLEKEYID234567',
      run: ({ repos, args }) => deleteKey(repos, args.ACCESS_KEY_ID as string, 'bucket'),
    },
  },
  ...DOMAIN_COMMANDS,
  ...PROJECT_COMMANDS,
  ...METADATA_COMMANDS,
};

function synopsis(group: string, action: string, cmd: Command): string {
  const flags = cmd.flags.map((f) => {
    if (COMMAND_FLAGS[f as keyof typeof COMMAND_FLAGS]?.type === 'boolean') return `[--${f}]`;
    const value = DOMAIN_FLAGS[f] ?? PROJECT_FLAGS[f]?.value ?? METADATA_FLAGS[f]?.value ?? (f === 'permission' ? 'read|read_write' : f === 'name' ? 'LABEL' : f === 'scopes' ? 'a,b' : f === 'amount' ? 'N' : 'NAME');
    const text = `--${f} ${value}`;
    return cmd.required?.includes(f) ? text : `[${text}]`;
  });
  return ['s3edge', group, action, ...cmd.args, ...flags].join(' ');
}

const COMMON_HELP = [
  'common options: --json (machine-readable output), --data-dir DIR, --config FILE, and every',
  "'s3edge serve' option (--region, --public-url, --master-key, ...); S3EDGE_* environment variables apply too.",
  'Admin commands work on the data directory directly, also while the server runs (but for metadata copy).',
];

/** A group's help (`s3edge users --help`), or one command's (`s3edge users create --help`): synopsis, what it does, an example. */
export function usage(group: string, action?: string): string {
  const actions = COMMANDS[group] ?? {};
  const chosen = action !== undefined && actions[action] ? [[action, actions[action]] as const] : Object.entries(actions);
  const lines = [`usage:`];
  for (const [name, cmd] of chosen) lines.push(`  ${synopsis(group, name, cmd)}`, `      ${cmd.summary}`, `      example: ${cmd.example}`, '');
  lines.push(...COMMON_HELP);
  return lines.join('\n');
}

/** The admin part of `s3edge --help`: sections, then one line per group with its actions. */
export function adminSections(): { section: string; lines: [string, string][] }[] {
  const sections: { section: string; lines: [string, string][] }[] = [];
  for (const [group, meta] of Object.entries(GROUPS)) {
    let section = sections.find((s) => s.section === meta.section);
    if (!section) sections.push((section = { section: meta.section, lines: [] }));
    section.lines.push([`${group} ${Object.keys(COMMANDS[group] ?? {}).join('|')}`, meta.summary]);
  }
  return sections;
}

export function isAdminGroup(name: string): boolean {
  return Object.hasOwn(COMMANDS, name);
}

/** Renders rows as a left-aligned text table. */
function table(rows: Record<string, unknown>[]): string {
  const first = rows[0];
  if (!first) return '(none)';
  const cols = Object.keys(first);
  const cells = [cols.map((c) => c.toUpperCase()), ...rows.map((r) => cols.map((c) => String(r[c] ?? '')))];
  const widths = cols.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return cells.map((row) => row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}

function isCounts(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A value of a result that is an object (counts by name): on indented lines of its own. */
function counts(v: Record<string, unknown>): string {
  const entries = Object.entries(v);
  const width = Math.max(0, ...entries.map(([k]) => k.length));
  return entries.map(([k, x]) => `\n  ${k.padEnd(width)}  ${String(x)}`).join('');
}

function human(result: unknown): string {
  if (typeof result === 'string') return result;
  if (Array.isArray(result)) return table(result as Record<string, unknown>[]);
  const obj = result as Record<string, unknown>;
  const lines = Object.entries(obj)
    .filter(([k]) => k !== 'endpointStatus')
    .map(([k, v]) => (isCounts(v) ? `${k}:${counts(v)}` : `${(k + ':').padEnd(17)} ${k === 'endpoint' ? endpointLine(v, obj.endpointStatus) : String(v)}`));
  if ('secretAccessKey' in obj) lines.push('', 'The secret access key is shown only now: store it somewhere safe.');
  return lines.join('\n');
}

interface Parsed {
  group: string;
  action: string;
  cmd: Command;
  values: Values;
  args: Record<string, string>;
}

interface Help {
  help: true;
  group?: string;
  action?: string;
}

function parse(rawArgv: string[]): Parsed | Help {
  const configOptions = Object.fromEntries([...configFlags().keys()].map((f) => [f, { type: 'string' as const }]));
  const argv = attachDashValues(rawArgv, ['config', ...Object.keys(configOptions), ...VALUED_FLAGS]);
  const [first, second] = argv.filter((a) => !a.startsWith('-'));
  const ownFlags = first !== undefined && second !== undefined ? (COMMANDS[first]?.[second]?.flags ?? []) : [];
  const unknown = unknownOption(argv, [...COMMON_OPTIONS, ...Object.keys(configOptions), ...Object.keys(COMMAND_FLAGS)]);
  if (unknown !== undefined) {
    // Suggest the command's own options first: they are what a typo most likely meant.
    const hint = didYouMean(unknown, ownFlags, (f) => `--${f}`) || didYouMean(unknown, [...COMMON_OPTIONS, ...Object.keys(configOptions)], (f) => `--${f}`);
    throw new UsageError(`Unknown option '--${unknown}'.${hint}`, first, second);
  }
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: {
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        config: { type: 'string' },
        ...configOptions,
        ...COMMAND_FLAGS,
      },
    }));
  } catch (err) {
    const message = ((err as Error).message.split('\n')[0] ?? '').replace(/\. To specify a positional argument.*$/, '');
    throw new UsageError(message || 'invalid arguments', first, second);
  }
  const [group, action, ...rest] = positionals;
  const actions = group === undefined ? undefined : COMMANDS[group];
  if (!actions) {
    if (values.help && group === undefined) return { help: true };
    if (group === undefined) throw new UsageError('missing command');
    throw new UsageError(`unknown command '${group}'.${didYouMean(group, [...Object.keys(COMMANDS), 'serve', 'help'])}`);
  }
  if (values.help && (action === undefined || actions[action])) return { help: true, group, ...(action !== undefined ? { action } : {}) };
  const cmd = action === undefined ? undefined : actions[action];
  if (!cmd) {
    if (action === undefined) throw new UsageError(`missing ${group} action: one of ${Object.keys(actions).join(', ')}`, group);
    throw new UsageError(`unknown command '${group} ${action}'.${didYouMean(action, Object.keys(actions), (a) => `${group} ${a}`)}`, group);
  }
  const where = `${group} ${action as string}`;
  for (const flag of Object.keys(COMMAND_FLAGS)) {
    if (values[flag] !== undefined && !cmd.flags.includes(flag)) throw new UsageError(`'${where}' does not take --${flag}`, group, action);
  }
  if (values['token-only'] === true && values.json === true) {
    throw new UsageError(`'${where}': --token-only prints the token alone, --json the whole key: give one of them`, group, action);
  }
  for (const flag of cmd.required ?? []) {
    if (values[flag] === undefined || values[flag] === '') throw new UsageError(`'${where}' requires --${flag}`, group, action);
  }
  if (rest.length < cmd.args.length) throw new UsageError(`'${where}' requires ${cmd.args.slice(rest.length).join(' ')}`, group, action);
  if (rest.length > cmd.args.length) throw new UsageError(`'${where}': unexpected argument '${rest[cmd.args.length] ?? ''}'`, group, action);
  const args = Object.fromEntries(cmd.args.map((name, i) => [name, rest[i] as string]));
  for (const [name, value] of Object.entries(args)) {
    if (value === '') throw new UsageError(`'${where}': ${name} must not be empty`, group, action);
  }
  return { group: group as string, action: action as string, cmd, values, args };
}

function fail(json: boolean, code: string, message: string): void {
  process.stderr.write(`s3edge: ${message}\n`);
  if (json) process.stdout.write(JSON.stringify({ error: { code, message } }) + '\n');
}

/** Runs one admin command; returns the process exit code (0 ok, 1 failed operation, 2 usage or config error). */
export async function runAdmin(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  let parsed: Parsed | Help;
  try {
    parsed = parse(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    fail(json, 'UsageError', err.message);
    process.stderr.write((err.group !== undefined && isAdminGroup(err.group) ? usage(err.group, err.action) : "Run 's3edge --help' for the list of commands.") + '\n');
    return 2;
  }
  if ('help' in parsed) {
    process.stdout.write((parsed.group === undefined ? (await import('./help.js')).mainHelp() : usage(parsed.group, parsed.action)) + '\n');
    return 0;
  }

  const { group, cmd, values, args } = parsed;
  const flagMap = configFlags();
  const configValues: Record<string, string> = {};
  for (const [flag, path] of flagMap) {
    const v = values[flag];
    if (typeof v === 'string') configValues[path] = v;
  }
  const flags: Record<string, string | undefined> = {};
  for (const flag of cmd.flags) {
    const v = values[flag];
    // A switch (boolean flag) given reads as 'true'.
    flags[flag] = typeof v === 'string' ? v : v === true ? 'true' : undefined;
  }

  let dataDir: Awaited<ReturnType<typeof openDataDir>> | undefined;
  try {
    const sources = { flags: configValues, ...(typeof values.config === 'string' ? { configFile: values.config } : {}) };
    const config = loadConfig(sources);
    // The metadata commands move this data directory's meta.db as a whole (to the `metadata` database
    // when it names one); every other command works on the metadata store the servers use.
    const source = group === 'metadata' ? { ...config, metadata: 'sqlite' } : config;
    dataDir = await openDataDir(source, { mustExist: cmd.initialises !== true });
    const { repos } = dataDir;
    const server = (): Promise<ServerView> => serverView(config, repos, givenExplicitly('region', sources));
    if (dataDir.created) process.stderr.write(`s3edge: created a new data directory at ${resolve(config.dataDir)} (no server has used it yet)\n`);
    const returned: unknown = await cmd.run({ config, repos, ...(dataDir.db ? { db: dataDir.db } : {}), masterKey: dataDir.masterKey, args, flags, server });
    const result = returned instanceof FailedResult ? returned.result : returned;
    process.stdout.write((json ? JSON.stringify(result) : human(result)) + '\n');
    return returned instanceof FailedResult ? 1 : 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      fail(json, 'ConfigError', err.message);
      return 2;
    }
    if (err instanceof NoDataDirError) {
      fail(json, 'NoDataDir', err.message);
      return 2;
    }
    if (err instanceof AdminError || err instanceof S3Error) {
      fail(json, err.code, err.message);
      return 1;
    }
    const code = (err as { code?: unknown }).code;
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
      fail(json, 'Busy', 'the database is busy; try again');
      return 1;
    }
    fail(json, 'InternalError', `internal error: ${(err as Error).message ?? String(err)}`);
    return 1;
  } finally {
    await dataDir?.store.close();
  }
}
