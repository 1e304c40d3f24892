// Admin commands of keys: account keys (S3 keys with a user's rights), bucket access keys (S3 keys for
// one bucket) and management API keys (bearer tokens with scopes). A secret is shown once, when made.
import { mintApiKey, parseScopes, ALL_SCOPES } from '../auth/api-keys.js';
import { issueAccessKey, type AccessKeyFields, type IssuedAccessKey } from '../auth/access-key-issuer.js';
import { ConstraintError, type BucketPermission, type Repos } from '../db/repos/index.js';
import { AdminError, iso, type Command } from './command.js';
import { label, requireBucket, requireUser, userNames } from './lookups.js';

export const KEY_GROUPS: Readonly<Record<string, { section: string; summary: string }>> = {
  'account-keys': { section: 'Accounts and keys', summary: "S3 keys with a user's rights: create buckets, use all of theirs" },
  'access-keys': { section: 'Accounts and keys', summary: 'S3 keys for one bucket, read or read_write' },
  'api-keys': { section: 'Accounts and keys', summary: 'bearer tokens for the management API, with scopes' },
};

const PERMISSIONS: readonly BucketPermission[] = ['read', 'read_write'];

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

export const KEY_COMMANDS = {
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
} satisfies Record<string, Record<string, Command>>;
