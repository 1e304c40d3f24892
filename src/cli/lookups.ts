// What several admin command groups look up or check the same way: a user or bucket by name (a failed
// command when there is none), user names by id for listings, and a key's label.
import type { Bucket, Repos, User } from '../db/repos/index.js';
import { AdminError } from './command.js';

const MAX_LABEL = 128;

export async function requireUser(repos: Repos, name: string): Promise<User> {
  const user = await repos.users.getByName(name);
  if (!user) throw new AdminError('NoSuchUser', `no user named '${name}'`);
  return user;
}

export async function requireBucket(repos: Repos, name: string): Promise<Bucket> {
  const bucket = await repos.buckets.getByName(name);
  if (!bucket) throw new AdminError('NoSuchBucket', `no bucket named '${name}'`);
  return bucket;
}

/** A user's name by id, for listings (the id itself for a user gone meanwhile). */
export async function userNames(repos: Repos): Promise<(id: string) => string> {
  const names = new Map((await repos.users.list()).map((u) => [u.id, u.name]));
  return (id) => names.get(id) ?? id;
}

/** --name of a key: at most MAX_LABEL printable characters, '' when not given. */
export function label(value: string | undefined): string {
  const v = value ?? '';
  if (v.length > MAX_LABEL || /[\u0000-\u001f\u007f]/.test(v)) {
    throw new AdminError('InvalidName', `--name must be at most ${MAX_LABEL} printable characters`);
  }
  return v;
}
