// issueAccessKey against a real SQLite database: the secret is stored only encrypted, the key store
// resolves the issued key to its bucket principal, id collisions are retried, a vanished bucket is
// reported as ConstraintError('in_use').
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { issueAccessKey } from '../../src/auth/access-key-issuer.js';
import { KeyStore } from '../../src/auth/key-store.js';
import { decryptSecret } from '../../src/auth/secrets.js';
import { openDatabase, type Db } from '../../src/db/open.js';
import { AccessKeysRepo } from '../../src/db/repos/access-keys.js';
import { ConstraintError, createRepos, type NewAccessKey, type Repos } from '../../src/db/repos/index.js';
import { tempDir } from '../helpers/temp-data.js';

interface Teardown {
  teardown(fn: () => void): void;
}

function freshDb(t: Teardown): { db: Db; repos: Repos } {
  const db = openDatabase(join(tempDir(t), 'meta.db'));
  t.teardown(() => db.close());
  return { db, repos: createRepos(db) };
}

const MASTER = randomBytes(32);

t.test('a bucket key: encrypted at rest, resolved by the key store', async (t) => {
  const { db, repos } = freshDb(t);
  const user = await repos.users.create('ann');
  const bucket = await repos.buckets.insert({ name: 'photos', ownerId: user.id, region: 'us-east-1' });
  const { key, secretAccessKey } = await issueAccessKey(repos, MASTER, {
    kind: 'bucket',
    userId: user.id,
    bucketId: bucket.id,
    permission: 'read',
    name: 'ci',
  });
  t.match(key, { kind: 'bucket', userId: user.id, bucketId: bucket.id, permission: 'read', name: 'ci' });
  t.match(key.accessKeyId, /^SE[A-Z2-7]{18}$/);
  t.match(secretAccessKey, /^[A-Za-z0-9_-]{40}$/);
  t.not(key.secretEnc, secretAccessKey, 'the stored value is not the secret');
  t.equal(decryptSecret(MASTER, key.secretEnc), secretAccessKey, 'the stored value opens to the secret');
  const rows = db.prepare('SELECT * FROM access_keys').all();
  t.notMatch(JSON.stringify(rows), secretAccessKey, 'no column holds the plaintext');

  const found = await new KeyStore(repos, MASTER).lookup(key.accessKeyId);
  t.same(found, {
    secretKey: secretAccessKey,
    principal: { kind: 'bucket', userId: user.id, userName: 'ann', accessKeyId: key.accessKeyId, bucketId: bucket.id, bucketName: 'photos', permission: 'read' },
  });
});

t.test('an id collision is retried with a fresh id', async (t) => {
  const { db, repos } = freshDb(t);
  const user = await repos.users.create('ann');
  const tried: string[] = [];
  // A real repository whose first insert reports the id as taken.
  const colliding = new (class extends AccessKeysRepo {
    override async insert(input: NewAccessKey) {
      tried.push(input.accessKeyId);
      if (tried.length === 1) throw new ConstraintError('duplicate', 'access key id already exists');
      return super.insert(input);
    }
  })(repos.store);
  const { key } = await issueAccessKey({ accessKeys: colliding }, MASTER, { kind: 'account', userId: user.id, bucketId: null, permission: null, name: '' });
  t.equal(tried.length, 2, 'two attempts');
  t.not(tried[0], tried[1], 'with different ids');
  t.equal(key.accessKeyId, tried[1]);
  t.ok(await repos.accessKeys.get(key.accessKeyId), 'the second one is stored');
});

t.test('a bucket that no longer exists: ConstraintError in_use, nothing stored', async (t) => {
  const { repos } = freshDb(t);
  const user = await repos.users.create('ann');
  await t.rejects(
    issueAccessKey(repos, MASTER, { kind: 'bucket', userId: user.id, bucketId: 'f'.repeat(32), permission: 'read_write', name: '' }),
    { name: 'ConstraintError', reason: 'in_use' },
  );
  t.same(await repos.accessKeys.list({ kind: 'bucket' }), []);
});
