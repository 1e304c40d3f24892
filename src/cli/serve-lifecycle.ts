// What every way of serving shares (one process, or a cluster's supervisor and workers): how many
// workers, the start message, what a failed start says, and the stop signals.
import { isPostgresUrl, redactUrl } from '../db/pg/url.js';
import { availableParallelism, constants as osConstants } from 'node:os';
import { dirname, resolve } from 'node:path';
import { isSea } from 'node:sea';
import { ConfigError } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { AppContext } from '../context.js';

const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

/** Serving processes: `workers`, or one per core when it is 0. */
export function workerCount(config: Config): number {
  return config.workers === 0 ? availableParallelism() : config.workers;
}

/** Where the server listens, as every serving process reports it (a cluster's workers to their supervisor). */
export interface Listening {
  s3: string;
  s3Tls: string | null;
  /** The CDN listener, null when the CDN is Host-routed on the S3 port. */
  cdn: string | null;
  /** The base of CDN URLs. */
  cdnBase: string;
}

/**
 * A server whose stdout reader went away (`s3edge serve | head`, a log collector that died) goes on
 * serving and stops on its signals: the start message, written to a closed pipe, fails with EPIPE,
 * which unhandled would end the process (and a cluster's supervisor then hung in its log's last flush).
 * The log lines are dropped the same way by the log destination.
 */
export function keepServingWithoutStdout(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}

/** The start message: one JSON line (--json) or a few readable lines; the root secret only when generated now. */
export function announce(json: boolean, config: Config, root: AppContext['root'], workers: number, at: Listening): void {
  if (json) {
    process.stdout.write(
      JSON.stringify({
        event: 'listening',
        s3: at.s3,
        s3Tls: at.s3Tls,
        cdn: at.cdn,
        cdnBase: at.cdnBase,
        dashboard: config.dashboard.enabled ? `${at.s3}/dashboard/` : null,
        region: config.region,
        workers,
        metadata: isPostgresUrl(config.metadata) ? 'postgres' : 'sqlite',
        ...(root.generated ? { rootCredentials: { accessKeyId: root.accessKeyId, secretAccessKey: root.secretAccessKey } } : {}),
      }) + '\n',
    );
    return;
  }
  const lines = [
    's3edge is running',
    `  S3 endpoint:      ${at.s3}`,
    ...(at.s3Tls ? [`  S3 endpoint TLS:  ${at.s3Tls}`] : []),
    `  CDN:              ${at.cdnBase}${at.cdn ? ` (listening on ${at.cdn})` : ' (Host-routed on the S3 port)'}`,
    `  Region:           ${config.region}`,
    `  Data directory:   ${config.dataDir}`,
    `  Metadata:         ${isPostgresUrl(config.metadata) ? redactUrl(config.metadata) : 'SQLite (meta.db in the data directory)'}`,
    `  Workers:          ${workers}${workers > 1 ? ' processes and their supervisor' : ' process'} (--workers)`,
    ...(config.dashboard.enabled ? [`  Dashboard:        ${at.s3}/dashboard/`] : []),
    `  Admin commands:   ${adminCommand(config)}`,
    `  Root access key:  ${root.accessKeyId}`,
    ...(root.generated
      ? [`  Root secret key:  ${root.secretAccessKey}`, '  (the secret is shown only now: store it somewhere safe)']
      : []),
  ];
  process.stdout.write(lines.join('\n') + '\n');
}

/**
 * The command that runs s3edge as this process was started: the single binary's path; `npx s3edge` in the
 * package's folder (where npx finds its bin); else node and the script's path.
 */
export function commandName(script = process.argv[1], cwd = process.cwd()): string {
  if (isSea()) return process.execPath;
  if (script === undefined || resolve(cwd) === resolve(dirname(script), '..', '..')) return 'npx s3edge';
  return `node ${script}`;
}

/** How to run admin commands against this server: the command, and where its data is. */
function adminCommand(config: Config): string {
  const command = commandName();
  const where = isPostgresUrl(config.metadata) ? '--metadata <the same URL>' : `--data-dir ${config.dataDir}`;
  return `${command} help   (e.g. ${command} users create alice ${where})`;
}

const LISTEN_ERRORS = new Set(['EADDRINUSE', 'EACCES', 'EADDRNOTAVAIL']);

/** A failed start that is the operator's to fix: the line to print (without "s3edge: ") and the exit code. */
export interface StartupFailure {
  message: string;
  exitCode: number;
}

/** 2 for configuration, 1 for a listener that cannot be opened; undefined for anything else (a bug: rethrow it). */
export function describeStartupFailure(err: unknown): StartupFailure | undefined {
  if (err instanceof ConfigError) return { message: err.message, exitCode: 2 };
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== undefined && LISTEN_ERRORS.has(code)) return { message: `cannot listen: ${(err as Error).message}`, exitCode: 1 };
  return undefined;
}

/** A failed start as one line on stderr and its exit code; other errors are rethrown. */
export function startupFailure(err: unknown): number {
  const failure = describeStartupFailure(err);
  if (!failure) throw err;
  process.stderr.write(`s3edge: ${failure.message}\n`);
  return failure.exitCode;
}

/**
 * Resolves at the first SIGTERM or SIGINT. A second one calls `force` and exits at once, as 128 + its
 * number (the requests in flight are cut).
 */
export async function untilStopSignal(force: (signal: NodeJS.Signals) => void): Promise<void> {
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
    force(signal);
    process.exit(128 + (osConstants.signals[signal] ?? 0));
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  await signalled;
  // Still listening: a second signal during the drain is the forced exit above.
}
