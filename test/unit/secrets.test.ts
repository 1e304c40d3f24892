import t from 'tap';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { newAccessKeyId, newId, newSecretKey, newTimeOrderedId } from '../../src/db/ids.js';
import { decryptSecret, encryptSecret, loadMasterKey, parseMasterKey } from '../../src/auth/secrets.js';
import { ConfigError } from '../../src/config/load.js';
import { tempDir, testConfig } from '../helpers/temp-data.js';

const run = promisify(execFile);
const KEY = randomBytes(32);

t.test('encrypt/decrypt round trip with a fresh IV every time', async (t) => {
  for (const secret of ['', 'a', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'ünïcødé ✓'.repeat(20)]) {
    const a = encryptSecret(KEY, secret);
    const b = encryptSecret(KEY, secret);
    t.match(a, /^v1:[A-Za-z0-9+/]+=*$/);
    t.not(a, b, 'random IV: same plaintext, different envelope');
    t.equal(decryptSecret(KEY, a), secret);
    t.equal(decryptSecret(KEY, b), secret);
    // iv(12) + tag(16) + ciphertext(len)
    t.equal(Buffer.from(a.slice(3), 'base64').length, 28 + Buffer.byteLength(secret));
    if (secret.length > 3) t.notMatch(a, secret);
  }
});

t.test('decrypt refuses a wrong key, tampering and junk', async (t) => {
  const enc = encryptSecret(KEY, 'top secret');
  t.throws(() => decryptSecret(randomBytes(32), enc), /cannot decrypt/);
  const raw = Buffer.from(enc.slice(3), 'base64');
  for (const i of [0, 12, 28, raw.length - 1]) {
    const bad = Buffer.from(raw);
    bad[i] = (bad[i] ?? 0) ^ 1;
    t.throws(() => decryptSecret(KEY, 'v1:' + bad.toString('base64')), `byte ${i} flipped`);
  }
  t.throws(() => decryptSecret(KEY, 'v2:' + raw.toString('base64')), /format/);
  t.throws(() => decryptSecret(KEY, 'v1:AAAA'), /truncated/);
  t.throws(() => encryptSecret(randomBytes(16), 'x'), /32 bytes/);
});

t.test('parseMasterKey accepts 64 hex chars or base64 of 32 bytes, nothing else', async (t) => {
  const key = randomBytes(32);
  t.same(parseMasterKey(key.toString('hex')), key);
  t.same(parseMasterKey(key.toString('hex').toUpperCase()), key);
  t.same(parseMasterKey(key.toString('base64')), key);
  t.same(parseMasterKey(key.toString('base64url')), key);
  for (const bad of ['', 'abc', key.toString('hex').slice(2), randomBytes(31).toString('base64'), randomBytes(33).toString('base64'), 'z'.repeat(64)]) {
    t.throws(() => parseMasterKey(bad), new ConfigError('config: masterKey must be 32 bytes as hex or base64'), JSON.stringify(bad));
  }
});

t.test('loadMasterKey creates <dataDir>/master.key once, 32 bytes, mode 0600', async (t) => {
  const dir = tempDir(t);
  const config = testConfig({ dataDir: dir });
  const first = loadMasterKey(config);
  t.equal(first.length, 32);
  const file = join(dir, 'master.key');
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.same(readFileSync(file), first);
  t.same(loadMasterKey(config), first, 'second load reads the same key');
});

t.test('config.masterKey wins and no file is written', async (t) => {
  const dir = tempDir(t);
  const key = randomBytes(32);
  t.same(loadMasterKey(testConfig({ dataDir: dir, masterKey: key.toString('base64') })), key);
  t.throws(() => statSync(join(dir, 'master.key')), { code: 'ENOENT' });
  t.throws(() => loadMasterKey(testConfig({ dataDir: dir, masterKey: 'not-a-key' })), ConfigError);
});

t.test('a master.key of the wrong size is a ConfigError, not a silent new key', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'master.key'), randomBytes(40), { mode: 0o600 });
  t.throws(() => loadMasterKey(testConfig({ dataDir: dir })), ConfigError);
});

t.test('processes racing to create master.key all end up with the same key', async (t) => {
  const dir = tempDir(t);
  const secrets = fileURLToPath(new URL('../../src/auth/secrets.js', import.meta.url));
  const load = fileURLToPath(new URL('../../src/config/load.js', import.meta.url));
  const script = `
    const { loadMasterKey } = await import(${JSON.stringify(secrets)});
    const { loadConfig } = await import(${JSON.stringify(load)});
    process.stdout.write(loadMasterKey(loadConfig({ flags: { dataDir: ${JSON.stringify(dir)} }, env: {} })).toString('hex'));
  `;
  const outs = await Promise.all(
    Array.from({ length: 6 }, () => run(process.execPath, ['--input-type=module', '-e', script])),
  );
  const keys = new Set(outs.map((o) => o.stdout));
  t.equal(keys.size, 1, 'one key for everyone');
  t.equal(readFileSync(join(dir, 'master.key')).toString('hex'), [...keys][0]);
  t.equal(statSync(join(dir, 'master.key')).mode & 0o777, 0o600);
});

t.test('ids: formats and uniqueness', async (t) => {
  const ids = Array.from({ length: 2000 }, newAccessKeyId);
  t.same(ids.filter((id) => !/^SE[A-Z2-7]{18}$/.test(id)), [], 'every id is SE + 18 base32 chars');
  t.equal(new Set(ids).size, ids.length, 'no repeats');
  // Every base32 symbol shows up in the random part: the encoder is not stuck on a subset.
  t.equal(new Set(ids.map((id) => id.slice(2)).join('')).size, 32);
  const secret = newSecretKey();
  t.match(secret, /^[A-Za-z0-9_-]{40}$/);
  t.not(newSecretKey(), secret);
  t.match(newId(), /^[0-9a-f]{32}$/);
  t.not(newId(), newId());
});

t.test('time-ordered ids: the milliseconds, then 80 random bits, all distinct across refills of the random pool', async (t) => {
  const now = Date.parse('2026-12-02T03:00:00Z');
  const ids = Array.from({ length: 5000 }, (_, i) => newTimeOrderedId(now + i));
  for (const id of [ids[0], ids[409], ids[410], ids[4999]]) t.match(id, /^[0-9a-f]{32}$/);
  t.equal(ids[0]?.slice(0, 12), now.toString(16).padStart(12, '0'), 'the time first');
  t.same([...ids].sort(), ids, 'in time order');
  t.equal(new Set(ids.map((id) => id.slice(12))).size, ids.length, 'no random part twice');
});
