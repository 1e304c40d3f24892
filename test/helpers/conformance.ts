// Shared pieces of the client conformance suite (test/e2e/conformance-*.test.ts): big deterministic
// files written fast, file hashes, directory trees, multipart ETags, and child processes that never
// throw (a failing client is a result to assert on, not an exception).
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Safety net against a hung client; not an assertion. Default 240 s. */
  timeoutMs?: number;
  input?: string;
}

/** Run a program; resolves with its exit code and output whatever happens. */
export function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(
      cmd,
      args,
      { env: opts.env, cwd: opts.cwd, maxBuffer: 64 * 1024 * 1024, timeout: opts.timeoutMs ?? 240_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        const note = err && typeof err.code !== 'number' ? `\n[run: ${err.message}]` : '';
        resolve({ code, stdout, stderr: stderr + note });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

/** Run a program and hash its stdout as it streams (for downloads too big to buffer). */
export function runHashingStdout(cmd: string, args: string[], opts: RunOptions = {}): Promise<RunResult & { sha256: string; bytes: number }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env: opts.env, cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const hash = createHash('sha256');
    let bytes = 0;
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      bytes += d.length;
      hash.update(d);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => {
      stderr += d;
      if (stderr.length > 1024 * 1024) stderr = stderr.slice(-1024 * 1024);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 240_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout: '', stderr, sha256: hash.digest('hex'), bytes });
    });
    child.on('error', (err) => {
      stderr += `\n[spawn: ${err.message}]`;
    });
  });
}

/** Did the command succeed? A message with its output when not, for t.ok/t.equal. */
export function describeRun(what: string, r: RunResult): string {
  return r.code === 0 ? `${what}: exit 0` : `${what}: exit 0 (got ${r.code})\nstdout: ${r.stdout.slice(-3000)}\nstderr: ${r.stderr.slice(-5000)}`;
}

export interface FileDigest {
  size: number;
  sha256: string;
  md5: string;
}

const SEGMENT = 64 * 1024;
const BLOCK = 1024 * 1024;

/**
 * Write `size` bytes of incompressible, position-stamped data: one random 1 MiB block per file,
 * repeated, with every 64 KiB segment's first 8 bytes replaced by its segment number, so no two
 * segments are equal and a misplaced or repeated part changes the digest. Fast (no per-byte work).
 */
export async function writeBigFile(path: string, size: number): Promise<FileDigest> {
  await mkdir(dirname(path), { recursive: true });
  const base = randomBytes(BLOCK);
  const sha = createHash('sha256');
  const md5 = createHash('md5');
  const fh = await open(path, 'w');
  try {
    let segment = 0;
    for (let off = 0; off < size; off += BLOCK) {
      const n = Math.min(BLOCK, size - off);
      const block = Buffer.from(base.subarray(0, n));
      for (let s = 0; s < n; s += SEGMENT) {
        if (s + 8 <= n) block.writeBigUInt64BE(BigInt(segment), s);
        segment++;
      }
      sha.update(block);
      md5.update(block);
      await fh.write(block, 0, n);
    }
  } finally {
    await fh.close();
  }
  return { size, sha256: sha.digest('hex'), md5: md5.digest('hex') };
}

/** SHA-256 (hex) of a file, streamed; 'missing' when it cannot be read. */
export async function sha256File(path: string): Promise<string> {
  return new Promise((resolve) => {
    const hash = createHash('sha256');
    const s = createReadStream(path);
    s.on('data', (d) => hash.update(d));
    s.on('end', () => resolve(hash.digest('hex')));
    s.on('error', () => resolve('missing'));
  });
}

/** The S3 multipart ETag (quoted) of a file uploaded in parts of `partSize` bytes. */
export async function multipartEtagOfFile(path: string, partSize: number): Promise<string> {
  const md5s: Buffer[] = [];
  let current = createHash('md5');
  let inPart = 0;
  await new Promise<void>((resolve, reject) => {
    const s = createReadStream(path, { highWaterMark: 1024 * 1024 });
    s.on('data', (d) => {
      let buf = typeof d === 'string' ? Buffer.from(d) : d;
      while (buf.length > 0) {
        const take = Math.min(buf.length, partSize - inPart);
        current.update(buf.subarray(0, take));
        inPart += take;
        buf = buf.subarray(take);
        if (inPart === partSize) {
          md5s.push(current.digest());
          current = createHash('md5');
          inPart = 0;
        }
      }
    });
    s.on('end', () => resolve());
    s.on('error', reject);
  });
  if (inPart > 0) md5s.push(current.digest());
  return `"${createHash('md5').update(Buffer.concat(md5s)).digest('hex')}-${md5s.length}"`;
}

/** The S3 multipart ETag (quoted) of parts given in memory. */
export function multipartEtag(parts: Buffer[]): string {
  const md5s = parts.map((p) => createHash('md5').update(p).digest());
  return `"${createHash('md5').update(Buffer.concat(md5s)).digest('hex')}-${parts.length}"`;
}

/** Write a tree of small files: relative POSIX path -> bytes. */
export async function writeTree(dir: string, files: Record<string, Buffer>): Promise<void> {
  for (const [name, bytes] of Object.entries(files)) {
    const path = join(dir, ...name.split('/'));
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes);
  }
}

/** Every regular file under `dir`, as relative POSIX path -> SHA-256 (hex); sorted by path. */
export async function hashTree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string): Promise<void> => {
    const entries = await readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) out[relative(dir, p).split(sep).join('/')] = await sha256File(p);
    }
  };
  await walk(dir);
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** A sorted copy of string keys, in UTF-8 byte order as S3 lists them. */
export function s3Sorted(keys: Iterable<string>): string[] {
  return [...keys].sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

export interface CurlResult {
  status: number;
  headers: Record<string, string>;
  body: string;
  stderr: string;
}

/**
 * curl with the response headers parsed (lower-case names, repeats joined with ", ") and the body
 * written to `outFile` (also returned as text when small). Extra curl arguments go before the URL.
 */
export async function curl(url: string, outFile: string, extraArgs: string[] = [], caFile?: string): Promise<CurlResult> {
  const headerFile = `${outFile}.headers`;
  const args = ['-sS', '-o', outFile, '-D', headerFile, '-w', '%{http_code}'];
  if (caFile) args.push('--cacert', caFile);
  args.push(...extraArgs, url);
  const r = await run('curl', args, { timeoutMs: 120_000 });
  const rawHeaders = await readFile(headerFile, 'latin1').catch(() => '');
  // Only the last response's headers (curl writes a 100 Continue block first).
  const blocks = rawHeaders.split(/\r?\n\r?\n/).filter((b) => b.trim() !== '');
  const last = blocks[blocks.length - 1] ?? '';
  const headers: Record<string, string> = {};
  for (const line of last.split(/\r?\n/).slice(1)) {
    const idx = line.indexOf(':');
    if (idx < 0) continue;
    const name = line.slice(0, idx).trim().toLowerCase();
    const value = line.slice(idx + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const body = await readFile(outFile).catch(() => Buffer.alloc(0));
  return { status: Number(r.stdout.trim()), headers, body: body.length <= 1024 * 1024 ? body.toString('utf8') : '', stderr: r.stderr };
}

/** Object-like view of unknown JSON. */
export function asRecord(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

export function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
