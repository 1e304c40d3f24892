// The module compile cache of every s3edge command (src/cli/compile-cache.ts): kept only in a directory
// no other user can write, and used by a real command.
import t from 'tap';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheRoots, privateCompileCacheDir } from '../../src/cli/compile-cache.js';
import { runS3edge } from '../helpers/cli.js';
import { childProcessEnv } from '../helpers/child-env.js';

const uid = process.getuid?.() ?? -1;
const scratch = mkdtempSync(join(tmpdir(), 's3edge-compile-cache-'));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));

t.test('the roots, best first: $XDG_CACHE_HOME, ~/.cache, then a per-user directory in the temp dir', async (t) => {
  t.same(cacheRoots({ XDG_CACHE_HOME: '/x/cache' }, '/home/ann', '/tmp', 1000), ['/x/cache/s3edge', '/home/ann/.cache/s3edge', '/tmp/s3edge-1000']);
  t.same(cacheRoots({ XDG_CACHE_HOME: 'relative' }, '/', '/tmp', 7), ['/tmp/s3edge-7'], 'a relative XDG_CACHE_HOME and the root as home are skipped');
});

t.test('a private root gets a private compile-cache directory', async (t) => {
  const root = join(scratch, 'private');
  const dir = privateCompileCacheDir([root], uid);
  t.equal(dir, join(root, 'compile-cache'));
  t.equal(statSync(root).mode & 0o777, 0o700, 'the root is made 0700');
  t.equal(statSync(dir as string).mode & 0o777, 0o700, 'and so is the cache directory');
  t.equal(privateCompileCacheDir([root], uid), dir, 'found again once it exists');
});

t.test('a root others can write to is passed over for the next', async (t) => {
  const open = join(scratch, 'open');
  mkdirSync(open, { mode: 0o700 });
  chmodSync(open, 0o777);
  const next = join(scratch, 'next');
  t.equal(privateCompileCacheDir([open, next], uid), join(next, 'compile-cache'));
  t.same(readdirSync(open), [], 'nothing was made in the open root');
});

t.test("the operator's root may be a symlink (systemd's CacheDirectory=), a compile-cache symlink below it not", async (t) => {
  const real = join(scratch, 'private-real');
  mkdirSync(real, { mode: 0o700 });
  const link = join(scratch, 'cache-link');
  symlinkSync(real, link);
  t.equal(privateCompileCacheDir([link], uid), join(real, 'compile-cache'), 'the root resolved');

  const root = join(scratch, 'swapped');
  const elsewhere = join(scratch, 'elsewhere');
  mkdirSync(root, { mode: 0o700 });
  mkdirSync(elsewhere, { mode: 0o700 });
  symlinkSync(elsewhere, join(root, 'compile-cache'));
  t.equal(privateCompileCacheDir([root], uid), undefined, 'a symlinked compile-cache is not followed');
});

t.test('a compile-cache directory others can write to is not used', async (t) => {
  const root = join(scratch, 'loose');
  mkdirSync(join(root, 'compile-cache'), { recursive: true, mode: 0o700 });
  chmodSync(join(root, 'compile-cache'), 0o757);
  t.equal(privateCompileCacheDir([root], uid), undefined);
});

t.test('a real command fills the cache, and NODE_DISABLE_COMPILE_CACHE=1 leaves it alone', async (t) => {
  const env = childProcessEnv();
  delete env['NODE_COMPILE_CACHE'];
  delete env['NODE_DISABLE_COMPILE_CACHE'];
  const off = join(scratch, 'off');
  mkdirSync(off, { mode: 0o700 });
  const r0 = await runS3edge(['version'], { XDG_CACHE_HOME: off, NODE_DISABLE_COMPILE_CACHE: '1' }, undefined, env);
  t.equal(r0.code, 0);
  t.same(readdirSync(off), [], 'disabled: no cache written');

  const on = join(scratch, 'on');
  mkdirSync(on, { mode: 0o700 });
  const r1 = await runS3edge(['version'], { XDG_CACHE_HOME: on }, undefined, env);
  t.equal(r1.code, 0);
  t.match(r1.stdout, /^s3edge /, 'the command ran as without the cache');
  const cache = join(on, 's3edge', 'compile-cache');
  const versions = readdirSync(cache);
  t.equal(versions.length, 1, "one directory for this node's version");
  t.ok(readdirSync(join(cache, versions[0] as string)).length > 0, "the command's modules are cached");
});
