// `npm test` runs this before tap: the end-to-end suites drive real clients, and a machine without one
// of them would otherwise answer with a wall of failures. It prints one line naming what is missing
// and the command that installs it, and exits 1; with everything present it prints nothing.
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';

export interface Tool {
  /** What the line names. */
  name: string;
  /** A command that exits 0 when the tool is usable. */
  probe: [string, ...string[]];
  /** How to install it: a Debian package, or another command. */
  apt?: string;
  other?: string;
}

export const TEST_TOOLS: readonly Tool[] = [
  { name: 'curl', probe: ['curl', '--version'], apt: 'curl' },
  { name: 'openssl', probe: ['openssl', 'version'], apt: 'openssl' },
  { name: 'rclone', probe: ['rclone', 'version'], apt: 'rclone' },
  { name: 's3cmd', probe: ['s3cmd', '--version'], apt: 's3cmd' },
  { name: 'restic', probe: ['restic', 'version'], apt: 'restic' },
  { name: 'python3', probe: ['python3', '--version'], apt: 'python3' },
  { name: 'aws', probe: ['aws', '--version'], other: 'pip install awscli' },
  { name: 'boto3', probe: ['python3', '-c', 'import boto3'], other: 'pip install boto3' },
  { name: 'moto', probe: ['python3', '-c', 'import moto.server'], other: "pip install 'moto[server]'" },
  // The OpenAPI document's second validator (test/unit/openapi.test.ts).
  { name: 'openapi-spec-validator', probe: ['python3', '-c', 'import openapi_spec_validator'], other: 'pip install openapi-spec-validator' },
  // The dashboard's browser tests drive Debian's chromium through playwright-core (never a downloaded browser).
  { name: 'chromium', probe: ['chromium', '--version'], apt: 'chromium' },
  // The PostgreSQL tests start Debian's server themselves (test/helpers/postgres.ts): its initdb, on PATH or where Debian puts it.
  { name: 'PostgreSQL', probe: ['sh', '-c', 'command -v initdb || ls /usr/lib/postgresql/*/bin/initdb'], apt: 'postgresql' },
  // bench's --scale --load wrk, whose smoke run is in test/e2e/bench-smoke.test.ts (`wrk -v` exits 1, hence command -v).
  { name: 'wrk', probe: ['sh', '-c', 'command -v wrk'], apt: 'wrk' },
  // Let's Encrypt's test CA, which the ACME (issue 38) tests issue certificates from (test/helpers/pebble.ts).
  { name: 'pebble', probe: ['sh', '-c', 'command -v pebble'], apt: 'pebble' },
];

function usable(tool: Tool, env: NodeJS.ProcessEnv): boolean {
  const [cmd, ...args] = tool.probe;
  const r = spawnSync(cmd, args, { env, stdio: 'ignore', timeout: 30_000 });
  return r.error === undefined && r.status === 0;
}

/** The one line for what is missing, or undefined when nothing is. */
export function missingToolsLine(tools: readonly Tool[], env: NodeJS.ProcessEnv = process.env): string | undefined {
  const missing = tools.filter((tool) => !usable(tool, env));
  if (missing.length === 0) return undefined;
  const apt = missing.flatMap((m) => (m.apt ? [m.apt] : []));
  const installs = [...(apt.length > 0 ? [`sudo apt-get install -y ${apt.join(' ')}`] : []), ...missing.flatMap((m) => (m.other ? [m.other] : []))];
  return `npm test needs ${missing.map((m) => m.name).join(', ')}, which this machine lacks: install with ${installs.join(' && ')}`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const line = missingToolsLine(TEST_TOOLS);
  if (line !== undefined) {
    process.stderr.write(`${line}\n`);
    process.exitCode = 1;
  }
}
