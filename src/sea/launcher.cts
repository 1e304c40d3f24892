// The single binary's main script (a Node single executable application, docs/RELEASE.md). The binary
// carries the app tree (dist/, production node_modules with their native addons, config/, package.json)
// as one gzipped asset; this unpacks it once into a private cache directory named by the
// asset's SHA-256 and runs dist/bin/s3edge.js from there, exactly as `node dist/bin/s3edge.js` does.
// Nothing else in the app knows it runs from a binary. Only node: built-ins may be required here: a
// SEA main script's require loads nothing else (dynamic import() of a file works).
import cluster from 'node:cluster';
import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { getRawAsset, isSea } from 'node:sea';
import { pathToFileURL } from 'node:url';
import { gunzipSync } from 'node:zlib';

/** Asset names and the archive layout; scripts/build-binary.mjs writes the other side. */
const MANIFEST_ASSET = 'manifest.json';
const TREE_ASSET = 'app-tree.gz';
const MAGIC = 'S3EDGE-TREE-1\n';

interface Manifest {
  /** SHA-256 (hex) of the compressed tree asset: the cache directory's name. */
  sha256: string;
  /** The script to run, relative to the tree. */
  entry: string;
}

type Entry = [path: string, mode: number, size: number];

/** An asset's bytes without a copy (read only: the binary's own memory). */
function asset(key: string): Buffer {
  return Buffer.from(getRawAsset(key) as ArrayBuffer);
}

const uid = process.getuid?.() ?? -1;

/** A directory only we can change: a real directory (no symlink), ours, writable by nobody else. */
function isPrivateDir(path: string): boolean {
  try {
    const st = lstatSync(path);
    return st.isDirectory() && st.uid === uid && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** Where unpacked trees may live, best first: $XDG_CACHE_HOME, ~/.cache, then a per-uid dir in the temp dir. */
function cacheRoots(): string[] {
  const roots: string[] = [];
  const xdg = process.env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) roots.push(join(xdg, 's3edge'));
  try {
    const home = homedir();
    if (home && home !== '/') roots.push(join(home, '.cache', 's3edge'));
  } catch {
    /* no home directory for this uid */
  }
  roots.push(join(tmpdir(), `s3edge-${uid}`));
  return roots;
}

/**
 * fsyncs every path before the tree is renamed into place, so a power cut cannot leave a "complete"
 * tree of empty files. Sixteen at a time: concurrent fsyncs share the file system's journal commits
 * (seven times faster than one by one here, as fast as a syncfs).
 */
async function fsyncAll(paths: string[]): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < paths.length) {
      const handle = await open(paths[next++] as string, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

/** The decompressed archive, checked against the manifest's digest (a damaged binary must not run half an app). */
function readTree(manifest: Manifest): Buffer {
  const raw = asset(TREE_ASSET);
  const digest = createHash('sha256').update(raw).digest('hex');
  if (digest !== manifest.sha256) throw new Error(`the binary is damaged: its app tree has SHA-256 ${digest}, expected ${manifest.sha256}`);
  const tree = gunzipSync(raw);
  if (tree.subarray(0, MAGIC.length).toString('latin1') !== MAGIC) throw new Error('the binary is damaged: unknown app tree format');
  return tree;
}

/** Writes every file of the archive under `dir` (which exists, empty); `durable`: all of it fsynced. */
async function unpack(tree: Buffer, dir: string, durable: boolean): Promise<void> {
  let off = MAGIC.length;
  const indexLength = tree.readUInt32BE(off);
  off += 4;
  const entries = JSON.parse(tree.subarray(off, off + indexLength).toString('utf8')) as Entry[];
  off += indexLength;
  const made = new Set<string>([dir]);
  const written: string[] = [];
  for (const [path, mode, size] of entries) {
    // Paths come from our own build, but a path must never leave the tree.
    if (isAbsolute(path) || path.split('/').includes('..')) throw new Error(`the binary is damaged: bad path ${path}`);
    const file = join(dir, path);
    const parent = dirname(file);
    if (!made.has(parent)) {
      mkdirSync(parent, { recursive: true, mode: 0o700 });
      made.add(parent);
    }
    writeFileSync(file, tree.subarray(off, off + size), { flag: 'wx', mode });
    written.push(file);
    off += size;
  }
  if (!durable) return;
  await fsyncAll(written);
  await fsyncAll([...made]);
}

/** Whether a process of this pid runs (one we may not signal counts: only ESRCH says it is gone). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Removes what an unpack cut short (killed, power cut) left in `root`: `.tmp-*-<pid>-*` of a pid that is gone. */
function removeAbandoned(root: string): void {
  for (const name of readdirSync(root)) {
    const pid = /^\.tmp-[0-9a-f]+-(\d+)-[0-9a-f]+$/.exec(name)?.[1];
    if (pid === undefined || pid === String(process.pid)) continue;
    if (!alive(Number(pid))) rmSync(join(root, name), { recursive: true, force: true });
  }
}

/**
 * Where each running launcher names the tree it runs from (`<sha256>-<pid>`, removed at its exit): a
 * tree another running process uses is never removed, since the app loads modules from it long after
 * its start (the management API at its first request).
 */
const IN_USE = '.in-use';
/** Written into a tree at its unpack: a tree without it was unpacked by a launcher that marked no use, so it is left alone. */
const REMOVABLE = '.removable';
/** An unused tree younger than this stays: a start of its version may be between its rename and its mark. */
const UNUSED_TREE_GRACE_MS = 60 * 60 * 1000;

function names(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Marks `sha256`'s tree as used by this process until it exits. */
function markInUse(root: string, sha256: string): void {
  const marks = join(root, IN_USE);
  mkdirSync(marks, { recursive: true, mode: 0o700 });
  if (!isPrivateDir(marks)) return;
  const mark = join(marks, `${sha256}-${process.pid}`);
  writeFileSync(mark, '', { mode: 0o600 });
  process.once('exit', () => rmSync(mark, { force: true }));
}

/**
 * Removes the trees of other builds that no running process uses (each upgrade would otherwise leave its
 * predecessor's ~50 MB behind for ever) and the marks of processes that are gone (killed, crashed).
 */
function removeUnusedTrees(root: string, keep: string): void {
  const marks = join(root, IN_USE);
  const used = new Set<string>([keep]);
  for (const name of names(marks)) {
    const m = /^([0-9a-f]{64})-(\d+)$/.exec(name);
    if (m === null) continue;
    if (alive(Number(m[2]))) used.add(m[1] as string);
    else rmSync(join(marks, name), { force: true });
  }
  for (const name of names(root)) {
    if (!/^[0-9a-f]{64}$/.test(name) || used.has(name)) continue;
    const tree = join(root, name);
    try {
      if (!isPrivateDir(tree) || Date.now() - lstatSync(tree).mtimeMs < UNUSED_TREE_GRACE_MS) continue;
      lstatSync(join(tree, REMOVABLE));
    } catch {
      continue; // no marker: an older launcher's tree, whose processes left no mark
    }
    rmSync(tree, { recursive: true, force: true });
  }
}

/** The cached tree in use by this process; in the primary, the other builds' unused trees removed. */
function useTree(root: string, sha256: string): string {
  try {
    markInUse(root, sha256);
    if (cluster.isPrimary) removeUnusedTrees(root, sha256);
  } catch {
    // A mark or a removal that fails costs disk, never the start.
  }
  return join(root, sha256);
}

/**
 * The unpacked tree for this binary: reused when already there (and private), else unpacked into a
 * temp name beside it and renamed into place, so a reader sees a whole tree or none. Concurrent
 * first starts each unpack; the first rename wins and the others use its tree.
 */
async function unpackedTree(manifest: Manifest): Promise<string> {
  let tree: Buffer | undefined;
  for (const configured of cacheRoots()) {
    let root: string;
    try {
      mkdirSync(configured, { recursive: true, mode: 0o700 });
      // The operator's path may be a symlink (systemd's CacheDirectory= with DynamicUser=); below it, none is followed.
      root = realpathSync(configured);
    } catch {
      continue; // read-only home, no such parent: try the next root
    }
    // Someone else's (a pre-made /tmp/s3edge-<uid>) could swap what is inside: never trust it.
    if (!isPrivateDir(root)) continue;
    const target = join(root, manifest.sha256);
    if (isPrivateDir(target)) return useTree(root, manifest.sha256);
    const temp = join(root, `.tmp-${manifest.sha256.slice(0, 16)}-${process.pid}-${randomBytes(4).toString('hex')}`);
    try {
      removeAbandoned(root);
      tree ??= readTree(manifest);
      mkdirSync(temp, { mode: 0o700 });
      await unpack(tree, temp, true);
      writeFileSync(join(temp, REMOVABLE), '', { mode: 0o400 });
      renameSync(temp, target);
      await fsyncAll([root]);
      return useTree(root, manifest.sha256);
    } catch (err) {
      rmSync(temp, { recursive: true, force: true });
      if (isPrivateDir(target)) return useTree(root, manifest.sha256); // another process renamed its copy first
      if ((err as Error).message.startsWith('the binary is damaged')) throw err;
      // ENOSPC, EROFS, EACCES...: the next root
    }
  }
  // No usable cache: a private directory of our own for this run only, removed at exit.
  let temp: string;
  try {
    temp = mkdtempSync(join(tmpdir(), 's3edge-run-'));
  } catch (err) {
    throw new Error(`no writable directory to unpack into (${(err as Error).message}): set XDG_CACHE_HOME to one`);
  }
  process.once('exit', () => rmSync(temp, { recursive: true, force: true }));
  // Gone at exit, so no power cut can find it: no fsync.
  await unpack(tree ?? readTree(manifest), temp, false);
  return temp;
}

async function main(): Promise<void> {
  if (!isSea()) throw new Error('this script is the single binary launcher; run dist/bin/s3edge.js with node instead');
  const manifest = JSON.parse(asset(MANIFEST_ASSET).toString('utf8')) as Manifest;
  const dir = await unpackedTree(manifest);
  // argv is already [binary, binary, ...args], as the app's argv.slice(2) expects. A cluster worker
  // (serve --workers N) is forked as `binary <module> ...args` with the binary as its module: one too many.
  // The module is argv[1] as typed unless told (`s3edge` found on PATH, `./s3edge`): the binary's own
  // absolute path, so a worker knows the extra argument for what it is.
  if (cluster.isPrimary) cluster.setupPrimary({ exec: process.execPath });
  if (cluster.isWorker && process.argv[2] === process.execPath) process.argv.splice(2, 1);
  await import(pathToFileURL(join(dir, manifest.entry)).href);
}

main().catch((err: unknown) => {
  process.stderr.write(`s3edge: ${(err as Error).message}\n`);
  process.exitCode = 1;
});
