#!/usr/bin/env node
// Composition root: argv -> config -> context -> listen; SIGTERM/SIGINT -> drain -> close.
// Each command loads only its own modules: an admin command never pays for the server's imports.
const runServe = async (argv: string[]): Promise<number> => (await import('../src/cli/serve.js')).runServe(argv);
const runAdmin = async (argv: string[]): Promise<number> => (await import('../src/cli/admin.js')).runAdmin(argv);

const USAGE = `usage: s3edge <command> [options]

commands:
  serve                      start the gateway (default)
  users create|list|delete   accounts that own buckets
  account-keys create|list|delete
  buckets create|list|delete
  access-keys create|list|delete   bucket-scoped keys (read | read_write)

Run 's3edge serve --help' for server options.`;

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  if (command === undefined || command.startsWith('-')) return runServe(argv);
  if (command === 'serve') return runServe(argv.slice(1));
  if (command === 'help' || command === '--help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  return runAdmin(argv);
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`s3edge: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
