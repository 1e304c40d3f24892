#!/usr/bin/env node
// Builds the dashboard (src/web/ui) into dist/web with esbuild: app.js and what it imports (preact,
// htm and uPlot from their packages included) bundled and minified, every page a chunk of its own that
// app.js loads when the page is first shown (code shared by pages in chunks of their own), the
// stylesheet with uPlot's in one file. Every file's name carries its content hash (so the server caches
// it for a year, immutable), and every file is written beside a gzip and a brotli copy that the server
// sends to browsers that accept them. index.html names the hashed entry files and preloads the
// overview's chunks, the page the dashboard opens on. Nothing is fetched from another origin at run time.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = fileURLToPath(new URL('..', import.meta.url));
const source = join(root, 'src/web/ui');
const out = join(root, 'dist/web');
const assets = join(out, 'assets');

rmSync(out, { recursive: true, force: true });
mkdirSync(assets, { recursive: true });

const result = await build({
  absWorkingDir: root,
  entryPoints: { app: join(source, 'app.js'), style: join(source, 'style.css') },
  outdir: assets,
  bundle: true,
  splitting: true,
  format: 'esm',
  minify: true,
  target: ['chrome111', 'firefox113', 'safari16.4'],
  entryNames: '[name]-[hash]',
  chunkNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});

const outputs = Object.entries(result.metafile.outputs).map(([path, o]) => ({ path, ...o, name: basename(path) }));
const fromEntry = (file) => {
  const found = outputs.find((o) => o.entryPoint && relative(root, join(root, o.entryPoint)) === relative(root, file) && !o.path.endsWith('.map'));
  if (!found) throw new Error(`esbuild wrote nothing for ${relative(root, file)}`);
  return found;
};
const app = fromEntry(join(source, 'app.js'));
const style = outputs.find((o) => o.entryPoint && o.entryPoint.endsWith('style.css') && o.path.endsWith('.css'));
if (!style) throw new Error('esbuild wrote no stylesheet for src/web/ui/style.css');

/** The chunk of a dynamically imported page and the chunks it imports, as index.html preloads them. */
function withImports(output, seen = new Set()) {
  if (seen.has(output.name)) return seen;
  seen.add(output.name);
  for (const i of output.imports) {
    if (i.kind !== 'import-statement') continue;
    const dep = outputs.find((o) => relative(root, join(root, o.path)) === relative(root, join(root, i.path)));
    if (dep) withImports(dep, seen);
  }
  return seen;
}
const overview = fromEntry(join(source, 'page-overview.js'));
const preload = [...withImports(overview)].filter((name) => name !== app.name);

const html = readFileSync(join(source, 'index.html'), 'utf8')
  .replace('{{style.css}}', `assets/${style.name}`)
  .replace('{{app.js}}', `assets/${app.name}`)
  .replace('{{preload}}', preload.map((name) => `<link rel="modulepreload" href="assets/${name}">`).join('\n'));
if (/\{\{/.test(html)) throw new Error(`index.html names a file the build does not make: ${html.match(/\{\{[^}]*\}\}/)[0]}`);
writeFileSync(join(out, 'index.html'), html);

// Precompressed copies: the server picks one by Accept-Encoding (@fastify/static preCompressed).
const compressible = [join(out, 'index.html'), ...readdirSync(assets).filter((f) => /\.(js|css)$/.test(f)).map((f) => join(assets, f))];
for (const file of compressible) {
  const body = readFileSync(file);
  writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
  writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }));
}
