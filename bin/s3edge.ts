#!/usr/bin/env node
// Composition root: argv -> config -> context -> listen; SIGTERM/SIGINT -> drain -> close.
// Each command loads only its own modules: an admin command never pays for the server's imports.
const runServe = async (argv: string[]): Promise<number> => (await import('../src/cli/serve.js')).runServe(argv);
const runAdmin = async (argv: string[]): Promise<number> => (await import('../src/cli/admin.js')).runAdmin(argv);
const help = async () => import('../src/cli/help.js');

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // A bare `s3edge` explains itself; starting a server (and creating ./data) takes `s3edge serve`.
  if (command === undefined || command === '--help' || command === '-h' || (command === 'help' && rest.length === 0)) {
    process.stdout.write((await help()).mainHelp() + '\n');
    return 0;
  }
  if (command === '--version' || command === 'version') {
    process.stdout.write(`s3edge ${(await help()).version()}\n`);
    return 0;
  }
  // `s3edge help access-keys create` is `s3edge access-keys create --help`.
  if (command === 'help') return main([...rest, '--help']);
  if (command === 'serve') return runServe(rest);
  if (command.startsWith('-')) {
    process.stderr.write(`s3edge: '${command}' is an option, not a command. To start the server with it: s3edge serve ${argv.join(' ')}\n`);
    process.stderr.write("Run 's3edge --help' for the list of commands.\n");
    return 2;
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
