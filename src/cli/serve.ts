// `s3edge serve`: start the gateway with config from defaults, env and flags; print where it listens.
import cluster from 'node:cluster';
import { parseArgs } from 'node:util';
import { configFlags, ConfigError, loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { AppContext } from '../context.js';
import type { RunningServer } from '../server.js';
import { announce, keepServingWithoutStdout, startupFailure, untilStopSignal, workerCount } from './serve-lifecycle.js';
import { saveCompileCache } from './compile-cache.js';
import { attachDashValues, didYouMean, unknownOption } from './suggest.js';

/** Columns of `all settings` in the help: flag names wrapped to about 100 characters a line. */
function wrapped(words: string[], width = 100): string[] {
  const lines: string[] = [];
  let line = '';
  for (const w of words) {
    if (line && line.length + 1 + w.length > width) {
      lines.push(line);
      line = '';
    }
    line = line ? `${line} ${w}` : w;
  }
  if (line) lines.push(line);
  return lines.map((l) => `  ${l}`);
}

function help(flags: Iterable<string>): string {
  return [
    'usage: s3edge serve [options]',
    '',
    'Starts the gateway: the S3 API and the management API (/api/v3, /storage) on --port, the CDN on',
    '--cdn-port and on --port for requests whose Host is the CDN hostname. Stop it with Ctrl-C or SIGTERM:',
    'requests in flight get --shutdown-grace-seconds (30s) to finish; a second signal exits at once.',
    '',
    'Main options (each is also an environment variable: --data-dir is S3EDGE_DATA_DIR):',
    '  --data-dir DIR              metadata (meta.db), object bytes and master.key; default ./data',
    '  --host ADDR                 interface to listen on; default 127.0.0.1 (0.0.0.0 serves other machines)',
    '  --port N                    S3 and management API port; default 9000, 0 picks a free one',
    '  --public-url URL            the S3 endpoint given to clients, e.g. behind a reverse proxy',
    '  --cdn-port N                the CDN listener; default 9080 (null: Host-routed on --port only)',
    '  --tls-port N --tls-cert FILE --tls-key FILE   an HTTPS listener beside HTTP',
    '  --storage-backend disk|s3   where object bytes live (s3: an upstream bucket, docs/upstream.md)',
    '  --workers N                 serving processes; default 0: one per core (docs/SCALE.md); 1: one process',
    "  --metadata sqlite|URL       where the metadata lives; default sqlite (meta.db). A postgres:// URL puts",
    "                              this node on that database, beside others (docs/DEPLOYMENT.md)",
    '  --config FILE               a JSON file with any settings of config/default.json',
    '  --json                      print one JSON line with the endpoints instead of text',
    '',
    'Every setting of config/default.json is an option:',
    ...wrapped([...flags].map((f) => `--${f}`)),
    '',
    'Sizes take units (256MiB, 10GB, 4096), durations too (30s, 5m, 12h, 7d; a bare number is the',
    "setting's own unit), header names any case. Root credentials come from S3EDGE_ROOT_ACCESS_KEY /",
    'S3EDGE_ROOT_SECRET_KEY, or are generated once and printed on the first start only.',
    '',
    'example: s3edge serve --data-dir /var/lib/s3edge --host 0.0.0.0 --public-url https://s3.example.com',
  ].join('\n');
}

export async function runServe(rawArgv: string[]): Promise<number> {
  const flagMap = configFlags();
  const argv = attachDashValues(rawArgv, ['config', ...flagMap.keys()]);
  const unknown = unknownOption(argv, ['json', 'help', 'config', ...flagMap.keys()]);
  if (unknown !== undefined) {
    const hint = didYouMean(unknown, ['json', 'help', 'config', ...flagMap.keys()], (f) => `--${f}`);
    process.stderr.write(`s3edge serve: unknown option '--${unknown}'.${hint}\nRun 's3edge serve --help' for the options.\n`);
    return 2;
  }
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        config: { type: 'string' },
        ...Object.fromEntries([...flagMap.keys()].map((f) => [f, { type: 'string' as const }])),
      },
    }));
  } catch (err) {
    process.stderr.write(`s3edge serve: ${(err as Error).message}\nRun 's3edge serve --help' for the options.\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(help(flagMap.keys()) + '\n');
    return 0;
  }
  const flags: Record<string, string> = {};
  for (const [flag, path] of flagMap) if (typeof values[flag] === 'string') flags[path] = values[flag] as string;

  let config: Config;
  try {
    config = loadConfig({ flags, configFile: values.config as string | undefined });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`s3edge: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const json = Boolean(values.json);
  keepServingWithoutStdout();
  // Each role loads only its own modules: a supervisor never loads the serving code.
  if (cluster.isWorker) return (await import('./serve-worker.js')).runWorker(config);
  const workers = workerCount(config);
  return workers > 1 ? (await import('./serve-supervisor.js')).runSupervisor(config, workers, json) : runSingle(config, json);
}

/** `--workers 1`: this one process serves and runs the background jobs. */
async function runSingle(config: Config, json: boolean): Promise<number> {
  const [{ createContext }, { startServer }] = await Promise.all([import('../context.js'), import('../server.js')]);
  let ctx: AppContext | undefined;
  let server: RunningServer;
  // The first signal drains (server.close: requests in flight get shutdownGraceSeconds) and then closes
  // the context (request log flushed, database closed); a second one exits at once, as 128 + its number.
  // Heard from before the first listener opens: whoever sees it answer may stop the server at once (a
  // stop during the start takes effect once the listeners are up).
  let stopped: Promise<void> | undefined;
  try {
    ctx = await createContext(config);
    stopped = untilStopSignal(() => undefined);
    server = await startServer(ctx);
  } catch (err) {
    await ctx?.close();
    return startupFailure(err);
  }
  // Before the start message: once it is out, the next start finds these modules cached.
  saveCompileCache();
  announce(json, config, ctx.root, 1, {
    s3: server.url,
    s3Tls: server.tlsUrl ?? null,
    cdn: server.cdnUrl ?? null,
    cdnBase: ctx.endpoints.cdn,
  });
  await stopped;
  await server.close();
  await ctx.close();
  return 0;
}
