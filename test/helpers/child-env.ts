import { fileURLToPath } from 'node:url';

/** The s3edge command the tests run, as built in dist/. */
export const S3EDGE_BIN = fileURLToPath(new URL('../../bin/s3edge.js', import.meta.url));

/**
 * The environment of a process a test starts (the CLI, the server, a shell running README lines):
 * none of the developer's S3EDGE_* settings, and none of tap's: tap's NODE_OPTIONS loads its
 * process-info hook into every node child, which doubles the start of each CLI command.
 */
export function childProcessEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(S3EDGE_|TAP|_TAPJS_)/.test(k) && k !== 'NODE_OPTIONS'));
}

/**
 * The command and arguments that run `node ARGS` without tap's process-info hook. That hook, loaded
 * into every test process, puts its NODE_OPTIONS back into each child's environment whatever
 * environment the spawn was given, and loading it doubles the start of every CLI command (0.5 s to
 * 1.1 s here); `env -u` takes it out just before node starts.
 */
export function nodeCommand(args: string[]): [string, string[]] {
  return ['/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, ...args]];
}

/**
 * The command that runs `s3edge ARGS`: node on dist/bin/s3edge.js (nodeCommand), or `executable` (the
 * single binary, test/e2e/binary.test.ts), also without NODE_OPTIONS: a SEA honours it like node does.
 */
export function s3edgeCommand(args: string[], executable?: string): [string, string[]] {
  return executable ? ['/usr/bin/env', ['-u', 'NODE_OPTIONS', executable, ...args]] : nodeCommand([S3EDGE_BIN, ...args]);
}
