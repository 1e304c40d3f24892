// Admin commands (users, keys, buckets, spaces, credits, scrub, metadata, domains, projects) against a
// data directory: parses the command line against the command table (commands.ts), opens the data
// directory, runs the command and prints its result (output.ts). Safe to run while the server uses the
// same directory: SQLite WAL + busy_timeout serialise the writes.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { configFlags, ConfigError, givenExplicitly, loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { Repos } from '../db/repos/index.js';
import { S3Error } from '../errors/s3-errors.js';
import { NoDataDirError, openDataDir } from '../db/data-dir.js';
import { isRunning } from '../server-record.js';
import { attachDashValues, didYouMean, unknownOption } from './suggest.js';
import { AdminError, FailedResult, type Command, type ServerView } from './command.js';
import { COMMAND_FLAGS, COMMANDS, isAdminGroup } from './commands.js';
import { mainHelp, usage } from './help.js';
import { fail, printResult } from './output.js';

type Values = Record<string, string | boolean | undefined>;

/** Bad invocation: exit code 2, one line plus usage. */
class UsageError extends Error {
  constructor(
    message: string,
    /** The group (and command) whose usage to print; none: the command list. */
    readonly group?: string,
    readonly action?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The command flags that take a value. */
const VALUED_FLAGS = Object.entries(COMMAND_FLAGS).flatMap(([name, o]) => (o.type === 'string' ? [name] : []));

/** Options every admin command takes besides its own. */
const COMMON_OPTIONS = ['json', 'help', 'config'] as const;

/**
 * What this data directory's server looks like from here: the configured publicUrl, else the endpoint
 * the server recorded when it last started (never a guess from host and port, which is wrong whenever
 * the server runs with other flags or on port 0), and whether that server still runs.
 */
async function serverView(config: Config, repos: Repos, regionGiven: boolean): Promise<ServerView> {
  const recorded = await repos.settings.serverEndpoints();
  const region = regionGiven ? config.region : (recorded?.region ?? config.region);
  if (config.publicUrl !== '') return { endpoint: config.publicUrl, endpointStatus: 'configured', region };
  if (!recorded) return { endpoint: null, endpointStatus: 'unknown', region };
  const running = isRunning(recorded);
  return { endpoint: recorded.s3, endpointStatus: running === undefined ? 'unverified' : running ? 'running' : 'not-running', region };
}

interface Parsed {
  group: string;
  action: string;
  cmd: Command;
  values: Values;
  args: Record<string, string>;
}

interface Help {
  help: true;
  group?: string;
  action?: string;
}

function parse(rawArgv: string[]): Parsed | Help {
  const configOptions = Object.fromEntries([...configFlags().keys()].map((f) => [f, { type: 'string' as const }]));
  const argv = attachDashValues(rawArgv, ['config', ...Object.keys(configOptions), ...VALUED_FLAGS]);
  const [first, second] = argv.filter((a) => !a.startsWith('-'));
  const ownFlags = first !== undefined && second !== undefined ? (COMMANDS[first]?.[second]?.flags ?? []) : [];
  const unknown = unknownOption(argv, [...COMMON_OPTIONS, ...Object.keys(configOptions), ...Object.keys(COMMAND_FLAGS)]);
  if (unknown !== undefined) {
    // Suggest the command's own options first: they are what a typo most likely meant.
    const hint = didYouMean(unknown, ownFlags, (f) => `--${f}`) || didYouMean(unknown, [...COMMON_OPTIONS, ...Object.keys(configOptions)], (f) => `--${f}`);
    throw new UsageError(`Unknown option '--${unknown}'.${hint}`, first, second);
  }
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: {
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        config: { type: 'string' },
        ...configOptions,
        ...COMMAND_FLAGS,
      },
    }));
  } catch (err) {
    const message = ((err as Error).message.split('\n')[0] ?? '').replace(/\. To specify a positional argument.*$/, '');
    throw new UsageError(message || 'invalid arguments', first, second);
  }
  const [group, action, ...rest] = positionals;
  const actions = group === undefined ? undefined : COMMANDS[group];
  if (!actions) {
    if (values.help && group === undefined) return { help: true };
    if (group === undefined) throw new UsageError('missing command');
    throw new UsageError(`unknown command '${group}'.${didYouMean(group, [...Object.keys(COMMANDS), 'serve', 'help'])}`);
  }
  if (values.help && (action === undefined || actions[action])) return { help: true, group, ...(action !== undefined ? { action } : {}) };
  const cmd = action === undefined ? undefined : actions[action];
  if (!cmd) {
    if (action === undefined) throw new UsageError(`missing ${group} action: one of ${Object.keys(actions).join(', ')}`, group);
    throw new UsageError(`unknown command '${group} ${action}'.${didYouMean(action, Object.keys(actions), (a) => `${group} ${a}`)}`, group);
  }
  const where = `${group} ${action as string}`;
  for (const flag of Object.keys(COMMAND_FLAGS)) {
    if (values[flag] !== undefined && !cmd.flags.includes(flag)) throw new UsageError(`'${where}' does not take --${flag}`, group, action);
  }
  if (values['token-only'] === true && values.json === true) {
    throw new UsageError(`'${where}': --token-only prints the token alone, --json the whole key: give one of them`, group, action);
  }
  for (const flag of cmd.required ?? []) {
    if (values[flag] === undefined || values[flag] === '') throw new UsageError(`'${where}' requires --${flag}`, group, action);
  }
  if (rest.length < cmd.args.length) throw new UsageError(`'${where}' requires ${cmd.args.slice(rest.length).join(' ')}`, group, action);
  if (rest.length > cmd.args.length) throw new UsageError(`'${where}': unexpected argument '${rest[cmd.args.length] ?? ''}'`, group, action);
  const args = Object.fromEntries(cmd.args.map((name, i) => [name, rest[i] as string]));
  for (const [name, value] of Object.entries(args)) {
    if (value === '') throw new UsageError(`'${where}': ${name} must not be empty`, group, action);
  }
  return { group: group as string, action: action as string, cmd, values, args };
}

/** Runs one admin command; returns the process exit code (0 ok, 1 failed operation, 2 usage or config error). */
export async function runAdmin(argv: string[]): Promise<number> {
  const json = argv.includes('--json');
  let parsed: Parsed | Help;
  try {
    parsed = parse(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    fail(json, 'UsageError', err.message);
    process.stderr.write((err.group !== undefined && isAdminGroup(err.group) ? usage(err.group, err.action) : "Run 's3edge --help' for the list of commands.") + '\n');
    return 2;
  }
  if ('help' in parsed) {
    process.stdout.write((parsed.group === undefined ? mainHelp() : usage(parsed.group, parsed.action)) + '\n');
    return 0;
  }

  const { group, cmd, values, args } = parsed;
  const flagMap = configFlags();
  const configValues: Record<string, string> = {};
  for (const [flag, path] of flagMap) {
    const v = values[flag];
    if (typeof v === 'string') configValues[path] = v;
  }
  const flags: Record<string, string | undefined> = {};
  for (const flag of cmd.flags) {
    const v = values[flag];
    // A switch (boolean flag) given reads as 'true'.
    flags[flag] = typeof v === 'string' ? v : v === true ? 'true' : undefined;
  }

  let dataDir: Awaited<ReturnType<typeof openDataDir>> | undefined;
  try {
    const sources = { flags: configValues, ...(typeof values.config === 'string' ? { configFile: values.config } : {}) };
    const config = loadConfig(sources);
    // The metadata commands move this data directory's meta.db as a whole (to the `metadata` database
    // when it names one); every other command works on the metadata store the servers use.
    const source = group === 'metadata' ? { ...config, metadata: 'sqlite' } : config;
    dataDir = await openDataDir(source, { mustExist: cmd.initialises !== true });
    const { repos } = dataDir;
    const server = (): Promise<ServerView> => serverView(config, repos, givenExplicitly('region', sources));
    if (dataDir.created) process.stderr.write(`s3edge: created a new data directory at ${resolve(config.dataDir)} (no server has used it yet)\n`);
    const returned: unknown = await cmd.run({ config, repos, ...(dataDir.db ? { db: dataDir.db } : {}), masterKey: dataDir.masterKey, args, flags, server });
    const result = returned instanceof FailedResult ? returned.result : returned;
    printResult(json, result);
    return returned instanceof FailedResult ? 1 : 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      fail(json, 'ConfigError', err.message);
      return 2;
    }
    if (err instanceof NoDataDirError) {
      fail(json, 'NoDataDir', err.message);
      return 2;
    }
    if (err instanceof AdminError || err instanceof S3Error) {
      fail(json, err.code, err.message);
      return 1;
    }
    const code = (err as { code?: unknown }).code;
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
      fail(json, 'Busy', 'the database is busy; try again');
      return 1;
    }
    fail(json, 'InternalError', `internal error: ${(err as Error).message ?? String(err)}`);
    return 1;
  } finally {
    await dataDir?.store.close();
  }
}
