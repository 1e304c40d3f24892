// The S3 credential the dashboard's object browser signs with: one account key per user, named
// CONSOLE_KEY_NAME, made the first time the user browses a bucket. Its secret never leaves the server
// (the browser gets presigned URLs for one operation on one key, good for minutes); an operator who
// deletes it (`s3edge keys delete`) only makes the next browse issue a new one. Account keys reach only
// the user's own buckets, as any key of theirs does.
import type { Repos } from '../db/repos/index.js';
import { issueAccessKey } from '../auth/access-key-issuer.js';
import { decryptSecret } from '../auth/secrets.js';

export const CONSOLE_KEY_NAME = 'dashboard object browser';

export interface ConsoleCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export async function consoleCredentials(repos: Pick<Repos, 'accessKeys'>, masterKey: Buffer, userId: string): Promise<ConsoleCredentials> {
  const existing = (await repos.accessKeys.list({ kind: 'account', userId })).find((k) => k.name === CONSOLE_KEY_NAME);
  if (existing) return { accessKeyId: existing.accessKeyId, secretAccessKey: decryptSecret(masterKey, existing.secretEnc) };
  // Two first browses at once make two keys; both work, and later ones take the first listed.
  const issued = await issueAccessKey(repos, masterKey, { kind: 'account', userId, bucketId: null, permission: null, name: CONSOLE_KEY_NAME });
  return { accessKeyId: issued.key.accessKeyId, secretAccessKey: issued.secretAccessKey };
}
