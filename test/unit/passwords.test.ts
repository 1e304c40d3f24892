// Account passwords: scrypt with a salt per password, parameters in the stored form, verification in
// constant time; refused passwords; stored forms this module cannot read never verify.
import t from 'tap';
import { hashPassword, MIN_PASSWORD_LENGTH, PasswordError, passwordProblem, verifyPassword } from '../../src/auth/passwords.js';

const GOOD = 'correct horse battery staple';

t.test('a stored password verifies; another does not; two hashes of one password differ', async (t) => {
  const stored = await hashPassword(GOOD);
  t.match(stored, /^scrypt\$15\$8\$3\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  t.notOk(stored.includes(GOOD));
  t.equal(await verifyPassword(GOOD, stored), true);
  t.equal(await verifyPassword(`${GOOD}!`, stored), false);
  t.equal(await verifyPassword('', stored), false);
  t.not(await hashPassword(GOOD), stored, 'a fresh salt each time');
  // NFKC: the same password typed with a composed or a decomposed accent.
  const accented = await hashPassword('caf\u00e9 au lait, black');
  t.equal(await verifyPassword('cafe\u0301 au lait, black', accented), true);
});

t.test('stored forms that cannot be read never verify', async (t) => {
  const stored = await hashPassword(GOOD);
  const parts = stored.split('$');
  const variants = [
    '',
    'plain',
    stored.replace(/^scrypt/, 'bcrypt'),
    [...parts.slice(0, 5), ''].join('$'),
    [...parts.slice(0, 4), '', parts[5]].join('$'),
    [parts[0], '40', ...parts.slice(2)].join('$'), // N = 2^40: refused, not attempted
    [parts[0], 'x', ...parts.slice(2)].join('$'),
    `${stored}$extra`,
  ];
  for (const v of variants) t.equal(await verifyPassword(GOOD, v), false, JSON.stringify(v));
});

t.test('refused passwords', async (t) => {
  t.equal(passwordProblem(GOOD), undefined);
  t.match(passwordProblem('x'.repeat(MIN_PASSWORD_LENGTH - 1)), /at least 12 characters/);
  t.match(passwordProblem('x'.repeat(1025)), /at most 1024/);
  t.match(passwordProblem('two\nlines of text'), /no control characters/);
  await t.rejects(hashPassword('short'), PasswordError);
});
