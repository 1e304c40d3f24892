// `s3edge serve`: start the gateway with config from defaults, env and flags; print where it listens.
import { parseArgs } from 'node:util';
import { configFlags, ConfigError, loadConfig } from '../config/load.js';
import { createContext } from '../context.js';
import { startServer } from '../server.js';

function help(flags: Iterable<string>): string {
  return `usage: s3edge serve [--json] [--config FILE] ${[...flags].map((f) => `[--${f} VALUE]`).join(' ')}

Every option is also an environment variable: --data-dir is S3EDGE_DATA_DIR, --tls-port is S3EDGE_TLS_PORT.
Root credentials come from S3EDGE_ROOT_ACCESS_KEY / S3EDGE_ROOT_SECRET_KEY, or are generated once and
printed on the first start only.`;
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

export async function runServe(argv: string[]): Promise<number> {
  const flagMap = configFlags();
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
    process.stderr.write(`s3edge serve: ${(err as Error).message}\n${help(flagMap.keys())}\n`);
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

  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await server.close();
  await ctx.close();
  return 0;
}
