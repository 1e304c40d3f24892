// Account passwords (the dashboard's sign-in): scrypt from node:crypto, memory-hard, with a random
// salt per password and the parameters stored beside the hash, so they can be raised later without
// breaking stored ones. Stored form: `scrypt$<log2 N>$<r>$<p>$<salt, base64url>$<hash, base64url>`.
// Only the hash is stored; a password is never logged, printed or kept.
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/** N = 2^15, r = 8, p = 3: one of OWASP's equivalent scrypt minimums (32 MiB per hash; 2^17 with p = 1 would take 128 MiB). */
const PARAMS = { log2N: 15, r: 8, p: 3 } as const;
const SALT_BYTES = 16;
const KEY_BYTES = 32;
/** Twice what N = 2^15, r = 8 needs (128 * N * r = 32 MiB), so node does not refuse it. */
const MAX_MEMORY = 64 * 1024 * 1024;

/** Shortest and longest password accepted (characters; NIST SP 800-63B asks for at least 8 and allows 64+). */
export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 1024;

export class PasswordError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PasswordError';
  }
}

/** Why a new password is refused, or undefined when it is acceptable. */
export function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) return `a password is at least ${MIN_PASSWORD_LENGTH} characters`;
  if (length > MAX_PASSWORD_LENGTH) return `a password is at most ${MAX_PASSWORD_LENGTH} characters`;
  if (/[\u0000-\u001f\u007f]/.test(password)) return 'a password has no control characters (a line break ends it)';
  return undefined;
}

function derive(password: string, salt: Buffer, log2N: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N: 2 ** log2N, r, p, maxmem: MAX_MEMORY };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_BYTES, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** The stored form of a new password; PasswordError when passwordProblem() refuses it. */
export async function hashPassword(password: string): Promise<string> {
  const problem = passwordProblem(password);
  if (problem) throw new PasswordError(problem);
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, PARAMS.log2N, PARAMS.r, PARAMS.p);
  return ['scrypt', PARAMS.log2N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Whether `password` is the one `stored` was made from; false for a stored form this module cannot read. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [log2N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![log2N, r, p].every((n) => Number.isInteger(n) && n > 0) || log2N > 20 || r > 32 || p > 16) return false;
  const salt = Buffer.from(parts[4] as string, 'base64url');
  const expected = Buffer.from(parts[5] as string, 'base64url');
  if (salt.length === 0 || expected.length !== KEY_BYTES || [...password].length > MAX_PASSWORD_LENGTH) return false;
  const key = await derive(password, salt, log2N, r, p);
  return timingSafeEqual(key, expected);
}
