// Secrets at rest: the 32-byte master key and AES-256-GCM envelopes for stored secret keys.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const PREFIX = 'v1:';
export const MASTER_KEY_FILE = 'master.key';

const BAD_KEY = 'config: masterKey must be 32 bytes as hex or base64';

/** Decodes config.masterKey: 64 hex characters, or base64 / base64url of exactly 32 bytes. */
export function parseMasterKey(value: string): Buffer {
  const v = value.trim();
  if (/^[0-9a-fA-F]{64}$/.test(v)) return Buffer.from(v, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(v)) {
    const key = Buffer.from(v, 'base64');
    if (key.length === KEY_BYTES) return key;
  }
  throw new ConfigError(BAD_KEY);
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Reads a key file that another process may be writing right now (created, not yet filled). */
function readKeyFile(file: string): Buffer {
  const deadline = performance.now() + 2000;
  for (;;) {
    let data: Buffer;
    try {
      data = readFileSync(file);
    } catch (err) {
      throw new ConfigError(`config: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    if (data.length === KEY_BYTES) return data;
    if (data.length > KEY_BYTES || performance.now() > deadline) {
      throw new ConfigError(`config: ${file} must hold exactly ${KEY_BYTES} bytes (found ${data.length})`);
    }
    sleepSync(10);
  }
}

/** Creates `file` with 32 random bytes, mode 0600 from the first instant; undefined if it already exists. */
function createKeyFile(file: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(file, 'wx', 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return undefined;
    throw new ConfigError(`config: cannot create ${file}: ${code ?? 'error'}`);
  }
  const key = randomBytes(KEY_BYTES);
  try {
    writeSync(fd, key, 0, KEY_BYTES, 0);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  // Losing this file loses every stored secret: make its directory entry durable too.
  try {
    const dirFd = openSync(dirname(file), 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  } catch {
    // Directory fsync is not supported everywhere; the file itself is synced.
  }
  return key;
}

/**
 * The master key that encrypts secrets at rest: config.masterKey if set, else `<dataDir>/master.key`,
 * created with 32 random bytes on first use. The data directory must exist.
 */
export function loadMasterKey(config: Config): Buffer {
  if (config.masterKey !== '') return parseMasterKey(config.masterKey);
  const file = join(config.dataDir, MASTER_KEY_FILE);
  return createKeyFile(file) ?? readKeyFile(file);
}

function checkKey(masterKey: Buffer): void {
  if (masterKey.length !== KEY_BYTES) throw new Error('secrets: master key must be 32 bytes');
}

/** AES-256-GCM with a random 12-byte IV: `v1:` + base64(iv | tag | ciphertext). */
export function encryptSecret(masterKey: Buffer, plaintext: string): string {
  checkKey(masterKey);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

/** Inverse of encryptSecret; throws when the envelope is malformed or was sealed with another key. */
export function decryptSecret(masterKey: Buffer, enc: string): string {
  checkKey(masterKey);
  if (!enc.startsWith(PREFIX)) throw new Error('secrets: unknown secret format');
  const raw = Buffer.from(enc.slice(PREFIX.length), 'base64');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('secrets: truncated secret');
  const decipher = createDecipheriv('aes-256-gcm', masterKey, raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new Error('secrets: cannot decrypt a stored secret (wrong master key?)');
  }
}
