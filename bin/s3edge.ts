#!/usr/bin/env node
// Composition root: argv -> config -> context -> listen; SIGTERM/SIGINT -> drain -> close.
// Each command loads only its own modules: an admin command never pays for the server's imports.
import { useCompileCache } from '../src/cli/compile-cache.js';

const runServe = async (argv: string[]): Promise<number> => (await import('../src/cli/serve.js')).runServe(argv);
const runAdmin = async (argv: string[]): Promise<number> => (await import('../src/cli/admin.js')).runAdmin(argv);
const help = async () => import('../src/cli/help.js');
const versionLine = async (): Promise<string> => (await import('../src/cli/version.js')).versionLine();
const runTopLevel = async (argv: string[]): Promise<number> => (await import('../src/cli/top-level.js')).runTopLevel(argv);

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // A bare `s3edge` explains itself; starting a server (and creating ./data) takes `s3edge serve`.
  if (command === undefined || (command === 'help' && rest.length === 0)) {
    process.stdout.write((await help()).mainHelp() + '\n');
    return 0;
  }
  if (command === 'version') {
    process.stdout.write(`s3edge ${await versionLine()}\n`);
    return 0;
  }
  // `s3edge help access-keys create` is `s3edge access-keys create --help`; `s3edge help --json` is `s3edge --help --json`.
  if (command === 'help') return rest.every((a) => a.startsWith('-')) ? runTopLevel(['--help', ...rest]) : main([...rest, '--help']);
  if (command === 'serve') return runServe(rest);
  // --help, --version, a serve option without `serve`, or a mistyped option.
  if (command.startsWith('-')) return runTopLevel(argv);
  return runAdmin(argv);
}

// Before any of them is loaded: they are compiled from the cache when an earlier command left them there.
useCompileCache();
main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`s3edge: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
