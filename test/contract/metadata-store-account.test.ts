// The account repositories (users, access keys, API keys, dashboard sessions, settings, spaces, usage
// events, the credit ledger and upload reservations) on both metadata stores: every method, the same
// expectations on SQLite and PostgreSQL. The credits service runs on both too, with two stores on one
// database standing in for two gateway processes.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { Refusal } from '../../src/errors/refusal.js';
import { refusalOf } from '../helpers/refusal.js';
import { creditsConfig, MIB } from '../helpers/credits-config.js';
import { KeyStore } from '../../src/auth/key-store.js';
import { encryptSecret } from '../../src/auth/secrets.js';
import type { CreditsConfig } from '../../src/config/schema.js';
import { CreditsService, HOLDER_TTL_MS, type UploadReservation } from '../../src/credits/credits.js';
import {
  AccessKeysRepo, ApiKeysRepo, ConstraintError, CreditReservationsRepo, CreditsRepo, SessionsRepo, SettingsRepo, SpacesRepo, UsageRepo,
  UsersRepo, type Repos,
} from '../../src/db/repos/index.js';
import type { SqlExecutor } from '../../src/db/store/types.js';
import { storeMatrix } from '../helpers/stores.js';

const stores = storeMatrix(t);

type AccountRepos = Pick<
  Repos,
  'users' | 'accessKeys' | 'apiKeys' | 'sessions' | 'settings' | 'spaces' | 'usage' | 'credits' | 'creditReservations' | 'transact'
>;

/** The account repositories over `exec`, wired as createRepos wires them (transact binds them to the transaction). */
function accountRepos(exec: SqlExecutor, clock: () => number = Date.now): AccountRepos {
  return {
    users: new UsersRepo(exec, clock),
    accessKeys: new AccessKeysRepo(exec, clock),
    apiKeys: new ApiKeysRepo(exec, clock),
    sessions: new SessionsRepo(exec),
    settings: new SettingsRepo(exec),
    spaces: new SpacesRepo(exec, clock),
    usage: new UsageRepo(exec, clock),
    credits: new CreditsRepo(exec, clock),
    creditReservations: new CreditReservationsRepo(exec),
    // Only the account repositories exist here: enough for what these tests run in a transaction.
    transact: (fn) => exec.transaction((tx) => fn(accountRepos(tx, clock) as unknown as Repos)),
  };
}

/** A bucket row (the buckets repository is not one of these). */
async function bucketRow(db: SqlExecutor, id: string, name: string, ownerId: string): Promise<void> {
  await db.run('INSERT INTO buckets (id, name, owner_id, region, created_at) VALUES (?, ?, ?, ?, ?)', [id, name, ownerId, 'us-east-1', 1]);
}

stores.each('users: create, get, list, passwords, duplicate names, delete guarded by buckets', async (t, open) => {
  const db = await open(t);
  let now = 1_700_000_000_000;
  const repos = accountRepos(db, () => now++);
  const bob = await repos.users.create('bob');
  const alice = await repos.users.create('alice');
  t.match(bob, { name: 'bob', createdAt: 1_700_000_000_000 });
  t.match(bob.id, /^[0-9a-f]{32}$/);
  t.same(await repos.users.getByName('alice'), alice);
  t.same(await repos.users.getById(bob.id), bob);
  t.equal(await repos.users.getByName('carol'), undefined);
  t.equal(await repos.users.getById('nobody'), undefined);
  t.same((await repos.users.list()).map((u) => u.name), ['alice', 'bob'], 'ordered by name');
  await t.rejects(repos.users.create('bob'), new ConstraintError('duplicate', "user 'bob' already exists"));

  t.equal(await repos.users.passwordHash(bob.id), undefined, 'no password yet');
  t.equal(await repos.users.setPasswordHash(bob.id, 'scrypt$hash'), true);
  t.equal(await repos.users.passwordHash(bob.id), 'scrypt$hash');
  t.equal(await repos.users.setPasswordHash(bob.id, null), true, 'removed');
  t.equal(await repos.users.passwordHash(bob.id), undefined);
  t.equal(await repos.users.setPasswordHash('nobody', 'x'), false, 'no such user');

  await bucketRow(db, 'b1', 'bobs-bucket', bob.id);
  await t.rejects(repos.users.delete(bob.id), { name: 'ConstraintError', reason: 'in_use' });
  t.ok(await repos.users.getById(bob.id), 'still there');
  await db.run("DELETE FROM buckets WHERE id = 'b1'");
  await repos.accessKeys.insert({ accessKeyId: 'SEBOBKEY', kind: 'account', userId: bob.id, name: '', secretEnc: 'v1:x' });
  t.equal(await repos.users.delete(bob.id), true);
  t.equal(await repos.users.delete(bob.id), false, 'second delete finds nothing');
  t.equal(await repos.accessKeys.get('SEBOBKEY'), undefined, "the user's keys go with it");
});

stores.each('transact: repositories bound to it, everything rolled back on a throw', async (t, open) => {
  const repos = accountRepos(await open(t));
  await t.rejects(
    repos.transact(async (r) => {
      await r.users.create('temp');
      t.ok(await r.users.getByName('temp'), 'seen inside');
      throw new Error('boom');
    }),
    /boom/,
  );
  t.equal(await repos.users.getByName('temp'), undefined);
  const made = await repos.transact(async (r) => r.users.create('kept'));
  t.same(await repos.users.getByName('kept'), made);
});

stores.each('access keys: kinds, filters, getWithBucket, delete, deleteByKind, cascade from bucket', async (t, open) => {
  const db = await open(t);
  let now = 1000;
  const repos = accountRepos(db, () => now++);
  const u = await repos.users.create('u');
  const v = await repos.users.create('v');
  await bucketRow(db, 'b1', 'b1-bucket', u.id);
  await bucketRow(db, 'b2', 'b2-bucket', u.id);
  const root = await repos.accessKeys.insert({ accessKeyId: 'ROOT1', kind: 'root', userId: u.id, name: 'root', secretEnc: 'v1:r' });
  const acct = await repos.accessKeys.insert({ accessKeyId: 'ACCT1', kind: 'account', userId: v.id, name: 'ci', secretEnc: 'v1:a' });
  const k1 = await repos.accessKeys.insert({
    accessKeyId: 'BKT1', kind: 'bucket', userId: u.id, bucketId: 'b1', permission: 'read', name: 'reader', secretEnc: 'v1:b',
  });
  const k2 = await repos.accessKeys.insert({
    accessKeyId: 'BKT2', kind: 'bucket', userId: u.id, bucketId: 'b2', permission: 'read_write', name: '', secretEnc: 'v1:c',
  });
  t.same(root, { accessKeyId: 'ROOT1', kind: 'root', userId: u.id, bucketId: null, permission: null, name: 'root', secretEnc: 'v1:r', createdAt: 1002 });
  t.same(await repos.accessKeys.get('BKT1'), k1);
  t.same(await repos.accessKeys.get('ROOT1'), root);
  t.equal(await repos.accessKeys.get('NOPE'), undefined);
  t.same(await repos.accessKeys.getWithBucket('BKT1'), { ...k1, bucketName: 'b1-bucket', userName: 'u' });
  t.same(await repos.accessKeys.getWithBucket('ACCT1'), { ...acct, bucketName: null, userName: 'v' });
  t.equal(await repos.accessKeys.getWithBucket('NOPE'), undefined);

  t.same((await repos.accessKeys.list()).map((k) => k.accessKeyId), ['ROOT1', 'ACCT1', 'BKT1', 'BKT2'], 'oldest first');
  t.same((await repos.accessKeys.list({ kind: 'bucket' })).map((k) => k.accessKeyId), ['BKT1', 'BKT2']);
  t.same(await repos.accessKeys.list({ userId: v.id }), [acct]);
  t.same(await repos.accessKeys.list({ bucketId: 'b2' }), [k2]);
  t.same(await repos.accessKeys.list({ kind: 'account', userId: u.id }), []);
  t.same(await repos.accessKeys.list({ kind: 'bucket', userId: u.id, bucketId: 'b1' }), [k1], 'every filter at once');

  await t.rejects(repos.accessKeys.insert({ accessKeyId: 'ACCT1', kind: 'account', userId: v.id, name: '', secretEnc: 'x' }), { name: 'ConstraintError', reason: 'duplicate' });
  await t.rejects(repos.accessKeys.insert({ accessKeyId: 'X1', kind: 'bucket', userId: u.id, name: '', secretEnc: 'x' }), /bucket keys only/);
  await t.rejects(repos.accessKeys.insert({ accessKeyId: 'X2', kind: 'account', userId: u.id, bucketId: 'b1', name: '', secretEnc: 'x' }), /bucket keys only/);
  await t.rejects(repos.accessKeys.insert({ accessKeyId: 'X3', kind: 'bucket', userId: u.id, bucketId: 'b1', name: '', secretEnc: 'x' }), /bucket keys only/);
  await t.rejects(repos.accessKeys.insert({ accessKeyId: 'X4', kind: 'account', userId: 'ghost', name: '', secretEnc: 'x' }), { name: 'ConstraintError', reason: 'in_use' });
  await t.rejects(
    repos.accessKeys.insert({ accessKeyId: 'X5', kind: 'bucket', userId: u.id, bucketId: 'gone', permission: 'read', name: '', secretEnc: 'x' }),
    { name: 'ConstraintError', reason: 'in_use' },
  );

  t.equal(await repos.accessKeys.delete('ACCT1'), true);
  t.equal(await repos.accessKeys.delete('ACCT1'), false);
  await db.run("DELETE FROM buckets WHERE id = 'b1'");
  t.equal(await repos.accessKeys.get('BKT1'), undefined, 'bucket keys go with their bucket');
  t.equal(await repos.accessKeys.deleteByKind('root'), 1);
  t.equal(await repos.accessKeys.deleteByKind('root'), 0);
  t.same((await repos.accessKeys.list()).map((k) => k.accessKeyId), ['BKT2']);
});

stores.each('KeyStore over the store: principals, one load per miss, cached answers, invalidate', async (t, open) => {
  const db = await open(t);
  const repos = accountRepos(db);
  const master = randomBytes(32);
  const u = await repos.users.create('u');
  await bucketRow(db, 'bk', 'data', u.id);
  await repos.accessKeys.insert({ accessKeyId: 'ROOTKEY', kind: 'root', userId: u.id, name: '', secretEnc: encryptSecret(master, 'root-secret') });
  await repos.accessKeys.insert({
    accessKeyId: 'BKTKEY', kind: 'bucket', userId: u.id, bucketId: 'bk', permission: 'read', name: '', secretEnc: encryptSecret(master, 'bkt-secret'),
  });
  let now = 1_000_000;
  const keys = new KeyStore(repos, master, { now: () => now });
  t.same(await keys.lookup('ROOTKEY'), { secretKey: 'root-secret', principal: { kind: 'root', userId: u.id, userName: u.name, accessKeyId: 'ROOTKEY' } });
  t.same(await keys.lookup('BKTKEY'), {
    secretKey: 'bkt-secret',
    principal: { kind: 'bucket', userId: u.id, userName: u.name, accessKeyId: 'BKTKEY', bucketId: 'bk', bucketName: 'data', permission: 'read' },
  });
  t.equal(await keys.lookup('UNKNOWN'), undefined);
  t.equal(keys.peek('UNKNOWN'), null, 'the miss is cached');
  t.equal(keys.peek('NEVERASKED'), undefined, 'not cached');
  t.equal(keys.peek("ROOTKEY' OR 1=1 --"), null, 'not a key id: never looked up');

  // verify(): a cached key needs no load; an uncached one is loaded once and the check runs again.
  let runs = 0;
  const cached = await keys.verify((getSecret) => {
    runs++;
    return getSecret('ROOTKEY');
  });
  t.same([cached.value, cached.key?.principal.accessKeyId, runs], ['root-secret', 'ROOTKEY', 1]);
  await repos.accessKeys.insert({ accessKeyId: 'NEWKEY', kind: 'account', userId: u.id, name: '', secretEnc: encryptSecret(master, 'new-secret') });
  runs = 0;
  const loaded = await keys.verify((getSecret) => {
    runs++;
    return getSecret('NEWKEY');
  });
  t.same([loaded.value, loaded.key?.principal.accessKeyId, runs], ['new-secret', 'NEWKEY', 2]);
  const unknown = await keys.verify((getSecret) => getSecret('UNKNOWN'));
  t.same(unknown, { value: undefined, key: undefined });
  await t.rejects(keys.verify(() => {
    throw new Error('malformed');
  }), /malformed/, "the check's own errors pass through");

  // Concurrent misses share one load; a deletion is seen once the answer expires or is invalidated.
  const [a, b] = await Promise.all([keys.lookup('LATE'), keys.lookup('LATE')]);
  t.same([a, b], [undefined, undefined]);
  t.ok(await repos.accessKeys.delete('NEWKEY'));
  t.ok(await keys.lookup('NEWKEY'), 'still cached');
  now += 1001;
  t.equal(await keys.lookup('NEWKEY'), undefined, 'gone once the second has passed');
  await repos.accessKeys.insert({ accessKeyId: 'LATE', kind: 'account', userId: u.id, name: '', secretEnc: encryptSecret(master, 's') });
  keys.invalidate('LATE');
  t.ok(await keys.lookup('LATE'), 'invalidated: loaded again');

  const wrong = new KeyStore(repos, randomBytes(32));
  await t.rejects(wrong.lookup('ROOTKEY'), /cannot decrypt/, 'a wrong master key is an error, not "unknown key"');
});

stores.each('API keys: insert, get, list (all, per user), delete', async (t, open) => {
  const db = await open(t);
  let now = 10;
  const repos = accountRepos(db, () => now++);
  const u = await repos.users.create('u');
  const v = await repos.users.create('v');
  const k1 = await repos.apiKeys.insert({ id: 'k1', userId: u.id, name: 'ci', secretHash: 'aa', scopes: ['assets:read', 'assets:write'] });
  const k2 = await repos.apiKeys.insert({ id: 'k2', userId: v.id, name: '', secretHash: 'bb', scopes: [] });
  t.same(k1, { id: 'k1', userId: u.id, name: 'ci', secretHash: 'aa', scopes: ['assets:read', 'assets:write'], createdAt: 12 });
  t.same(await repos.apiKeys.get('k1'), k1);
  t.equal(await repos.apiKeys.get('nope'), undefined);
  t.same(await repos.apiKeys.list(), [k1, k2]);
  t.same(await repos.apiKeys.list(v.id), [k2]);
  t.same(await repos.apiKeys.list('nobody'), []);
  await t.rejects(repos.apiKeys.insert({ id: 'k1', userId: u.id, name: '', secretHash: 'x', scopes: [] }), { name: 'ConstraintError', reason: 'duplicate' });
  await t.rejects(repos.apiKeys.insert({ id: 'k3', userId: 'ghost', name: '', secretHash: 'x', scopes: [] }), { name: 'ConstraintError', reason: 'in_use' });
  t.equal(await repos.apiKeys.delete('k1'), true);
  t.equal(await repos.apiKeys.delete('k1'), false);
  t.same(await repos.apiKeys.list(), [k2]);
});

stores.each('sessions: insert, get, touch, delete, per user, expiry', async (t, open) => {
  const repos = accountRepos(await open(t));
  const u = await repos.users.create('u');
  const v = await repos.users.create('v');
  const s = (tokenHash: string, userId: string, createdAt: number, lastSeenAt: number) => ({ tokenHash, userId, csrfToken: `csrf-${tokenHash}`, createdAt, lastSeenAt });
  await repos.sessions.insert(s('h1', u.id, 100, 100));
  await repos.sessions.insert(s('h2', u.id, 200, 900));
  await repos.sessions.insert(s('h3', v.id, 300, 300));
  t.same(await repos.sessions.get('h1'), s('h1', u.id, 100, 100));
  t.equal(await repos.sessions.get('nope'), undefined);
  await repos.sessions.touch('h1', 1000);
  t.equal((await repos.sessions.get('h1'))?.lastSeenAt, 1000);
  await repos.sessions.touch('nope', 1000);
  // Idle at or before 300, or created at or before 150: h3 (idle), and nothing else.
  t.equal(await repos.sessions.deleteExpired(300, 50), 1);
  t.equal(await repos.sessions.get('h3'), undefined);
  t.equal(await repos.sessions.deleteExpired(0, 150), 1, 'h1: created too long ago, however recently seen');
  t.equal(await repos.sessions.get('h1'), undefined);
  await repos.sessions.insert(s('h4', u.id, 400, 400));
  await repos.sessions.insert(s('h5', v.id, 400, 400));
  t.equal(await repos.sessions.deleteForUser(u.id), 2);
  t.equal(await repos.sessions.deleteForUser(u.id), 0);
  t.ok(await repos.sessions.get('h5'), "another user's session stays");
  t.equal(await repos.sessions.delete('h5'), true);
  t.equal(await repos.sessions.delete('h5'), false);
  await t.rejects(repos.sessions.insert(s('h6', 'ghost', 1, 1)), 'a session of no user is refused');
});

stores.each('settings: get, set (upsert), delete; the server record and its clean stop', async (t, open) => {
  const repos = accountRepos(await open(t));
  t.equal(await repos.settings.get('x'), undefined);
  await repos.settings.set('x', '1');
  await repos.settings.set('x', '2');
  t.equal(await repos.settings.get('x'), '2');
  t.equal(await repos.settings.delete('x'), true);
  t.equal(await repos.settings.delete('x'), false);
  t.equal(await repos.settings.get('x'), undefined);

  t.equal(await repos.settings.serverEndpoints(), undefined);
  const mine = { s3: 'http://127.0.0.1:9000', s3Tls: null, cdn: 'http://127.0.0.1:9001', region: 'us-east-1', host: 'h', pid: 42, startedAt: 5, processStart: '77' };
  await repos.settings.setServerEndpoints(mine);
  t.same(await repos.settings.serverEndpoints(), { ...mine, stoppedAt: null });
  t.equal(await repos.settings.markServerStopped(mine, 99), true);
  t.same(await repos.settings.serverEndpoints(), { ...mine, stoppedAt: 99 });
  t.equal(await repos.settings.markServerStopped(mine, 100), false, 'no longer the record written: a later stop changes nothing');
  const later = { ...mine, pid: 43 };
  await repos.settings.setServerEndpoints(later);
  t.equal(await repos.settings.markServerStopped(mine, 101), false, "another server's record is left alone");
  t.same(await repos.settings.serverEndpoints(), { ...later, stoppedAt: null });
  await repos.settings.set('server.endpoints', '{"s3": 1}');
  t.equal(await repos.settings.serverEndpoints(), undefined, 'a record without its endpoints is none');
  await repos.settings.set('server.endpoints', 'not json');
  t.equal(await repos.settings.serverEndpoints(), undefined);
});

stores.each('spaces: ensure creates once (named after the user), status changes keep suspendedAt', async (t, open) => {
  let now = 500;
  const repos = accountRepos(await open(t), () => now);
  const u = await repos.users.create('ana');
  t.equal(await repos.spaces.get(u.id), undefined, 'none before first use');
  const space = await repos.spaces.ensure(u.id);
  t.match(space, { userId: u.id, name: 'ana', status: 'active', suspendedAt: null, createdAt: 500 });
  t.same(await repos.spaces.ensure(u.id), space, 'the same space again');
  t.same(await repos.spaces.get(u.id), space);
  now = 600;
  const suspended = await repos.spaces.setStatus(u.id, 'suspended');
  t.same(suspended, { ...space, status: 'suspended', suspendedAt: 600 });
  now = 700;
  t.same(await repos.spaces.setStatus(u.id, 'suspended'), suspended, 'suspending again keeps the first time');
  t.same(await repos.spaces.setStatus(u.id, 'active'), { ...space, status: 'active', suspendedAt: null });
  const v = await repos.users.create('bo');
  t.match(await repos.spaces.setStatus(v.id, 'suspended'), { name: 'bo', status: 'suspended', suspendedAt: 700 }, 'created on first use, then suspended');
  await t.rejects(repos.spaces.ensure('ghost'), /no user ghost/);
});

stores.each('usage events: record, newest first by event time, since a time, totals', async (t, open) => {
  let now = 5000;
  const repos = accountRepos(await open(t), () => now);
  const user = await repos.users.create('ana');
  const other = await repos.users.create('bo');
  const event = (eventType: 'upload' | 'download' | 'delete', bytes: number, userId = user.id) => ({
    userId, assetId: 'a1', eventType, source: 'api' as const, bytes, hostname: 'h', statusCode: 200, metadata: { key: 'a1/f' },
  });
  t.same(await repos.usage.totals(user.id), { uploadedBytes: 0, downloadedBytes: 0 });
  const up = await repos.usage.record(event('upload', 100), 1000);
  t.match(up, { id: /^[0-9a-f]{32}$/, userId: user.id, eventType: 'upload', bytes: 100, country: '', clientIp: '', createdAt: 1000 });
  await repos.usage.record(event('delete', 0), 3000);
  // Written after the delete, as a batched flush does, but it happened before it.
  await repos.usage.record({ ...event('download', 40), source: 'cdn', country: 'NG', clientIp: '10.0.0.1' }, 2000);
  const atNow = await repos.usage.record(event('download', 2)); // now: 5000
  await repos.usage.record(event('upload', 7, other.id), 1500);
  t.equal(atNow.createdAt, 5000, 'createdAt defaults to the clock');
  const recent = await repos.usage.recent(user.id, 10);
  t.same(recent.map((e) => [e.eventType, e.createdAt]), [['download', 5000], ['delete', 3000], ['download', 2000], ['upload', 1000]]);
  t.same(recent[0], atNow, 'read back as written');
  t.match(recent[2], { source: 'cdn', country: 'NG', clientIp: '10.0.0.1', metadata: { key: 'a1/f' } });
  t.same((await repos.usage.recent(user.id, 1)).map((e) => e.createdAt), [5000], 'the limit applies after the order');
  t.same((await repos.usage.since(user.id, 'download', 2000)).map((e) => e.createdAt), [2000, 5000], 'at or after, oldest written first');
  t.same((await repos.usage.since(user.id, 'download', 2001)).map((e) => e.createdAt), [5000]);
  t.same(await repos.usage.since(user.id, 'upload', 1001), []);
  t.same(await repos.usage.totals(user.id), { uploadedBytes: 100, downloadedBytes: 42 });
  t.same(await repos.usage.totals(other.id), { uploadedBytes: 7, downloadedBytes: 0 });

  // Pages of a window, newest first by event time, after a cursor; by type; by UTC day.
  const q = { fromMs: 0, toMs: 10_000, after: null, limit: 2 };
  const first = await repos.usage.page(user.id, q);
  t.same(first.map((r) => r.event.createdAt), [5000, 3000]);
  const second = await repos.usage.page(user.id, { ...q, after: first[1]!.position });
  t.same(second.map((r) => r.event.createdAt), [2000, 1000], 'the next page starts after the cursor');
  t.same(await repos.usage.page(user.id, { ...q, after: second[1]!.position }), []);
  t.same((await repos.usage.page(user.id, { ...q, limit: 10, eventType: 'download' })).map((r) => r.event.createdAt), [5000, 2000], 'one type');
  t.same((await repos.usage.page(user.id, { ...q, limit: 10, fromMs: 2000, toMs: 3000 })).map((r) => r.event.createdAt), [3000, 2000], 'both ends included');
  const day = 86_400_000;
  await repos.usage.record(event('upload', 9), day + 5);
  t.same((await repos.usage.daily(user.id, 0, 2 * day)).map((r) => [Number(r.day), r.eventType, Number(r.events), Number(r.bytes)]), [
    [0, 'delete', 1, 0], [0, 'download', 2, 42], [0, 'upload', 1, 100], [day, 'upload', 1, 9],
  ], 'by UTC day and type');
});

stores.each('credit ledger: append moves the balance in one step, grants are not usage, recent is newest first', async (t, open) => {
  let now = 1;
  const repos = accountRepos(await open(t), () => now++);
  const u = await repos.users.create('ana');
  t.same(await repos.credits.account(u.id), { userId: u.id, balanceMilli: 0, usedMilli: 0, grantedMonth: '', depletedAt: null }, 'no activity: a zero account');
  const grant = await repos.credits.append({ userId: u.id, assetId: '', eventType: 'grant', bytes: 0, rateMilli: 0, creditsMilli: -5000, metadata: { note: 'hi' } });
  t.match(grant, { eventType: 'grant', creditsMilli: -5000, balanceAfterMilli: 5000, metadata: { note: 'hi' } });
  const charge = await repos.credits.append({ userId: u.id, assetId: 'a1', eventType: 'upload', bytes: 10, rateMilli: 2000, creditsMilli: 2000, metadata: { key: 'a1/f' } });
  t.equal(charge.balanceAfterMilli, 3000);
  t.same(await repos.credits.account(u.id), { userId: u.id, balanceMilli: 3000, usedMilli: 2000, grantedMonth: '', depletedAt: null });
  await repos.credits.markGranted(u.id, '2026-11');
  t.equal((await repos.credits.account(u.id)).grantedMonth, '2026-11');
  const v = await repos.users.create('bo');
  await repos.credits.markGranted(v.id, '2026-12');
  t.same(await repos.credits.account(v.id), { userId: v.id, balanceMilli: 0, usedMilli: 0, grantedMonth: '2026-12', depletedAt: null }, 'marked before any entry');
  t.same(await repos.credits.recent(u.id, 10), [charge, grant]);
  t.same(await repos.credits.recent(u.id, 1), [charge]);
  t.same(await repos.credits.recent(v.id, 10), []);
  const pageOne = await repos.credits.page(u.id, { fromMs: 0, toMs: 1e12, after: null, limit: 1 });
  t.same(pageOne.map((r) => r.entry), [charge], 'a page of the ledger, newest first');
  t.same((await repos.credits.page(u.id, { fromMs: 0, toMs: 1e12, after: pageOne[0]!.position, limit: 5 })).map((r) => r.entry), [grant], 'and the next');
  t.same((await repos.credits.daily(u.id, 0, 1e12)).map((r) => [Number(r.day), Number(r.chargedMilli), Number(r.addedMilli)]), [[0, 2000, 5000]], 'charged and added by day');

  // Inside a transaction that fails, append leaves nothing behind.
  await t.rejects(repos.transact(async (r) => {
    await r.credits.append({ userId: u.id, assetId: '', eventType: 'grant', bytes: 0, rateMilli: 0, creditsMilli: -1, metadata: {} });
    throw new Error('rolled back');
  }), /rolled back/);
  t.equal((await repos.credits.account(u.id)).balanceMilli, 3000);
  t.equal((await repos.credits.recent(u.id, 10)).length, 2);
  await t.rejects(repos.credits.append({ userId: 'ghost', assetId: '', eventType: 'grant', bytes: 0, rateMilli: 0, creditsMilli: -1, metadata: {} }));
});

stores.each('credit reservations: live sums by holder heartbeat, never moving back, prune and forget', async (t, open) => {
  const repos = accountRepos(await open(t));
  const u = await repos.users.create('ana');
  const v = await repos.users.create('bo');
  const r = repos.creditReservations;
  await r.beat('h1', 1000);
  await r.beat('h2', 1000);
  await r.insert({ id: 'r1', userId: u.id, milli: 2000, holder: 'h1', createdAt: 1000 });
  await r.insert({ id: 'r2', userId: u.id, milli: 3000, holder: 'h2', createdAt: 1000 });
  await r.insert({ id: 'r3', userId: v.id, milli: 7000, holder: 'h1', createdAt: 1000 });
  await r.insert({ id: 'r4', userId: u.id, milli: 500, holder: 'never-beat', createdAt: 1000 });
  t.equal(await r.liveSum(u.id, 1000), 5000, 'holders seen at the cutoff count; a holder without a beat does not');
  t.equal(await r.liveSum(u.id, 1000, 'r2'), 2000, 'leaving one out');
  t.equal(await r.liveSum(u.id, 1001), 0, 'nobody seen since');
  t.equal(await r.liveSum('nobody', 0), 0);
  await r.beat('h2', 5000);
  await r.beat('h2', 4000);
  t.equal(await r.liveSum(u.id, 5000), 3000, 'a late beat does not move seen_at back');
  await r.prune(2000);
  t.equal(await r.liveSum(u.id, 0), 3000, "h1's reservations and the holderless one are gone");
  t.equal(await r.liveSum(v.id, 0), 0);
  await r.beat('h1', 6000);
  t.equal(await r.liveSum(v.id, 0), 0, 'a pruned holder that comes back has nothing');
  await r.delete('r2');
  await r.delete('r2');
  t.equal(await r.liveSum(u.id, 0), 0);
  await r.insert({ id: 'r5', userId: u.id, milli: 100, holder: 'h1', createdAt: 6000 });
  await t.rejects(r.insert({ id: 'r5', userId: u.id, milli: 100, holder: 'h1', createdAt: 6000 }), 'ids are unique');
  await t.rejects(r.insert({ id: 'r6', userId: u.id, milli: -1, holder: 'h1', createdAt: 6000 }), 'never negative');
  await r.forgetHolder('h1');
  t.equal(await r.liveSum(u.id, 0), 0, "a forgotten holder's reservation no longer counts");
});

/** Two gateway processes (stores) on one database, each with its credits service and clock. */
async function twoProcesses(t: Test, kind: 'sqlite' | 'postgres', over: Partial<CreditsConfig> = {}) {
  const [first, second] = await stores.pair(t, kind);
  const config = creditsConfig(over);
  const side = (exec: SqlExecutor) => {
    const repos = accountRepos(exec);
    const clock = { now: new Date('2026-11-21T12:00:00Z') };
    const credits = new CreditsService(repos, config, () => clock.now);
    t.teardown(() => credits.close());
    return { repos, clock, credits };
  };
  const a = side(first);
  const b = side(second);
  const userId = (await a.repos.users.create('ana')).id;
  return { a, b, userId, config };
}

/**
 * Runs `n` calls at once on PostgreSQL. On SQLite one after the other: two connections in one thread
 * cannot overlap transactions (the second BEGIN IMMEDIATE would block the thread the first needs to
 * finish); test/unit/credits.test.ts races two threads instead.
 */
async function inTurnOrAtOnce<T>(kind: 'sqlite' | 'postgres', n: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  if (kind === 'postgres') return Promise.all(Array.from({ length: n }, (_, i) => fn(i)));
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(await fn(i));
  return out;
}

for (const kind of ['sqlite', 'postgres'] as const) {
  t.test(`credits service [${kind}]`, async (t) => {
    t.test('two processes racing for one balance get exactly the affordable reservations; charges add up', async (t) => {
      const { a, b, userId } = await twoProcesses(t, kind);
      await a.credits.grant(userId, 20, 'test'); // 10 one-unit uploads of 2 credits
      const attempt = (i: number): Promise<unknown> => (i % 2 === 0 ? a : b).credits.reserveUpload(userId, 1000).catch((err: unknown) => err);
      const outcomes = await inTurnOrAtOnce(kind, 24, attempt);
      const taken = outcomes.filter((o): o is UploadReservation => !(o instanceof Error));
      const refused = outcomes.filter((o): o is Refusal => o instanceof Refusal);
      t.equal(taken.length, 10, '10 reserved between the two');
      t.equal(refused.length, 14, 'the rest refused, none failed otherwise');
      t.same(refused[0]?.extra, { requiredCredits: 2, balance: 20 });
      t.equal(await a.repos.creditReservations.liveSum(userId, 0), 20_000, 'the reservations add up to the balance, no more');
      for (const [i, r] of taken.entries()) {
        const side = i % 2 === 0 ? a : b;
        await side.repos.transact(async (tx) => {
          await r.charge(tx, 900, `asset${i}`, `asset${i}/f`);
        });
        await r.release();
      }
      const spent = await a.repos.credits.account(userId);
      const ledger = await b.repos.credits.recent(userId, 100);
      t.same(spent, { userId, balanceMilli: 0, usedMilli: 20_000, grantedMonth: '2026-11', depletedAt: ledger[0]?.createdAt }, 'all spent, never negative; at zero since the last charge');
      t.equal(await a.repos.creditReservations.liveSum(userId, 0), 0, 'no reservation left');
      t.same(ledger.slice(0, 10).map((e) => e.balanceAfterMilli), [0, 2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000, 18000]);
    });

    t.test('without a declared length: what is available bounds the file; refusals, charges above it, release twice', async (t) => {
      const { a, userId } = await twoProcesses(t, kind);
      await a.credits.grant(userId, 7, 'test'); // 3 units, 1 credit left over
      const r = await a.credits.reserveUpload(userId, undefined);
      t.equal(r.maxBytes, 3 * MIB);
      t.equal((await refusalOf(a.credits.reserveUpload(userId, 10))).kind, 'insufficient_credits', 'a second upload finds nothing left');
      t.same((await r.refusal(3 * MIB + 1)).extra, { requiredCredits: 8, balance: 7 });
      await t.rejects(a.repos.transact((tx) => r.charge(tx, 3 * MIB + 1, 'a', 'a/x')), Refusal, 'charging above the reservation is refused');
      const entry = await a.repos.transact((tx) => r.charge(tx, 2 * MIB, 'a', 'a/x'));
      t.match(entry, { eventType: 'upload', bytes: 2 * MIB, rateMilli: 2000, creditsMilli: 4000, balanceAfterMilli: 3000 });
      await r.release();
      await r.release();
      t.equal((await a.credits.reserveUpload(userId, 10)).maxBytes, MIB, 'released credits are available again');
    });

    t.test('a charge rolled back with its commit keeps the reservation until release', async (t) => {
      const { a, b, userId } = await twoProcesses(t, kind);
      await a.credits.grant(userId, 2, 'test');
      const r = await a.credits.reserveUpload(userId, 1000);
      await t.rejects(a.repos.transact(async (tx) => {
        await r.charge(tx, 1000, 'a', 'a/f');
        throw new Error('the commit failed');
      }), /the commit failed/);
      t.equal((await a.repos.credits.account(userId)).balanceMilli, 2000, 'nothing charged');
      t.equal((await refusalOf(b.credits.reserveUpload(userId, 1000))).kind, 'insufficient_credits', 'still reserved');
      await r.release();
      t.equal((await b.credits.reserveUpload(userId, 1000)).maxBytes, MIB, 'released');
    });

    t.test("a dead holder's reservations stop counting after a minute and are deleted; its late charge cannot overdraw", async (t) => {
      const { a, b, userId } = await twoProcesses(t, kind);
      await a.credits.grant(userId, 4, 'test'); // two units
      const stalled = await a.credits.reserveUpload(userId, undefined);
      t.equal(stalled.maxBytes, 2 * MIB);
      b.clock.now = new Date(a.clock.now.getTime() + HOLDER_TTL_MS - 1000);
      t.equal((await refusalOf(b.credits.reserveUpload(userId, 1000))).kind, 'insufficient_credits', 'a holder seen 59 s ago is alive');
      b.clock.now = new Date(a.clock.now.getTime() + HOLDER_TTL_MS + 1000);
      const r = await b.credits.reserveUpload(userId, 1000);
      t.equal(r.maxBytes, MIB, 'not seen for 61 s: its reservation no longer counts');
      t.equal(await a.repos.creditReservations.liveSum(userId, 0), 2000, 'and its row is gone: only the new reservation is left');
      const tooBig = await refusalOf(a.repos.transact((tx) => stalled.charge(tx, 2 * MIB, 'x', 'x/f')));
      t.equal(tooBig.kind, 'insufficient_credits', 'the stalled process finds its credits partly taken');
      await a.repos.transact((tx) => stalled.charge(tx, MIB, 'x', 'x/f'));
      await stalled.release();
      await b.repos.transact((tx) => r.charge(tx, MIB, 'y', 'y/f'));
      await r.release();
      t.equal((await a.repos.credits.account(userId)).balanceMilli, 0, 'exactly spent');
    });

    t.test('a process that stops cleanly forgets its holder; the monthly grant is given once per month', async (t) => {
      const { a, b, userId } = await twoProcesses(t, kind, { freeMonthlyCredits: 2 });
      await inTurnOrAtOnce(kind, 2, (i) => (i === 0 ? a : b).credits.ensureMonthlyGrant(userId));
      t.equal((await a.repos.credits.recent(userId, 10)).length, 1, 'one grant, whichever process gave it');
      await a.credits.reserveUpload(userId, 1000);
      t.equal((await refusalOf(b.credits.reserveUpload(userId, 1000))).kind, 'insufficient_credits');
      await a.credits.close();
      t.equal((await b.credits.reserveUpload(userId, 1000)).maxBytes, MIB);
      b.clock.now = new Date('2026-12-01T00:00:00Z');
      const state = await b.credits.state(userId, 3_000_000_000);
      t.match(state, { enabled: true, balance: 4, usedCredits: 0, projectedDailyStorageCredits: 1.5, freeMonthlyCredits: 2 }, 'December granted by the state read');
    });
  });
}
