// Admin commands of bucket notifications: the webhook targets buckets' NotificationConfigurations name
// (arn:s3edge:sqs:<region>:<id>:webhook). A target's signing secret is shown once, when added, and kept
// sealed with the master key; deliveries carry its HMAC (docs/NOTIFICATIONS.md).
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { encryptSecret } from '../auth/secrets.js';
import { ConstraintError } from '../db/repos/index.js';
import { refusal } from '../net/address-policy.js';
import { AdminError, iso, type Command } from './command.js';

export const NOTIFICATION_GROUPS: Readonly<Record<string, { section: string; summary: string }>> = {
  'notification-targets': { section: 'Buckets', summary: 'webhooks that bucket event notifications are delivered to' },
};

export const NOTIFICATION_FLAGS: Readonly<Record<string, { type: 'string'; value: string }>> = {
  secret: { type: 'string', value: 'SECRET' },
};

const ID = /^[A-Za-z0-9_-]{1,64}$/;
const PRIVATE_HINT = ' (a receiver on your own network: start the server with --notifications-allow-private-targets true)';

/** The webhook URL, checked as far as it can be before a delivery: http(s), no credentials, a public host. */
function webhookUrl(raw: string, allowPrivate: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AdminError('InvalidUrl', `--url must be a URL such as https://hooks.example.com/s3 (got '${raw.slice(0, 200)}')`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AdminError('InvalidUrl', '--url must start with http:// or https://');
  if (url.username || url.password) throw new AdminError('InvalidUrl', '--url must not carry a user name or password: use --secret, deliveries are signed with it');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate) {
    const refused = isIP(host) !== 0 ? refusal(host, { allowPrivateAddresses: false }) : host === 'localhost' || host.endsWith('.localhost') ? 'loopback' : undefined;
    if (refused) throw new AdminError('InvalidUrl', `--url: ${host} is a ${refused} address; deliveries go to public addresses only${PRIVATE_HINT}`);
  }
  return url.href;
}

export const NOTIFICATION_COMMANDS: Record<string, Record<string, Command>> = {
  'notification-targets': {
    add: {
      args: ['ID'],
      flags: ['url', 'secret'],
      required: ['url'],
      summary: 'add a webhook target (its signing secret, given or generated, is shown once)',
      example: 's3edge notification-targets add uploads --url https://hooks.example.com/s3',
      run: async ({ repos, masterKey, config, args, flags }) => {
        const id = args.ID as string;
        if (!ID.test(id)) throw new AdminError('InvalidId', 'a target id is 1-64 letters, digits, - and _');
        const url = webhookUrl(flags.url as string, config.notifications.allowPrivateTargets);
        const secret = flags.secret ?? randomBytes(32).toString('base64url');
        if (secret.length < 16) throw new AdminError('InvalidSecret', '--secret must be at least 16 characters (or leave it out for a generated one)');
        try {
          await repos.notificationTargets.insert({ id, url, secretEnc: encryptSecret(masterKey, secret) });
        } catch (err) {
          if (err instanceof ConstraintError && err.reason === 'duplicate') throw new AdminError('TargetExists', `notification target '${id}' already exists (remove it first to change it)`);
          throw err;
        }
        return { id, url, secret, arn: `arn:s3edge:sqs:${config.region}:${id}:webhook` };
      },
    },
    list: {
      args: [],
      flags: [],
      summary: 'list webhook targets (never their secrets)',
      example: 's3edge notification-targets list',
      run: async ({ repos, config }) =>
        (await repos.notificationTargets.list()).map((t) => ({ id: t.id, url: t.url, arn: `arn:s3edge:sqs:${config.region}:${t.id}:webhook`, createdAt: iso(t.createdAt) })),
    },
    remove: {
      args: ['ID'],
      flags: [],
      summary: "remove a webhook target (its undelivered events become dead letters; buckets naming it stop sending to it)",
      example: 's3edge notification-targets remove uploads',
      run: async ({ repos, args }) => {
        const id = args.ID as string;
        if (!(await repos.notificationTargets.delete(id))) throw new AdminError('NoSuchTarget', `no notification target '${id}' (s3edge notification-targets list)`);
        return { removed: true, id };
      },
    },
  },
};
