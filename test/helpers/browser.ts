// Debian's chromium driven by playwright-core (headless), for the dashboard's browser tests. The flags
// keep it off the network it cannot reach here (background services, component updates).
import { chromium, type Browser } from 'playwright-core';
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { childProcessEnv, nodeCommand } from './child-env.js';
import { S3EDGE_BIN, type RunningServer } from './server.js';

export const CHROMIUM = '/usr/bin/chromium';

/** `extraArgs`: more chromium flags (a host resolver rule that names loopback, say). */
export async function launchBrowser(extraArgs: string[] = []): Promise<Browser> {
  const args = ['--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic', ...extraArgs];
  // Chromium's sandbox needs user namespaces a root process may not have (CI runs as root).
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args });
}

/** Screenshots of the browser tests, kept after the run (test-artifacts/ at the repository root). */
export function artifactsDir(name: string): string {
  const dir = fileURLToPath(new URL(`../../../test-artifacts/${name}/`, import.meta.url));
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** `s3edge users passwd NAME` with the password on stdin, as an operator sets one. */
export function setPassword(server: RunningServer, name: string, password: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(...nodeCommand([S3EDGE_BIN, 'users', 'passwd', name, '--data-dir', server.dataDir]), { env: childProcessEnv(), stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`users passwd ${name}: exit ${code}: ${stderr}`))));
    child.stdin.end(`${password}\n`);
  });
}
