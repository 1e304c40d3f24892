// Debian's chromium driven by playwright-core (headless), for the dashboard's browser tests. The flags
// keep it off the network it cannot reach here (background services, component updates).
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
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

export interface SignedInPage {
  page: Page;
  /** Console errors (not failed loads, which tests provoke) and uncaught page errors, as they come. */
  problems: string[];
  /** Navigates to a dashboard page (`assets`, `usage?x=y`) and waits for its title. */
  goTo(path: string): Promise<void>;
  /** The API through the page's session cookie, with the CSRF token from the session answer. */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
}

/** A new page of `browser` signed in to the dashboard as `name`, watching for script errors. */
export async function signedInPage(browser: Browser, server: RunningServer, name: string, password: string, options: BrowserContextOptions = {}): Promise<SignedInPage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto(`${server.url}/dashboard/`);
  await page.getByLabel('User name').fill(name);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('user-name').waitFor();
  return {
    page,
    problems,
    async goTo(path) {
      await page.goto(`${server.url}/dashboard/#/${path}`);
      await page.locator('#page-title').waitFor();
    },
    api(method, path, body) {
      return page.evaluate(async ({ method, path, body }) => {
        const session = (await (await fetch('/dashboard/session')).json()) as { csrfToken: string };
        const headers: Record<string, string> = { 'x-csrf-token': session.csrfToken };
        if (body !== undefined) headers['content-type'] = 'application/json';
        const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      }, { method, path, body });
    },
  };
}
