// The built-in `root` user and its one root key: from config, or generated once and shown once.
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import { newAccessKeyId, newSecretKey } from '../db/ids.js';
import { decryptSecret, encryptSecret } from './secrets.js';

export const ROOT_USER = 'root';

export interface RootCredentials {
  userId: string;
  accessKeyId: string;
  /** Only when generated now: it is never shown again. */
  secretAccessKey?: string;
  generated: boolean;
}

function sameSecret(masterKey: Buffer, enc: string, secret: string): boolean {
  try {
    return decryptSecret(masterKey, enc) === secret;
  } catch {
    return false;
  }
}

/** Makes sure the root user and exactly one root key exist; see RootCredentials for what is returned. */
export async function ensureRoot(config: Config, repos: Repos, masterKey: Buffer): Promise<RootCredentials> {
  const wantId = config.rootAccessKey;
  const wantSecret = config.rootSecretKey;
  if ((wantId === '') !== (wantSecret === '')) {
    const missing = wantId === '' ? 'rootAccessKey' : 'rootSecretKey';
    const given = wantId === '' ? 'rootSecretKey' : 'rootAccessKey';
    throw new ConfigError(`config: ${missing} is required when ${given} is set`);
  }

  return repos.transact(async (r): Promise<RootCredentials> => {
    const user = (await r.users.getByName(ROOT_USER)) ?? (await r.users.create(ROOT_USER));
    const existing = await r.accessKeys.list({ kind: 'root' });

    if (wantId !== '') {
      const [only] = existing;
      const unchanged =
        existing.length === 1 && only?.accessKeyId === wantId && only.userId === user.id && sameSecret(masterKey, only.secretEnc, wantSecret);
      if (!unchanged) {
        await r.accessKeys.deleteByKind('root');
        const taken = await r.accessKeys.get(wantId);
        if (taken) throw new ConfigError('config: rootAccessKey is already the id of another access key');
        await r.accessKeys.insert({
          accessKeyId: wantId,
          kind: 'root',
          userId: user.id,
          name: 'root',
          secretEnc: encryptSecret(masterKey, wantSecret),
        });
      }
      return { userId: user.id, accessKeyId: wantId, generated: false };
    }

    const current = existing[0];
    if (current) return { userId: user.id, accessKeyId: current.accessKeyId, generated: false };

    const accessKeyId = newAccessKeyId();
    const secretAccessKey = newSecretKey();
    await r.accessKeys.insert({
      accessKeyId,
      kind: 'root',
      userId: user.id,
      name: 'root',
      secretEnc: encryptSecret(masterKey, secretAccessKey),
    });
    return { userId: user.id, accessKeyId, secretAccessKey, generated: true };
  });
}
