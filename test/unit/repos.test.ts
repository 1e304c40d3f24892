import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { KeyStore } from '../../src/auth/key-store.js';
import { ensureRoot } from '../../src/auth/root.js';
import { encryptSecret } from '../../src/auth/secrets.js';
import { openDataDir } from '../../src/db/data-dir.js';
import { ConfigError } from '../../src/config/load.js';
import { openDatabase, type Db } from '../../src/db/open.js';
import { ConstraintError, createRepos, type Repos } from '../../src/db/repos/index.js';
import { S3Error } from '../../src/errors/s3-errors.js';
import { createBucket, deleteBucket } from '../../src/buckets/bucket-service.js';
import { tempDir, testConfig } from '../helpers/temp-data.js';

interface Teardown {
  teardown(fn: () => void): void;
}

function freshDb(t: Teardown, clock?: () => number): { db: Db; repos: Repos; file: string } {
  const file = join(tempDir(t), 'meta.db');
  const db = openDatabase(file);
  t.teardown(() => db.close());
  return { db, repos: createRepos(db, clock ? { clock } : {}), file };
}

/** Stands in for the objects repository: one object row. */
function putObjectRow(db: Db, bucketId: string, key: string): void {
  db.prepare(
    `INSERT INTO objects (bucket_id, key, blob_id, size, etag, sha256, last_modified) VALUES (?, ?, 'blob', 1, '"e"', 'sha', 0)`,
  ).run(bucketId, key);
}

const MASTER = randomBytes(32);

t.test('bucket service: name rules, ownership-aware conflicts, BucketNotEmpty', async (t) => {
  const { db, repos } = freshDb(t);
  const u = await repos.users.create('u');
  const v = await repos.users.create('v');
  const b = await createBucket(repos, { name: 'photos', ownerId: u.id, region: 'eu-central-1' });
  t.match(b, { name: 'photos', ownerId: u.id, region: 'eu-central-1' });
  await t.rejects(createBucket(repos, { name: 'photos', ownerId: u.id, region: 'x' }), { code: 'BucketAlreadyOwnedByYou', status: 409 });
  await t.rejects(createBucket(repos, { name: 'photos', ownerId: v.id, region: 'x' }), { code: 'BucketAlreadyExists', status: 409 });
  await t.rejects(createBucket(repos, { name: 'Photos', ownerId: u.id, region: 'x' }), { code: 'InvalidBucketName' });
  await t.rejects(createBucket(repos, { name: 'storage', ownerId: u.id, region: 'x' }), { code: 'InvalidBucketName' });
  putObjectRow(db, b.id, 'a.jpg');
  await t.rejects(deleteBucket(repos, b), { code: 'BucketNotEmpty' });
  t.ok(await repos.buckets.getById(b.id));
  db.prepare('DELETE FROM objects').run();
  await deleteBucket(repos, b);
  t.equal(await repos.buckets.getById(b.id), undefined);
  await t.rejects(deleteBucket(repos, b), S3Error);
});

t.test('KeyStore: principals for each kind, secrets decrypted', async (t) => {
  const { repos } = freshDb(t);
  const u = await repos.users.create('u');
  const bucket = await repos.buckets.insert({ name: 'data', ownerId: u.id, region: 'us-east-1' });
  await repos.accessKeys.insert({ accessKeyId: 'ROOTKEY', kind: 'root', userId: u.id, name: '', secretEnc: encryptSecret(MASTER, 'root-secret') });
  await repos.accessKeys.insert({ accessKeyId: 'ACCTKEY', kind: 'account', userId: u.id, name: '', secretEnc: encryptSecret(MASTER, 'acct-secret') });
  await repos.accessKeys.insert({
    accessKeyId: 'BKTKEY', kind: 'bucket', userId: u.id, bucketId: bucket.id, permission: 'read', name: '', secretEnc: encryptSecret(MASTER, 'bkt-secret'),
  });
  const keys = new KeyStore(repos, MASTER);
  t.same(await keys.lookup('ROOTKEY'), { secretKey: 'root-secret', principal: { kind: 'root', userId: u.id, userName: 'u', accessKeyId: 'ROOTKEY' } });
  t.same(await keys.lookup('ACCTKEY'), { secretKey: 'acct-secret', principal: { kind: 'account', userId: u.id, userName: 'u', accessKeyId: 'ACCTKEY' } });
  t.same(await keys.lookup('BKTKEY'), {
    secretKey: 'bkt-secret',
    principal: { kind: 'bucket', userId: u.id, userName: 'u', accessKeyId: 'BKTKEY', bucketId: bucket.id, bucketName: 'data', permission: 'read' },
  });
  t.equal(await keys.lookup('UNKNOWN'), undefined);
  t.equal(await keys.lookup(''), undefined);
  t.equal(await keys.lookup('x'.repeat(5000)), undefined);
  t.equal(await keys.lookup("ROOTKEY' OR 1=1 --"), undefined);

  const wrong = new KeyStore(repos, randomBytes(32));
  await t.rejects(wrong.lookup('ROOTKEY'), /cannot decrypt/, 'a wrong master key is an error, not "unknown key"');
});

t.test('KeyStore: a key deleted by another connection stops working within ~1 s', async (t) => {
  const { repos, file } = freshDb(t);
  const other = openDatabase(file);
  t.teardown(() => other.close());
  const otherRepos = createRepos(other);
  const u = await repos.users.create('u');
  await repos.accessKeys.insert({ accessKeyId: 'GOINGAWAY', kind: 'account', userId: u.id, name: '', secretEnc: encryptSecret(MASTER, 's') });
  let now = 1_000_000; // lru-cache treats a start time of 0 as "no TTL"
  const keys = new KeyStore(repos, MASTER, { now: () => now });
  t.ok(await keys.lookup('GOINGAWAY'));
  t.ok(await otherRepos.accessKeys.delete('GOINGAWAY'));
  now += 999;
  t.ok(await keys.lookup('GOINGAWAY'), 'still cached just under a second');
  now += 2;
  t.equal(await keys.lookup('GOINGAWAY'), undefined, 'gone once the second has passed');
});

t.test('KeyStore: negative answers expire too, and garbage ids cannot grow the cache', async (t) => {
  const { repos } = freshDb(t);
  const u = await repos.users.create('u');
  let now = 1_000_000; // lru-cache treats a start time of 0 as "no TTL"
  const keys = new KeyStore(repos, MASTER, { max: 50, now: () => now });
  t.equal(await keys.lookup('LATECOMER'), undefined);
  await repos.accessKeys.insert({ accessKeyId: 'LATECOMER', kind: 'account', userId: u.id, name: '', secretEnc: encryptSecret(MASTER, 's') });
  now += 1001;
  t.ok(await keys.lookup('LATECOMER'), 'a new key works once the negative answer (1 s) expires');

  for (let i = 0; i < 5000; i++) await keys.lookup(`GARBAGE${i}`);
  t.ok(keys.cacheSize <= 100, `cache holds ${keys.cacheSize} entries`);
  t.ok(await keys.lookup('LATECOMER'), 'real keys still resolve');
});

t.test('ensureRoot: generated once, shown once, stored encrypted', async (t) => {
  const dir = tempDir(t);
  const config = testConfig({ dataDir: dir });
  const first = await openDataDir(config);
  const gen = await ensureRoot(config, first.repos, first.masterKey);
  t.equal(gen.generated, true);
  t.match(gen.accessKeyId, /^SE[A-Z2-7]{18}$/);
  t.match(gen.secretAccessKey, /^[A-Za-z0-9_-]{40}$/);
  t.equal((await first.repos.users.getById(gen.userId))?.name, 'root');
  const again = await ensureRoot(config, first.repos, first.masterKey);
  t.same(again, { userId: gen.userId, accessKeyId: gen.accessKeyId, generated: false });
  t.same(await new KeyStore(first.repos, first.masterKey).lookup(gen.accessKeyId), {
    secretKey: gen.secretAccessKey,
    principal: { kind: 'root', userId: gen.userId, userName: 'root', accessKeyId: gen.accessKeyId },
  });
  first.db!.close();

  // A restart (new process, same dir) finds it and does not print a secret.
  const second = await openDataDir(config);
  t.same(await ensureRoot(config, second.repos, second.masterKey), { userId: gen.userId, accessKeyId: gen.accessKeyId, generated: false });
  t.equal((await second.repos.accessKeys.list({ kind: 'root' })).length, 1);
  second.db!.close();

  // Nothing in the data dir (db, wal, shm) holds the secret in plaintext.
  for (const name of readdirSync(dir)) {
    const bytes = readFileSync(join(dir, name));
    t.equal(bytes.indexOf(gen.secretAccessKey as string), -1, `${name} has no plaintext secret`);
  }
  t.equal(statSync(dir).mode & 0o777, 0o700);
});

t.test('ensureRoot: configured root key replaces any other root key', async (t) => {
  const dir = tempDir(t);
  const plain = testConfig({ dataDir: dir });
  const opened = await openDataDir(plain);
  t.teardown(() => opened.db!.close());
  const { repos, masterKey } = opened;
  const gen = await ensureRoot(plain, repos, masterKey);

  const config = testConfig({ dataDir: dir, rootAccessKey: 'ADMINKEY123', rootSecretKey: 'configured-secret-value' });
  t.same(await ensureRoot(config, repos, masterKey), { userId: gen.userId, accessKeyId: 'ADMINKEY123', generated: false });
  t.same((await repos.accessKeys.list({ kind: 'root' })).map((k) => k.accessKeyId), ['ADMINKEY123']);
  const keys = new KeyStore(repos, masterKey);
  t.equal((await keys.lookup('ADMINKEY123'))?.secretKey, 'configured-secret-value');
  t.equal(await keys.lookup(gen.accessKeyId), undefined, 'the generated key is gone');
  t.notMatch((await repos.accessKeys.get('ADMINKEY123'))?.secretEnc ?? '', 'configured-secret-value');

  const before = await repos.accessKeys.get('ADMINKEY123');
  await ensureRoot(config, repos, masterKey);
  t.same(await repos.accessKeys.get('ADMINKEY123'), before, 'unchanged config: no rewrite');

  const rotated = testConfig({ dataDir: dir, rootAccessKey: 'ADMINKEY123', rootSecretKey: 'rotated-secret-value' });
  await ensureRoot(rotated, repos, masterKey);
  t.equal((await new KeyStore(repos, masterKey).lookup('ADMINKEY123'))?.secretKey, 'rotated-secret-value', 'secret rotation applies');

  // Back to no configured key: the configured one stays the root key, no new secret is generated.
  t.same(await ensureRoot(plain, repos, masterKey), { userId: gen.userId, accessKeyId: 'ADMINKEY123', generated: false });

  const u = await repos.users.create('someone');
  await repos.accessKeys.insert({ accessKeyId: 'TAKENID', kind: 'account', userId: u.id, name: '', secretEnc: 'v1:x' });
  await t.rejects(ensureRoot(testConfig({ dataDir: dir, rootAccessKey: 'TAKENID', rootSecretKey: 'whatever-secret' }), repos, masterKey),
    ConfigError,
  );
  t.same((await repos.accessKeys.list({ kind: 'root' })).map((k) => k.accessKeyId), ['ADMINKEY123'], 'failed replace rolled back');
});

t.test('ensureRoot: only one of the pair set is a ConfigError naming the missing one', async (t) => {
  const dir = tempDir(t);
  const opened = await openDataDir(testConfig({ dataDir: dir }));
  t.teardown(() => opened.db!.close());
  await t.rejects(ensureRoot(testConfig({ dataDir: dir, rootAccessKey: 'ONLYID' }), opened.repos, opened.masterKey),
    { name: 'ConfigError', message: /rootSecretKey/ },
  );
  await t.rejects(ensureRoot(testConfig({ dataDir: dir, rootSecretKey: 'only-secret' }), opened.repos, opened.masterKey),
    { name: 'ConfigError', message: /rootAccessKey is required/ },
  );
  t.same(await opened.repos.accessKeys.list({ kind: 'root' }), [], 'nothing created');
});

t.test('openDataDir: creates the dir 0700 and refuses a master key that does not match', async (t) => {
  const dir = join(tempDir(t), 'nested', 'data');
  const config = testConfig({ dataDir: dir });
  const opened = await openDataDir(config);
  opened.db!.close();
  t.equal(statSync(dir).mode & 0o777, 0o700);
  t.equal(statSync(join(dir, 'master.key')).mode & 0o777, 0o600);
  t.ok(statSync(join(dir, 'meta.db')).isFile());
  await t.rejects(openDataDir(testConfig({ dataDir: dir, masterKey: randomBytes(32).toString('hex') })), {
    name: 'ConfigError',
    message: /master key does not match/,
  });
  const again = await openDataDir(config);
  again.db!.close();
  t.pass('the right key still opens it');
});
