#!/usr/bin/env node
// How fast the dashboard's overview appears, in Debian's chromium (headless, playwright-core) against a
// real `s3edge serve` on loopback: the first contentful paint and the moment the overview's figures are
// on screen, cold (a new browser profile: nothing cached) and warm (the same profile again: the hashed
// files come from the browser's cache), and the JavaScript the overview loads, compressed as sent.
// Run after `npm run build`: node bench/dashboard-paint.mjs [--rounds N] [--out FILE]
// (default bench/RESULTS-dashboard.md). Issue 34's aims: JS <= 120 kB compressed, first paint <= 0.5 s warm.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '10' }, out: { type: 'string' } } });
const rounds = Number(values.rounds);
const out = values.out ?? join(root, 'bench/RESULTS-dashboard.md');
const BIN = join(root, 'dist/bin/s3edge.js');
const PASSWORD = 'dashboard paint bench';

const freePort = () => new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function run(args, input) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`s3edge ${args.join(' ')}: exit ${code}: ${err}`))));
    child.stdin.end(input ?? '');
  });
}

const dataDir = mkdtempSync(join(tmpdir(), 's3edge-dashboard-bench-'));
const [port, cdnPort] = [await freePort(), await freePort()];
const server = spawn(process.execPath, [BIN, 'serve', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(port), '--cdn-port', String(cdnPort), '--json', '--workers', '1'], { stdio: 'ignore' });
const base = `http://127.0.0.1:${port}`;
let browser;
try {
  for (let i = 0; ; i++) {
    const ok = await fetch(`${base}/healthz`).then((r) => r.ok, () => false);
    if (ok) break;
    if (i > 300) throw new Error('s3edge did not answer /healthz within 30 s');
    await sleep(100);
  }
  await run(['users', 'create', 'bench', '--data-dir', dataDir]);
  await run(['users', 'passwd', 'bench', '--data-dir', dataDir], `${PASSWORD}\n`);

  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic', ...(process.getuid?.() === 0 ? ['--no-sandbox'] : [])],
  });

  /** One load of the overview in `context`: ms from navigation to first paint and to the figures. */
  async function load(context) {
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/#/overview`);
    await page.locator('.stat-value').first().waitFor();
    const filled = await page.evaluate(() => performance.now());
    const figures = await page.evaluate(async (filled) => {
      // The paint entry can reach the timeline after the page's own work: wait for it (a while at most).
      const fcp = await new Promise((resolve) => {
        new PerformanceObserver((list) => {
          const e = list.getEntriesByName('first-contentful-paint')[0];
          if (e) resolve(e.startTime);
        }).observe({ type: 'paint', buffered: true });
        setTimeout(() => resolve(NaN), 3000);
      });
      const js = performance.getEntriesByType('resource').filter((r) => new URL(r.name).pathname.endsWith('.js'));
      const nav = performance.getEntriesByType('navigation')[0];
      return { fcp, filled, jsBytes: js.reduce((n, r) => n + r.encodedBodySize, 0), jsFiles: js.map((r) => r.name.replace(/^.*\//, '')), htmlBytes: nav?.encodedBodySize ?? 0 };
    }, filled);
    await page.close();
    return figures;
  }

  const cold = [];
  const warm = [];
  for (let r = 0; r < rounds; r++) {
    // Cold: a new profile has the session cookie (signed in through the API) but nothing cached.
    const context = await browser.newContext();
    const session = await fetch(`${base}/dashboard/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench', password: PASSWORD }) });
    const cookie = /s3edge_session=([^;]+)/.exec(session.headers.get('set-cookie') ?? '')?.[1];
    if (!cookie) throw new Error(`sign-in failed: ${session.status}`);
    await context.addCookies([{ name: 's3edge_session', value: cookie, url: base }]);
    cold.push(await load(context));
    warm.push(await load(context));
    await context.close();
  }

  const span = (xs) => {
    const ok = xs.filter(Number.isFinite);
    const missing = xs.length - ok.length;
    return ok.length ? `${Math.round(median(ok))} | ${Math.round(Math.min(...ok))}-${Math.round(Math.max(...ok))}${missing ? ` (${missing} without a paint entry)` : ''}` : '– | –';
  };
  const row = (label, xs) => `| ${label} | ${span(xs.map((x) => x.fcp))} | ${span(xs.map((x) => x.filled))} |`;
  const first = cold[0];
  const text = `# The dashboard's overview: first paint and bytes (issue 34)

Machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}) · node ${process.version} · ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC · 1-minute load at the end ${loadavg()[0].toFixed(2)}

Run: \`node bench/dashboard-paint.mjs --rounds ${rounds}\` (bench/dashboard-paint.mjs): \`s3edge serve --workers 1\` on loopback, Debian's
chromium headless (playwright-core), signed in by the session cookie; each round a new browser profile
loads \`/dashboard/#/overview\` (cold: nothing cached) and then loads it again (warm: the hashed files from
the browser's cache, index.html revalidated). Times are ms from the navigation's start: the first
contentful paint (the browser's \`first-contentful-paint\`), and the overview filled (its figures on screen).

| load | first paint, median ms | min-max | overview filled, median ms | min-max |
|---|---:|---:|---:|---:|
${row('cold', cold)}
${row('warm', warm)}

JavaScript the overview loads (cold, as sent: brotli): **${(first.jsBytes / 1000).toFixed(1)} kB** in ${first.jsFiles.length} files (${first.jsFiles.join(', ')}); index.html ${first.htmlBytes} bytes.
Aims (issue 34): JavaScript ≤ 120 kB compressed: ${first.jsBytes <= 120_000 ? 'met' : '**missed**'}; first paint ≤ 500 ms warm: ${median(warm.map((x) => x.fcp).filter(Number.isFinite)) <= 500 ? 'met' : '**missed**'}.
`;
  writeFileSync(out, text);
  process.stdout.write(text);
} finally {
  await browser?.close();
  server.kill('SIGINT');
  await new Promise((r) => server.once('exit', r));
  rmSync(dataDir, { recursive: true, force: true });
}
