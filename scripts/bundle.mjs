#!/usr/bin/env node
// The command's code as a few files (docs/ARCHITECTURE.md "Start"): after tsc, dist/bin/s3edge.js and
// everything it imports from src/ are bundled by esbuild into dist/src/bundle/ (one file per lazily
// loaded part: serve, the admin CLI, the management API, ...), and dist/bin/s3edge.js becomes a
// one-line import of it. Node's ES module loader resolving, reading, compiling and linking ~300 files
// one by one was most of a start; a few files cost a fraction of that.
//
// Packages stay imports of node_modules (their own files, patched ones included). The bundle lives two
// folders below dist/ like every module of src/, so paths made from import.meta.url (config/, dist/web/,
// the package root, the worker threads' files at ../<folder>/<file>.js) mean the same in both builds;
// the worker threads run the plain tsc output.
import { build } from 'esbuild';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const entry = 'dist/bin/s3edge.js';
// tsc's output of bin/s3edge.ts, kept beside the shim as the bundle's input (a second run without tsc
// bundles the same input again, never the shim).
const input = 'dist/bin/s3edge-main.js';
const SHIM =
  "#!/usr/bin/env node\n// The bundled command (scripts/bundle.mjs); tsc's build of bin/s3edge.ts is s3edge-main.js beside it.\nimport '../src/bundle/s3edge.js';\n";

const current = await readFile(`${root}/${entry}`, 'utf8').catch(() => undefined);
if (current === undefined) throw new Error(`${entry} is missing: run tsc first (npm run build)`);
if (current !== SHIM) {
  await rename(`${root}/${entry}`, `${root}/${input}`);
  await rename(`${root}/${entry}.map`, `${root}/${input}.map`).catch(() => undefined);
}

await rm(`${root}/dist/src/bundle`, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { s3edge: input },
  outdir: 'dist/src/bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  // No keepNames: it wraps every function made at run time, per-request closures included, in a
  // defineProperty of its name (1-4 a request on the S3 and proxy paths). Class names are what logs
  // show (constructor names): esbuild renames one only when two modules declare the same name, which
  // the check below refuses.
  keepNames: false,
  sourcemap: 'linked',
  logLevel: 'warning',
  chunkNames: 'chunk-[hash]',
});
await refuseRenamedClasses(`${root}/dist/src/bundle`);
await writeFile(`${root}/${entry}`, SHIM, { mode: 0o755 });

/** Fails the build when esbuild renamed a class to keep two apart (`Foo` and `Foo2`): rename one in src/. */
async function refuseRenamedClasses(dir) {
  const { readdir } = await import('node:fs/promises');
  const names = new Set();
  for (const file of await readdir(dir)) {
    if (!file.endsWith('.js')) continue;
    const text = await readFile(`${dir}/${file}`, 'utf8');
    for (const m of text.matchAll(/\bclass ([A-Za-z_$][\w$]*)|\b([A-Za-z_$][\w$]*) = class\b/g)) names.add(m[1] ?? m[2]);
  }
  const renamed = [...names].filter((n) => /\d$/.test(n) && names.has(n.replace(/\d+$/, '')));
  if (renamed.length > 0) throw new Error(`bundle: classes declared twice under one name, renamed by esbuild: ${renamed.join(', ')}; give them distinct names`);
}
