// `s3edge` followed by options instead of a command: --help and --version (with --json), a serve
// option given without `serve`, or a mistake, answered with the closest option that exists.
import { configFlags } from '../config/load.js';
import { GROUPS, isAdminGroup } from './commands.js';
import { mainHelp, mainHelpJson } from './help.js';
import { runningInfo, versionLine } from './version.js';
import { attachDashValues, closest, didYouMean, unknownOption } from './suggest.js';

/** The options `s3edge` itself takes, without a command. */
const TOP_LEVEL = ['--help', '-h', '--version', '--json'];

function dashed(name: string): string {
  return name.length === 1 ? `-${name}` : `--${name}`;
}

/** Runs `s3edge <options...>` (argv starts with an option); returns the exit code. */
export function runTopLevel(argv: readonly string[]): number {
  const json = argv.includes('--json');
  if (argv.every((a) => TOP_LEVEL.includes(a)) && argv.some((a) => a !== '--json')) {
    if (argv.includes('--help') || argv.includes('-h')) {
      process.stdout.write((json ? JSON.stringify(mainHelpJson()) : mainHelp()) + '\n');
    } else {
      process.stdout.write((json ? JSON.stringify(runningInfo()) : `s3edge ${versionLine()}`) + '\n');
    }
    return 0;
  }
  const valued = ['config', ...configFlags().keys()];
  const serveOptions = ['json', 'help', ...valued];
  const args = attachDashValues(argv, valued);
  const positionals: string[] = [];
  const options: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (!arg.startsWith('-')) positionals.push(arg);
    else if (arg.startsWith('--') && !arg.includes('=') && valued.includes(arg.slice(2)) && args[i + 1] !== undefined) options.push(arg, args[++i] as string);
    else options.push(arg);
  }
  const refuse = (line: string): number => {
    process.stderr.write(`s3edge: ${line}\nRun 's3edge --help' for the list of commands.\n`);
    return 2;
  };
  const command = positionals[0];
  if (command !== undefined && (command === 'serve' || isAdminGroup(command))) {
    return refuse(`options go after the command: s3edge ${[...positionals, ...options].join(' ')}`);
  }
  const unknown = unknownOption(args, serveOptions);
  if (unknown === undefined && command === undefined) {
    return refuse(`'${argv[0] ?? ''}' is an option, not a command. To start the server with it: s3edge serve ${argv.join(' ')}`);
  }
  if (unknown === undefined) return refuse(`unknown command '${command ?? ''}'.${didYouMean(command ?? '', ['serve', ...Object.keys(GROUPS), 'help'])}`);
  if (unknown === 'version') return refuse("'--version' takes no other options");
  const top = closest(unknown, ['help', 'version']);
  const serve = top === undefined ? closest(unknown, valued) : undefined;
  // A serve option mistyped: the whole command line, corrected, so that it runs as suggested.
  const corrected = (): string =>
    argv.map((a) => (a.replace(/^--?/, '').split('=')[0] === unknown ? a.replace(/^--?[^=]*/, `--${serve ?? ''}`) : a)).join(' ');
  const hint = top !== undefined ? ` Did you mean '--${top}'?` : serve !== undefined ? ` Did you mean 's3edge serve ${corrected()}'?` : '';
  return refuse(`unknown option '${dashed(unknown)}'.${hint}`);
}
