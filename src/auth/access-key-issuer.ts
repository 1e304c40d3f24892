// Issuing S3 access keys: a fresh id and secret, the secret sealed with the master key before it is
// stored. The admin CLI and the management API both issue keys here, so they are stored the same way.
import { ConstraintError, type AccessKey, type Repos } from '../db/repos/index.js';
import { newAccessKeyId, newSecretKey } from '../db/ids.js';
import { encryptSecret } from './secrets.js';

/** What the caller decides about a key; id, secret and creation time are issued here. */
export type AccessKeyFields = Omit<AccessKey, 'accessKeyId' | 'secretEnc' | 'createdAt'>;

export interface IssuedAccessKey {
  key: AccessKey;
  /** The plaintext secret: returned once, only its encryption is stored. */
  secretAccessKey: string;
}

/**
 * Inserts a key with a fresh id; retries the (astronomically unlikely) id collision. Throws
 * ConstraintError('in_use') when the user or bucket of the key no longer exists.
 */
export async function issueAccessKey(repos: Pick<Repos, 'accessKeys'>, masterKey: Buffer, fields: AccessKeyFields): Promise<IssuedAccessKey> {
  for (let attempt = 0; ; attempt++) {
    const accessKeyId = newAccessKeyId();
    const secretAccessKey = newSecretKey();
    try {
      const key = await repos.accessKeys.insert({ ...fields, accessKeyId, secretEnc: encryptSecret(masterKey, secretAccessKey) });
      return { key, secretAccessKey };
    } catch (err) {
      if (err instanceof ConstraintError && err.reason === 'duplicate' && attempt < 3) continue;
      throw err;
    }
  }
}
