// Node's module compile cache (V8 code cache on disk) for every s3edge command: a process after the
// first of a version compiles its modules from the cache instead of from source, which is most of a
// start's module loading (docs/ARCHITECTURE.md "Start"). The cache lives in a directory only this
// user can write, since V8 trusts what it reads there: $XDG_CACHE_HOME/s3edge, ~/.cache/s3edge, else
// <tmpdir>/s3edge-<uid> (the binary's unpacked tree uses the same roots, src/sea/launcher.cts), under
// compile-cache/. NODE_COMPILE_CACHE names another directory; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
// A cache that cannot be used is no error: the command runs as without it.
import { lstatSync, mkdirSync, realpathSync } from 'node:fs';
import { enableCompileCache, flushCompileCache } from 'node:module';
import { homedir, tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/** A real directory (no symlink) owned by `uid` that nobody else may write to. */
export function isPrivateDir(path: string, uid: number): boolean {
  try {
    const st = lstatSync(path);
    return st.isDirectory() && st.uid === uid && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** The candidate roots, best first. */
export function cacheRoots(env: NodeJS.ProcessEnv, home: string | undefined, temp: string, uid: number): string[] {
  const roots: string[] = [];
  const xdg = env['XDG_CACHE_HOME'];
  if (xdg && isAbsolute(xdg)) roots.push(join(xdg, 's3edge'));
  if (home && home !== '/') roots.push(join(home, '.cache', 's3edge'));
  roots.push(join(temp, `s3edge-${uid}`));
  return roots;
}

/** The compile-cache directory in the first root that is (or could be made) private; undefined when none. */
export function privateCompileCacheDir(roots: readonly string[], uid: number): string | undefined {
  for (const configured of roots) {
    let root: string;
    try {
      mkdirSync(configured, { recursive: true, mode: 0o700 });
      // The operator's path may be a symlink (systemd's CacheDirectory= with DynamicUser=); below it, none is followed.
      root = realpathSync(configured);
    } catch {
      continue;
    }
    if (!isPrivateDir(root, uid)) continue;
    const dir = join(root, 'compile-cache');
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch {
      // It exists already (checked below) or cannot be made.
    }
    if (isPrivateDir(dir, uid)) return dir;
  }
  return undefined;
}

/** Turns the compile cache on for this process and the modules it loads from now on; never throws. */
export function useCompileCache(): void {
  try {
    const env = process.env;
    if (env['NODE_DISABLE_COMPILE_CACHE'] || env['NODE_COMPILE_CACHE']) {
      // Node read these at its start: off, or on in the operator's directory.
      return;
    }
    const uid = process.getuid?.() ?? -1;
    let home: string | undefined;
    try {
      home = homedir();
    } catch {
      home = undefined;
    }
    const dir = privateCompileCacheDir(cacheRoots(env, home, tmpdir(), uid), uid);
    if (dir !== undefined) enableCompileCache(dir);
  } catch {
    // A start without the cache is a slower start, not a failed one.
  }
}

/**
 * Writes what the cache gathered so far (node writes it at exit too): a server calls it once it listens,
 * so the next start finds its modules cached even if this one never exits cleanly.
 */
export function saveCompileCache(): void {
  try {
    flushCompileCache();
  } catch {
    // As above.
  }
}
