// The single binary (npm run build:binary, docs/RELEASE.md) the way a machine without node runs it:
// PATH is an empty directory (node is /usr/bin/node here, so no PATH of real directories would do),
// the working directory and HOME are read-only, and no NODE_OPTIONS reaches it. It must unpack itself
// into a private cache (XDG_CACHE_HOME, else the per-uid temp dir), answer --version with its stamped
// commit, serve S3 to aws cli (mb, a multipart cp, ls, rm) and run admin commands on the same data.
// The binary is rebuilt here when missing or not built from the current dist/, lockfile and commit
// (.ci/run builds it before npm test, so there this only checks).
import t from 'tap';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { gitCommit } from '../../src/cli/version.js';
import { runAws, writeAwsConfig, type AwsTarget } from '../helpers/aws-cli.js';
import { childProcessEnv, nodeCommand } from '../helpers/child-env.js';
import { runS3edge } from '../helpers/cli.js';
import { randomData } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BUILD_SCRIPT = join(ROOT, 'scripts/build-binary.mjs');
const build = (await import(pathToFileURL(BUILD_SCRIPT).href)) as { BINARY: string; appTreeDigest(): string };
const BINARY = build.BINARY;
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** Builds the binary unless dist/s3edge-<target>.inputs says it holds exactly the tree we would pack now. */
async function ensureBinary(): Promise<void> {
  const inputs = `${BINARY}.inputs`;
  if (existsSync(BINARY) && existsSync(inputs) && readFileSync(inputs, 'utf8').trim() === build.appTreeDigest()) return;
  t.comment('building the binary (npm run build:binary): missing or older than dist/, the lockfile or the commit');
  try {
    await promisify(execFile)(...nodeCommand([BUILD_SCRIPT]), { env: childProcessEnv(), timeout: 300_000, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`npm run build:binary failed: ${e.stderr?.trim() || e.message}`);
  }
}

/** A directory nobody may write: a read-only tmpfs as root (root ignores modes), mode 0555 otherwise. */
function readOnlyDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 's3edge-ro-'));
  if (process.getuid?.() === 0) {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=64k,mode=0755', 'tmpfs', dir], { stdio: 'pipe' });
    return { dir, remove: () => (execFileSync('umount', [dir]), rmSync(dir, { recursive: true, force: true })) };
  }
  chmodSync(dir, 0o555);
  return { dir, remove: () => (chmodSync(dir, 0o755), rmSync(dir, { recursive: true, force: true })) };
}

function mode(path: string): number {
  return lstatSync(path).mode & 0o777;
}

await ensureBinary();
const work = mkdtempSync(join(tmpdir(), 's3edge-binary-'));
const ro = readOnlyDir();
t.teardown(() => {
  ro.remove();
  rmSync(work, { recursive: true, force: true });
});
const emptyBin = join(work, 'bin');
const tempDir = join(work, 'tmp');
const xdg = join(work, 'xdg');
for (const d of [emptyBin, tempDir, xdg]) mkdirSync(d);
// A machine without node: nothing on PATH, HOME not writable, the temp dir ours for this run.
const env: NodeJS.ProcessEnv = { PATH: emptyBin, HOME: ro.dir, TMPDIR: tempDir, LANG: 'C.UTF-8' };
const uid = process.getuid?.() ?? 0;

t.test('the environment really lacks node and a writable working directory', async (t) => {
  t.equal(spawnSync('node', ['--version'], { env }).error?.message.includes('ENOENT'), true, 'node is not on PATH');
  t.throws(() => writeFileSync(join(ro.dir, 'probe'), 'x'), 'the working directory is read-only');
});

t.test('--version: unpacks once into a private, content-addressed cache, then reuses it', async (t) => {
  const run = (args: string[]) => runS3edge(args, { XDG_CACHE_HOME: xdg }, ro.dir, env, BINARY);
  // What an unpack killed half-way leaves: removed by the next one, since its pid is gone.
  const gone = spawnSync('/bin/true').pid;
  mkdirSync(join(xdg, 's3edge', `.tmp-0123456789abcdef-${gone}-00ff00ff`, 'dist'), { recursive: true, mode: 0o700 });
  chmodSync(join(xdg, 's3edge'), 0o700);
  const first = await run(['--version']);
  t.same([first.code, first.stderr], [0, ''], 'exit 0, quiet');
  const commit = gitCommit(ROOT);
  // The binary carries the node that built it: the node running this test (build:binary and the rebuild above use it).
  const node = process.versions.node;
  t.equal(first.stdout, `s3edge ${VERSION}${commit ? ` (commit ${commit.slice(0, 12)}${commit.endsWith('-dirty') ? '-dirty' : ''})` : ''} on Node.js ${node}\n`, 'version, commit and the Node.js inside');
  const json = await run(['--version', '--json']);
  t.same(JSON.parse(json.stdout), { version: VERSION, commit, node }, 'the commit stamped at build time');

  const cache = join(xdg, 's3edge');
  // Beside the tree, the compile cache of its modules (src/cli/compile-cache.ts), private too.
  // And .in-use, where a running launcher names the tree it uses (empty once they have exited).
  t.same(readdirSync(join(cache, '.in-use')), [], 'no process left a mark: both have exited');
  const entries = readdirSync(cache).filter((name) => name !== 'compile-cache' && name !== '.in-use');
  t.equal(entries.length, 1, 'one tree, no temp dir left (an abandoned one removed)');
  t.match(entries[0], /^[0-9a-f]{64}$/, 'named by the SHA-256 of the carried tree');
  const tree = join(cache, entries[0] ?? '');
  t.same([mode(cache), mode(tree), mode(join(cache, 'compile-cache'))], [0o700, 0o700, 0o700], 'cache, tree and compile cache 0700');
  t.equal(lstatSync(tree).uid, uid, 'ours');
  t.equal(mode(join(tree, 'dist/bin/s3edge.js')), 0o444, 'files read-only');
  t.ok(existsSync(join(tree, `node_modules/@node-rs/crc32-linux-${process.arch}-gnu/crc32.linux-${process.arch}-gnu.node`)), 'native addon carried (@node-rs/crc32)');
  // Optional at run time (GeoIP is off without it), so a missing one would not fail a start: look.
  t.ok(existsSync(join(tree, 'node_modules/@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb')), 'GeoIP database carried');
  // The same program as `node dist/bin/s3edge.js`: the same answers.
  for (const args of [['--help'], ['users', '--help'], ['serve', '--help'], ['buckets', 'craete']]) {
    const [bin, node] = await Promise.all([run(args), runS3edge(args, {}, ro.dir)]);
    t.same(bin, node, `s3edge ${args.join(' ')}: as from node`);
  }
  t.same(readdirSync(cache).filter((name) => name !== 'compile-cache' && name !== '.in-use'), entries, 'a second start reuses it');
});

t.test("an upgrade removes the trees of other builds that no running process uses, never one in use", async (t) => {
  const cache = join(xdg, 's3edge');
  const marks = join(cache, '.in-use');
  const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
  const tree = (c: string, opts: { removable: boolean; old: boolean }): string => {
    const dir = join(cache, c.repeat(64));
    mkdirSync(join(dir, 'dist'), { recursive: true, mode: 0o700 });
    if (opts.removable) writeFileSync(join(dir, '.removable'), '');
    if (opts.old) utimesSync(dir, twoHoursAgo, twoHoursAgo);
    return dir;
  };
  const unused = tree('a', { removable: true, old: true });
  const inUse = tree('b', { removable: true, old: true });
  const olderLauncher = tree('c', { removable: false, old: true });
  const young = tree('d', { removable: true, old: false });
  mkdirSync(marks, { recursive: true, mode: 0o700 });
  // This test's own process stands for a server still running from tree b; a killed one left a mark on e.
  writeFileSync(join(marks, `${'b'.repeat(64)}-${process.pid}`), '');
  const killed = spawnSync('/bin/true').pid;
  writeFileSync(join(marks, `${'e'.repeat(64)}-${killed}`), '');
  const r = await runS3edge(['--version'], { XDG_CACHE_HOME: xdg }, ro.dir, env, BINARY);
  t.same([r.code, r.stderr], [0, ''], 'runs');
  t.notOk(existsSync(unused), 'an old tree no process uses: removed');
  t.ok(existsSync(inUse), 'a tree a running process uses: kept');
  t.ok(existsSync(olderLauncher), 'a tree unpacked by a launcher that marked no use: kept');
  t.ok(existsSync(young), 'a tree unpacked within the hour: kept (its start may not have marked it yet)');
  const own = readdirSync(cache).filter((name) => /^[0-9a-f]{64}$/.test(name) && !/^(.)\1+$/.test(name));
  t.equal(own.length, 1, "this binary's own tree kept");
  t.ok(existsSync(join(cache, own[0] ?? '', '.removable')), 'and marked removable for the next build');
  t.same(readdirSync(marks), [`${'b'.repeat(64)}-${process.pid}`], "the killed process's mark removed; the run's own removed at its exit");
  for (const dir of [inUse, olderLauncher, young]) rmSync(dir, { recursive: true, force: true });
  rmSync(marks, { recursive: true, force: true });
});

t.test('a cache root anyone may write is never used: a private directory for the run, removed at exit', async (t) => {
  const tmp = join(work, 'tmp-shared');
  const shared = join(tmp, `s3edge-${uid}`);
  mkdirSync(shared, { recursive: true });
  chmodSync(shared, 0o777);
  const r = await runS3edge(['--version'], { TMPDIR: tmp }, ro.dir, env, BINARY);
  t.same([r.code, r.stderr], [0, ''], 'runs');
  t.match(r.stdout, /^s3edge /);
  t.same(readdirSync(shared), [], 'nothing unpacked into the shared root');
  t.same(readdirSync(tmp), [`s3edge-${uid}`], 'the run directory is gone');
});

t.test('serve, aws cli smoke and admin commands, from the read-only directory', async (t) => {
  // Installed on PATH and run by its name, as a user types it: `s3edge serve --workers 2`.
  const installed = join(work, 'installed');
  mkdirSync(installed);
  symlinkSync(BINARY, join(installed, 's3edge'));
  // Two workers (docs/SCALE.md): node:cluster forks the binary itself, and aws cli's parallel parts and
  // connections land on both.
  const server = await startServer({ executable: 's3edge', baseEnv: { ...env, PATH: `${installed}:${emptyBin}` }, cwd: ro.dir, upstream: false, startTimeoutMs: 120_000, workers: 2 });
  t.teardown(() => server.stop());
  t.equal(server.listening['workers'], 2, 'a supervisor and two workers');
  // HOME is read-only and XDG_CACHE_HOME unset: the per-uid dir in the temp dir.
  const fallback = join(tempDir, `s3edge-${uid}`);
  t.match(readdirSync(fallback).filter((name) => name !== 'compile-cache' && name !== '.in-use'), [/^[0-9a-f]{64}$/], 'unpacked under $TMPDIR/s3edge-<uid>');
  t.ok(readdirSync(join(fallback, 'compile-cache')).length > 0, 'its modules compiled into the compile cache beside it');
  t.equal(mode(fallback), 0o700, 'that dir 0700');

  const ready = await fetch(new URL('/readyz', server.url));
  t.equal(ready.status, 200, 'GET /readyz');
  const dashboard = await fetch(new URL('/dashboard/', server.url));
  t.match([dashboard.status, dashboard.headers.get('content-type'), await dashboard.text()], [200, /^text\/html/, /<html/i], 'the dashboard (dist/web) is served');

  const files = await writeAwsConfig(server.tmpRoot);
  const target: AwsTarget = { endpoint: server.url, credentials: server.rootKey, files };
  const aws = async (args: string[]) => {
    const r = await runAws(target, args, server.tmpRoot);
    t.equal(r.code, 0, `aws ${args.join(' ')}${r.code ? `: ${r.stderr}` : ''}`);
    return r;
  };
  // 20 MiB: above aws cli's 8 MiB multipart threshold, so three UploadPart calls.
  const body = randomData(20 * 1024 * 1024);
  const upload = join(server.tmpRoot, 'big.bin');
  const download = join(server.tmpRoot, 'big.back');
  writeFileSync(upload, body);
  await aws(['s3', 'mb', 's3://binary-smoke']);
  await aws(['s3', 'cp', upload, 's3://binary-smoke/big.bin']);
  const head = await aws(['s3api', 'head-object', '--bucket', 'binary-smoke', '--key', 'big.bin']);
  t.match(head.json, { ContentLength: body.length, ETag: /-3"$/ }, 'a multipart object of three parts');
  const listed = await aws(['s3', 'ls', 's3://binary-smoke/']);
  t.match(listed.stdout, new RegExp(`\\s${body.length} big\\.bin\\n`), 'ls shows it');
  await aws(['s3', 'cp', 's3://binary-smoke/big.bin', download]);
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  t.equal(sha(readFileSync(download)), sha(body), 'the same bytes back');
  await aws(['s3', 'rm', 's3://binary-smoke/big.bin']);
  t.equal((await aws(['s3', 'ls', 's3://binary-smoke/'])).stdout, '', 'gone');

  // Admin commands: the binary again, on the running server's data directory.
  t.match(await server.admin(['users', 'create', 'alice']), { name: 'alice' }, 'users create');
  const users = await server.cli(['users', 'list']);
  t.equal(users.code, 0, `users list${users.code ? `: ${users.stderr}` : ''}`);
  t.same((users.json as { name: string }[]).map((u) => u.name).sort(), ['alice', 'root'], 'users list');
  const buckets = await server.cli(['buckets', 'list']);
  t.match(buckets.json, [{ name: 'binary-smoke' }], 'buckets list sees the bucket aws cli made');

  server.kill('SIGTERM');
  t.same(await server.exited, { code: 0, signal: null }, 'SIGTERM: a clean stop, exit 0');
  t.same(readdirSync(ro.dir), [], 'nothing written to the working directory');
});
