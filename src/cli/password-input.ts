// A password given to the admin CLI on standard input (`--password-stdin`, `users passwd`), never as
// an argument: arguments show in `ps` and shell history. The first line is the password (one trailing
// line break is not part of it), so `printf '%s\n' "$PW" | s3edge users passwd ana` works.
import { hashPassword, PasswordError } from '../auth/passwords.js';
import { AdminError } from './command.js';

/** Longest standard input read for a password. */
const MAX_INPUT_BYTES = 8192;

async function readStdin(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer | string>) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buf.length;
    if (size > MAX_INPUT_BYTES) throw new AdminError('InvalidPassword', `the password on standard input is over ${MAX_INPUT_BYTES} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The scrypt hash of the password on standard input; AdminError when there is none or it is refused. */
export async function passwordHashFromStdin(stream: NodeJS.ReadableStream & { isTTY?: boolean } = process.stdin): Promise<string> {
  if (stream.isTTY) throw new AdminError('NoPassword', 'give the password on standard input, e.g. printf \'%s\\n\' "$PASSWORD" | s3edge ...');
  const text = await readStdin(stream);
  const password = text.replace(/\r?\n$/, '');
  if (password === '') throw new AdminError('NoPassword', 'no password on standard input');
  try {
    return await hashPassword(password);
  } catch (err) {
    if (err instanceof PasswordError) throw new AdminError('InvalidPassword', err.message);
    throw err;
  }
}
