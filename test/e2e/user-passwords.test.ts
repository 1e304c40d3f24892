// Dashboard passwords from the admin CLI, given on standard input, never as arguments: users create
// --password-stdin and users passwd store a scrypt hash (never the password), refuse weak or missing
// ones with one line (and then create no user), and users list says who has one.
import t from 'tap';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/open.js';
import { verifyPassword } from '../../src/auth/passwords.js';
import { childProcessEnv, nodeCommand } from '../helpers/child-env.js';
import { S3EDGE_BIN } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-data.js';

const dataDir = join(tempDir(t), 'data');

/** `s3edge <args> --data-dir DIR --json` with `input` on standard input. */
function cli(args: string[], input: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(...nodeCommand([S3EDGE_BIN, ...args, '--data-dir', dataDir, '--json']), { env: childProcessEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(input);
  });
}

function storedHash(name: string): string | undefined {
  const db = openDatabase(join(dataDir, 'meta.db'));
  try {
    const row = db.prepare('SELECT password_hash FROM users WHERE name = ?').get(name) as { password_hash: string | null } | undefined;
    return row?.password_hash ?? undefined;
  } finally {
    db.close();
  }
}

const PASSWORD = 'a long enough passphrase';

t.test('users create --password-stdin stores a hash that verifies, never the password', async (t) => {
  const r = await cli(['users', 'create', 'ana', '--password-stdin'], `${PASSWORD}\n`);
  t.equal(r.code, 0, r.stderr);
  t.match(JSON.parse(r.stdout), { name: 'ana', hasPassword: true });
  t.notOk(r.stdout.includes(PASSWORD) || r.stderr.includes(PASSWORD), 'the password is not printed');
  const hash = storedHash('ana');
  t.ok(hash?.startsWith('scrypt$'));
  t.equal(await verifyPassword(PASSWORD, hash ?? ''), true, 'the trailing line break is not part of it');
});

t.test('a refused or missing password creates no user', async (t) => {
  const short = await cli(['users', 'create', 'bo', '--password-stdin'], 'short\n');
  t.equal(short.code, 1);
  t.match(short.stderr, /at least 12 characters/);
  t.notOk(short.stderr.includes('short\n'), 'the refused password is not echoed');
  const none = await cli(['users', 'create', 'bo', '--password-stdin'], '');
  t.equal(none.code, 1);
  t.match(none.stderr, /no password on standard input/);
  t.equal(storedHash('bo'), undefined);
  const list = JSON.parse((await cli(['users', 'list'], '')).stdout) as { name: string }[];
  t.notOk(list.some((u) => u.name === 'bo'), 'no user bo');
});

t.test('users passwd replaces the password; users list says who has one', async (t) => {
  t.equal((await cli(['users', 'create', 'cy'], '')).code, 0);
  let list = JSON.parse((await cli(['users', 'list'], '')).stdout) as { name: string; hasPassword: boolean }[];
  t.same(list.map((u) => [u.name, u.hasPassword]), [['ana', true], ['cy', false]]);
  const r = await cli(['users', 'passwd', 'cy'], 'another long passphrase\r\n');
  t.equal(r.code, 0, r.stderr);
  t.equal(await verifyPassword('another long passphrase', storedHash('cy') ?? ''), true);
  const again = await cli(['users', 'passwd', 'ana'], 'a brand new passphrase\n');
  t.equal(again.code, 0);
  t.equal(await verifyPassword(PASSWORD, storedHash('ana') ?? ''), false, 'the old one no longer works');
  list = JSON.parse((await cli(['users', 'list'], '')).stdout) as { name: string; hasPassword: boolean }[];
  t.same(list.map((u) => [u.name, u.hasPassword]), [['ana', true], ['cy', true]]);
  const nobody = await cli(['users', 'passwd', 'nobody'], 'a long enough passphrase\n');
  t.equal(nobody.code, 1);
  t.match(nobody.stderr, /no user named 'nobody'/);
  const tooShort = await cli(['users', 'passwd', 'cy'], 'tiny\n');
  t.equal(tooShort.code, 1);
  t.equal(await verifyPassword('another long passphrase', storedHash('cy') ?? ''), true, 'a refused one changes nothing');
});
