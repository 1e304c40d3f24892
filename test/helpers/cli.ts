// The real CLI (`node dist/bin/s3edge.js ...`) as a child process, and what a user sees of it.
import type { Test } from 'tap';
import { spawn } from 'node:child_process';
import { childProcessEnv, s3edgeCommand } from './child-env.js';

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `s3edge ARGS` in `baseEnv` (childProcessEnv()) with `extraEnv` over it; `executable` instead of
 * node on dist/bin/s3edge.js. Never rejects for a non-zero exit.
 */
export function runS3edge(
  args: string[],
  extraEnv: Record<string, string> = {},
  cwd?: string,
  baseEnv: NodeJS.ProcessEnv = childProcessEnv(),
  executable?: string,
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(...s3edgeCommand(args, executable), { env: { ...baseEnv, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'], ...(cwd ? { cwd } : {}) });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** stdout is exactly `{"error":{"code","message"}}` and stderr's first line says the same message. */
export function assertErrorJson(t: Test, r: ProcessResult, code: string, what: string): void {
  const body = JSON.parse(r.stdout) as { error: { code: string; message: string } };
  t.same(Object.keys(body), ['error'], `${what}: JSON error object`);
  t.same(Object.keys(body.error).sort(), ['code', 'message'], `${what}: code and message`);
  t.equal(body.error.code, code, `${what}: code ${code}`);
  t.equal(r.stderr.split('\n')[0], `s3edge: ${body.error.message}`, `${what}: same message on stderr`);
}

/** No stack frames, no source paths, no internal error names in what a user sees. */
export function assertClean(t: Test, r: ProcessResult, what: string): void {
  const all = r.stdout + r.stderr;
  t.notMatch(all, /\n\s+at .+:\d+/, `${what}: no stack trace`);
  t.notMatch(all, /\.(js|ts):\d+/, `${what}: no source locations`);
  t.notMatch(all, /node_modules|dist\/src|SqliteError|TypeError|ReferenceError/, `${what}: no internals`);
}
