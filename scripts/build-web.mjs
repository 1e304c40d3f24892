#!/usr/bin/env node
// Builds the dashboard (src/web/ui) into dist/web: every script and style gets its content hash in its
// name (so the server can cache it for a year, immutable), imports between our modules are rewritten
// to the hashed names, and the vendored libraries (preact + htm, uPlot) are copied from node_modules:
// nothing is fetched at run time and there is no bundler.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const source = join(root, 'src/web/ui');
const out = join(root, 'dist/web');

/** Names our modules import, served from node_modules. */
const VENDOR = {
  'preact-htm.js': 'node_modules/htm/preact/standalone.module.js',
  'uplot.js': 'node_modules/uplot/dist/uPlot.esm.js',
  'uplot.css': 'node_modules/uplot/dist/uPlot.min.css',
};

const files = new Map();
for (const name of readdirSync(source)) if (/\.(js|css)$/.test(name)) files.set(name, readFileSync(join(source, name), 'utf8'));
for (const [name, path] of Object.entries(VENDOR)) files.set(name, readFileSync(join(root, path), 'utf8'));

const IMPORT = /(\bfrom\s*|\bimport\s*\(?\s*)(['"])\.\/([^'"]+)\2/g;
const hashed = new Map();

/** The hashed name of `name`, after its own imports got theirs (modules form no cycles here). */
function build(name, trail = []) {
  if (hashed.has(name)) return hashed.get(name);
  if (trail.includes(name)) throw new Error(`import cycle: ${[...trail, name].join(' -> ')}`);
  const text = files.get(name);
  if (text === undefined) throw new Error(`${trail.at(-1) ?? 'index.html'} imports ./${name}, which src/web/ui does not have`);
  const body = name.endsWith('.js') ? text.replace(IMPORT, (_m, head, q, dep) => `${head}${q}./${build(dep, [...trail, name])}${q}`) : text;
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 10);
  const final = name.replace(/\.(js|css)$/, `.${hash}.$1`);
  writeFileSync(join(out, 'assets', final), body);
  hashed.set(name, final);
  return final;
}

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });
// index.html names its entry points as {{app.js}}, {{style.css}}.
const html = readFileSync(join(source, 'index.html'), 'utf8').replace(/\{\{([\w.-]+)\}\}/g, (_m, name) => `assets/${build(name)}`);
writeFileSync(join(out, 'index.html'), html);
