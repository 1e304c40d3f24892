#!/usr/bin/env node
// `npm run build:binary`: the single binary dist/s3edge-<platform>-<arch> (docs/RELEASE.md). It is this
// node's own executable with a Node SEA blob injected (postject): the main script is
// dist/src/sea/launcher.cjs and one asset carries the app tree (package.json, config/, dist/bin, dist/src,
// dist/web, production node_modules with their native addons), gzipped in a fixed order with no
// timestamps, so the same commit, lockfile and node give the same bytes. Run after `npm run build`.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));
const target = `${process.platform}-${process.arch}`;
const outFile = join(root, 'dist', `s3edge-${target}`);
const work = join(root, 'dist', 'binary-build');

// The other side of this format is src/sea/launcher.cts.
const MAGIC = 'S3EDGE-TREE-1\n';
const ENTRY = 'dist/bin/s3edge.js';
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

function fail(line) {
  process.stderr.write(`build-binary: ${line}\n`);
  process.exit(1);
}

/** Every file under `dir` (relative to the repo root, '/'-separated), symlinks not followed. */
function walk(dir, keep = () => true, out = []) {
  for (const d of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${d.name}`;
    if (d.isDirectory()) walk(rel, keep, out);
    else if (d.isFile() && keep(rel)) out.push(rel);
  }
  return out;
}

// ---- what goes into the tree

/** Compiled files whose source still exists: a stale dist/ from a deleted .ts must not ship. */
function compiled(dir) {
  return walk(`dist/${dir}`, (rel) => {
    const m = /^dist\/(.+)\.(js|cjs)$/.exec(rel);
    return m !== null && existsSync(join(root, `${m[1]}.${m[2] === 'cjs' ? 'cts' : 'ts'}`));
  });
}

/** Not needed at run time: type declarations, source maps, TypeScript sources, docs (licences stay). */
function runtimeFile(rel) {
  const name = rel.slice(rel.lastIndexOf('/') + 1);
  if (/\.(d\.[cm]?ts|map|[cm]?ts|tsbuildinfo)$/.test(name)) return false;
  if (/\.(md|markdown)$/i.test(name) && !/^(licen[cs]e|notice|copying)/i.test(name)) return false;
  return true;
}

/** The production dependencies as installed: the lockfile's non-dev packages that are on disk. */
function productionModules() {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const files = [];
  for (const [dir, meta] of Object.entries(lock.packages)) {
    if (!dir.startsWith('node_modules/') || meta.dev) continue;
    if (!existsSync(join(root, dir))) {
      if (meta.optional) continue; // another platform's prebuilt addon
      throw new Error(`${dir} is missing: run npm ci`);
    }
    // A native addon built by node-gyp: its .node file, not its C sources or object files.
    const gyp = existsSync(join(root, dir, 'binding.gyp'));
    const skip = (rel) => {
      const inner = rel.slice(dir.length + 1);
      if (inner.startsWith('node_modules/')) return true; // a nested package: its own lock entry
      // A package's own tests, benchmarks, examples and tooling: a third of the files, never loaded.
      if (/^(test|tests|__tests__|benchmarks?|bench|examples?|docs?|coverage)\//.test(inner)) return true;
      if (/^(test\.js|tsconfig\.json|eslint\.config\.[cm]?js)$/.test(inner) || /(^|\/)\./.test(inner)) return true;
      if (gyp && (/^(deps|src)\//.test(inner) || (inner.startsWith('build/') && !inner.endsWith('.node')))) return true;
      return !runtimeFile(rel);
    };
    walk(dir, (rel) => !skip(rel), files);
  }
  return files;
}

function gitCommit() {
  if (process.env.S3EDGE_BUILD_COMMIT) return process.env.S3EDGE_BUILD_COMMIT;
  try {
    const git = (a) => execFileSync('git', ['-C', root, ...a], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const head = git(['rev-parse', 'HEAD']);
    return git(['status', '--porcelain', '--untracked-files=no']) === '' ? head : `${head}-dirty`;
  } catch {
    return null;
  }
}

/**
 * The uncompressed app tree, exactly as the binary would carry it now: MAGIC, a u32 index length, the
 * index [[path, mode, size]...] and the bytes in index order. Sorted paths, fixed modes, no times.
 */
export function appTree() {
  if (!existsSync(join(root, ENTRY)) || !existsSync(join(root, 'dist/src/sea/launcher.cjs')) || !existsSync(join(root, 'dist/web'))) {
    throw new Error('dist/ is not built: run npm run build first (npm run build:binary does both)');
  }
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const buildInfo = { version: pkg.version, commit: gitCommit() };
  // dist/src/bundle: the command's code bundled (scripts/bundle.mjs), which dist/bin/s3edge.js imports.
  const bundle = walk('dist/src/bundle', (rel) => rel.endsWith('.js'));
  const paths = ['package.json', ...walk('config'), ...compiled('bin'), ...compiled('src'), ...bundle, ...walk('dist/web'), ...productionModules()];
  const files = paths.map((p) => [p, readFileSync(join(root, p))]);
  files.push(['build-info.json', Buffer.from(JSON.stringify(buildInfo) + '\n')]);
  files.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const index = files.map(([p, data]) => [p, p.endsWith('.node') ? 0o555 : 0o444, data.length]);
  const indexBytes = Buffer.from(JSON.stringify(index));
  const header = Buffer.alloc(4);
  header.writeUInt32BE(indexBytes.length);
  const tree = Buffer.concat([Buffer.from(MAGIC, 'latin1'), header, indexBytes, ...files.map(([, d]) => d)]);
  return { tree, count: files.length, buildInfo };
}

/** The SHA-256 of appTree(), as written to dist/s3edge-<target>.inputs: equal means the binary is current. */
export function appTreeDigest(tree = appTree().tree) {
  return createHash('sha256').update(tree).digest('hex');
}

export const BINARY = outFile;

async function build() {
  const started = Date.now();
  // A build cut short must never look current to the e2e test.
  rmSync(`${outFile}.inputs`, { force: true });
  const { tree, count, buildInfo } = appTree();
  // gzip -6: 3 s here for 34 MiB -> 13 MiB, and 0.3 s to inflate at first start; brotli saves 3 MiB of a
  // 90 MiB binary for 10-50 s more build time and a slower first start.
  const packed = gzipSync(tree, { level: 6 });
  const sha256 = createHash('sha256').update(packed).digest('hex');
  const packedAt = Date.now();

  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  writeFileSync(join(work, 'app-tree.gz'), packed);
  writeFileSync(join(work, 'manifest.json'), JSON.stringify({ sha256, entry: ENTRY }));
  // Paths relative to the repository (node runs there): the blob records the main script's path, and
  // an absolute one would make the binary depend on where the checkout is.
  const rel = (p) => relative(root, p);
  writeFileSync(
    join(work, 'sea-config.json'),
    JSON.stringify({
      main: 'dist/src/sea/launcher.cjs',
      output: rel(join(work, 'sea-prep.blob')),
      disableExperimentalSEAWarning: true,
      // The main script is a small launcher: a code cache would save little and is not byte-reproducible.
      useCodeCache: false,
      useSnapshot: false,
      assets: { 'manifest.json': rel(join(work, 'manifest.json')), 'app-tree.gz': rel(join(work, 'app-tree.gz')) },
    }),
  );
  const childEnv = { ...process.env };
  delete childEnv.NODE_OPTIONS;
  // It says "Wrote single executable preparation blob" on stderr: shown only when it fails.
  execFileSync(process.execPath, ['--experimental-sea-config', rel(join(work, 'sea-config.json'))], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: childEnv });

  // ---- node's executable + the blob

  const temp = join(work, `s3edge-${target}`);
  copyFileSync(process.execPath, temp);
  chmodSync(temp, 0o755);
  if (process.platform === 'linux' && !args.has('--no-strip')) {
    // Debug symbols are most of node's size and nothing a server needs (postject comes after: strip would drop the blob).
    try {
      execFileSync('strip', ['--strip-all', temp], { stdio: ['ignore', 'ignore', 'inherit'] });
    } catch {
      throw new Error("'strip' failed or is missing (apt-get install binutils), or pass --no-strip");
    }
  }
  // macOS refuses a modified signed binary: drop node's signature now, sign ad hoc after injecting
  // (a Developer ID and notarization for distribution). Untested here: CI has no macOS.
  const darwin = process.platform === 'darwin';
  if (darwin) execFileSync('codesign', ['--remove-signature', temp], { stdio: 'inherit' });
  let postject;
  try {
    postject = createRequire(import.meta.url)('postject');
  } catch {
    throw new Error('postject is missing: run npm ci (it is a devDependency)');
  }
  // postject logs LIEF's warnings about node's notes through console.log/warn; they are harmless.
  const quiet = { log: console.log, warn: console.warn };
  console.log = console.warn = () => {};
  try {
    await postject.inject(temp, 'NODE_SEA_BLOB', readFileSync(join(work, 'sea-prep.blob')), {
      sentinelFuse: SEA_FUSE,
      ...(darwin ? { machoSegmentName: 'NODE_SEA' } : {}),
    });
  } finally {
    Object.assign(console, quiet);
  }
  if (darwin) execFileSync('codesign', ['--sign', '-', temp], { stdio: 'inherit' });
  renameSync(temp, outFile);
  const sum = createHash('sha256').update(readFileSync(outFile)).digest('hex');
  writeFileSync(`${outFile}.sha256`, `${sum}  ${relative(dirname(outFile), outFile)}\n`);
  // What the e2e test compares to decide whether the binary is current (test/e2e/binary.test.ts).
  writeFileSync(`${outFile}.inputs`, `${appTreeDigest(tree)}\n`);
  rmSync(work, { recursive: true, force: true });

  const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;
  const mib = (n) => `${(n / 1048576).toFixed(1)} MiB`;
  process.stdout.write(
    `${relative(root, outFile)}: ${mib(statSync(outFile).size)} (app tree ${count} files, ${mib(tree.length)} -> ${mib(packed.length)}), ` +
      `s3edge ${buildInfo.version} commit ${buildInfo.commit ?? 'unknown'}, node ${process.version}, ` +
      `${secs(Date.now() - started)} (tree ${secs(packedAt - started)}, executable ${secs(Date.now() - packedAt)})\n` +
      `sha256 ${sum}\n`,
  );
}

// Run as a script (npm run build:binary); imported (the e2e test), it only exports.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  build().catch((err) => fail(err.message));
}
