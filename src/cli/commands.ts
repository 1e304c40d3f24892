// The admin command table: every group with its actions (from the per-area modules), the flags they
// take, and the groups' sections and one-line summaries. admin.ts parses and runs from it, help.ts
// prints it, top-level.ts tells a command from an option with it; it imports none of them.
import type { Command } from './command.js';
import { USER_COMMANDS, USER_GROUPS } from './user-commands.js';
import { KEY_COMMANDS, KEY_GROUPS } from './key-commands.js';
import { BUCKET_COMMANDS, BUCKET_GROUPS } from './bucket-commands.js';
import { SPACE_COMMANDS, SPACE_GROUPS } from './space-commands.js';
import { STORAGE_COMMANDS, STORAGE_GROUPS } from './storage-commands.js';
import { DOMAIN_COMMANDS, DOMAIN_FLAGS, DOMAIN_GROUPS } from './domain-commands.js';
import { PROJECT_COMMANDS, PROJECT_FLAGS, PROJECT_GROUPS } from './project-commands.js';
import { METADATA_COMMANDS, METADATA_FLAGS, METADATA_GROUPS } from './metadata-commands.js';
import { LIFECYCLE_COMMANDS, LIFECYCLE_FLAGS, LIFECYCLE_GROUPS } from './lifecycle-commands.js';
import { NOTIFICATION_COMMANDS, NOTIFICATION_FLAGS, NOTIFICATION_GROUPS } from './notification-commands.js';

export const COMMAND_FLAGS = {
  user: { type: 'string' },
  name: { type: 'string' },
  bucket: { type: 'string' },
  permission: { type: 'string' },
  scopes: { type: 'string' },
  amount: { type: 'string' },
  /** users set-quota, buckets set-quota: a size, or none. */
  storage: { type: 'string' },
  /** api-keys create: print the token alone, for `TOKEN=$(s3edge api-keys create ... --token-only)`. */
  'token-only': { type: 'boolean' },
  /** users create: read the dashboard password from standard input. */
  'password-stdin': { type: 'boolean' },
  ...Object.fromEntries(Object.keys(DOMAIN_FLAGS).map((f) => [f, { type: 'string' as const }])),
  ...Object.fromEntries(Object.entries(PROJECT_FLAGS).map(([f, o]) => [f, { type: o.type }])),
  ...Object.fromEntries(Object.entries(METADATA_FLAGS).map(([f, o]) => [f, { type: o.type }])),
  ...Object.fromEntries(Object.entries(LIFECYCLE_FLAGS).map(([f, o]) => [f, { type: o.type }])),
  ...Object.fromEntries(Object.entries(NOTIFICATION_FLAGS).map(([f, o]) => [f, { type: o.type }])),
} as const satisfies Record<string, { type: 'string' | 'boolean' }>;

/** The sections of `s3edge --help`, in order, and each group's one line there. */
export const GROUPS: Readonly<Record<string, { section: string; summary: string }>> = {
  ...USER_GROUPS,
  ...KEY_GROUPS,
  ...BUCKET_GROUPS,
  ...LIFECYCLE_GROUPS,
  ...NOTIFICATION_GROUPS,
  ...SPACE_GROUPS,
  ...STORAGE_GROUPS,
  ...METADATA_GROUPS,
  ...DOMAIN_GROUPS,
  ...PROJECT_GROUPS,
};

/** Every group's actions. In this order a mistyped group is matched (the first of equally close ones wins). */
export const COMMANDS: Record<string, Record<string, Command>> = {
  users: USER_COMMANDS.users,
  'account-keys': KEY_COMMANDS['account-keys'],
  buckets: BUCKET_COMMANDS.buckets,
  ...LIFECYCLE_COMMANDS,
  'api-keys': KEY_COMMANDS['api-keys'],
  spaces: SPACE_COMMANDS.spaces,
  credits: SPACE_COMMANDS.credits,
  scrub: STORAGE_COMMANDS.scrub,
  'access-keys': KEY_COMMANDS['access-keys'],
  ...NOTIFICATION_COMMANDS,
  ...DOMAIN_COMMANDS,
  ...PROJECT_COMMANDS,
  ...METADATA_COMMANDS,
};

export function isAdminGroup(name: string): boolean {
  return Object.hasOwn(COMMANDS, name);
}
