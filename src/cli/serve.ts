// `s3edge serve`: start the gateway with config from defaults, env and flags; print where it listens.
import { constants as osConstants } from 'node:os';
import { parseArgs } from 'node:util';
import { configFlags, ConfigError, loadConfig } from '../config/load.js';
import { createContext } from '../context.js';
import { startServer } from '../server.js';
import { attachDashValues, didYouMean, unknownOption } from './suggest.js';

const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

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

async function start(flags: Record<string, string>, configFile: string | undefined) {
  const config = loadConfig({ flags, configFile });
  const ctx = await createContext(config);
  try {
    return { config, ctx, server: await startServer(ctx) };
  } catch (err) {
    await ctx.close();
    throw err;
  }
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

  let started;
  try {
    started = await start(flags, values.config as string | undefined);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`s3edge: ${err.message}\n`);
      return 2;
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      process.stderr.write(`s3edge: cannot listen: ${(err as Error).message}\n`);
      return 1;
    }
    throw err;
  }
  const { config, ctx, server } = started;
  const root = ctx.root;
  if (values.json) {
    process.stdout.write(
      JSON.stringify({
        event: 'listening',
        s3: server.url,
        s3Tls: server.tlsUrl ?? null,
        cdn: server.cdnUrl ?? null,
        cdnBase: ctx.endpoints.cdn,
        region: config.region,
        ...(root.generated ? { rootCredentials: { accessKeyId: root.accessKeyId, secretAccessKey: root.secretAccessKey } } : {}),
      }) + '\n',
    );
  } else {
    const lines = [
      's3edge is running',
      `  S3 endpoint:      ${server.url}`,
      ...(server.tlsUrl ? [`  S3 endpoint TLS:  ${server.tlsUrl}`] : []),
      `  CDN:              ${ctx.endpoints.cdn}${server.cdnUrl ? ` (listening on ${server.cdnUrl})` : ' (Host-routed on the S3 port)'}`,
      `  Region:           ${config.region}`,
      `  Data directory:   ${config.dataDir}`,
      `  Root access key:  ${root.accessKeyId}`,
      ...(root.generated
        ? [`  Root secret key:  ${root.secretAccessKey}`, '  (the secret is shown only now: store it somewhere safe)']
        : []),
    ];
    process.stdout.write(lines.join('\n') + '\n');
  }

  // The first signal drains (server.close: requests in flight get shutdownGraceSeconds) and then closes
  // the context (request log flushed, database closed); a second one exits at once, as 128 + its number.
  let stopping = false;
  let stop!: () => void;
  const signalled = new Promise<void>((resolve) => (stop = resolve));
  const onSignal = (signal: NodeJS.Signals): void => {
    if (!stopping) {
      stopping = true;
      stop();
      return;
    }
    process.stderr.write(`s3edge: ${signal} again: exiting now, without waiting for the requests in flight\n`);
    process.exit(128 + (osConstants.signals[signal] ?? 0));
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  try {
    await signalled;
    await server.close();
    await ctx.close();
  } finally {
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  }
  return 0;
}
