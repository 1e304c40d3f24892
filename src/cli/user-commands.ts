// Admin commands of users (accounts that own buckets, assets and credits): create, list, delete, their
// dashboard passwords and sessions, and their storage quotas.
import { ROOT_USER } from '../auth/root.js';
import { ConstraintError } from '../db/repos/index.js';
import { passwordHashFromStdin } from './password-input.js';
import { AdminError, iso, type Command } from './command.js';
import { requireUser } from './lookups.js';
import { parseQuotaSize, QUOTA_FORM, quotaAnswer } from './quota-size.js';

export const USER_GROUPS: Readonly<Record<string, { section: string; summary: string }>> = {
  users: { section: 'Accounts and keys', summary: 'accounts that own buckets, assets and credits' },
};

const USER_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

export const USER_COMMANDS = {
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
      summary: 'list users, with the bytes each stores (buckets and assets) and their storage quota (none: no quota)',
      example: 's3edge users list --json',
      run: async ({ repos }) => {
        const users = await repos.users.list();
        const out = [];
        for (const u of users) {
          out.push({
            id: u.id,
            name: u.name,
            createdAt: iso(u.createdAt),
            hasPassword: (await repos.users.passwordHash(u.id)) !== undefined,
            storedBytes: await repos.storageUsage.ownerBytes(u.id),
            quotaBytes: await repos.storageQuotas.userQuota(u.id),
          });
        }
        return out;
      },
    },
    'set-quota': {
      args: ['NAME'],
      flags: ['storage'],
      required: ['storage'],
      summary: `set a user's storage quota: what their buckets and assets may store together (--storage is ${QUOTA_FORM}); uploads past it are refused (S3 QuotaExceeded, API quota_exceeded), every running server applies it within a second`,
      example: 's3edge users set-quota alice --storage 10GiB',
      run: async ({ repos, args, flags }) => {
        const quota = parseQuotaSize(flags.storage as string);
        const user = await requireUser(repos, args.NAME as string);
        if (!(await repos.storageQuotas.setUserQuota(user.id, quota))) throw new AdminError('NoSuchUser', `no user named '${user.name}'`);
        const storedBytes = await repos.storageUsage.ownerBytes(user.id);
        return quotaAnswer(user.name, quota, storedBytes);
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
} satisfies Record<string, Record<string, Command>>;
