// Client conformance: rclone (Debian's package; .ci/run installs it) against the real server.
// The remote is configured with environment variables only (RCLONE_CONFIG_<NAME>_*), with a config
// file path in this run's temp dir so the host's rclone config never leaks in.
//  - over HTTP: `copy` of a tree, `check` (MD5 via ETag) with 0 differences, `lsjson` with exact
//    paths, sizes, MD5s and modtimes, a modtime-only change (rclone updates the object's metadata with
//    a REPLACE self-copy; no re-upload), `touch` of an existing object, `sync` after local changes,
//    `delete`, and a 300 MiB `copyto` that goes multipart (5 MiB chunks), read back and hashed.
//  - over HTTPS (`--ca-cert`): a small `copy` and `check`.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdir, rm, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startServer } from '../helpers/server.js';
import { RawS3 } from '../helpers/s3-client.js';
import { md5Hex } from '../helpers/checksums.js';
import {
  asArray,
  asRecord,
  describeRun,
  hashTree,
  multipartEtagOfFile,
  run,
  runHashingStdout,
  s3Sorted,
  writeBigFile,
  writeTree,
  type RunResult,
} from '../helpers/conformance.js';

const server = await startServer({ tls: true });
t.teardown(() => server.stop());
const root = new RawS3({ url: server.url }, server.rootKey);

const MiB = 1024 * 1024;
const PAST = new Date('2024-01-02T03:04:05Z');
const BUCKET = 'rclone-http';

// Environment for rclone: nothing of the host's RCLONE_* settings, config and cache in our temp dir.
const rcloneHome = join(server.tmpRoot, 'rclone-home');
await mkdir(rcloneHome, { recursive: true });
const configFile = join(rcloneHome, 'rclone.conf');
await writeFile(configFile, '');

function remoteEnv(name: string, endpoint: string): Record<string, string> {
  const p = `RCLONE_CONFIG_${name.toUpperCase()}_`;
  return {
    [`${p}TYPE`]: 's3',
    [`${p}PROVIDER`]: 'Other',
    [`${p}ENDPOINT`]: endpoint,
    [`${p}ACCESS_KEY_ID`]: server.rootKey.accessKeyId,
    [`${p}SECRET_ACCESS_KEY`]: server.rootKey.secretAccessKey,
    [`${p}REGION`]: 'us-east-1',
    [`${p}FORCE_PATH_STYLE`]: 'true',
  };
}

const env: NodeJS.ProcessEnv = {};
for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('RCLONE_') && !k.startsWith('AWS_')) env[k] = v;
Object.assign(env, {
  RCLONE_CONFIG: configFile,
  HOME: rcloneHome,
  XDG_CONFIG_HOME: rcloneHome,
  XDG_CACHE_HOME: rcloneHome,
  ...remoteEnv('s3edge', server.url),
  ...remoteEnv('s3edgetls', server.tlsUrl ?? ''),
});

/** One attempt only, so a server error is never retried away. */
function rclone(args: string[], extra: string[] = []): Promise<RunResult> {
  return run('rclone', [...args, '--retries', '1', '--low-level-retries', '1', ...extra], { env });
}

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

function ok(t: TapTest, r: RunResult, what: string): boolean {
  return t.equal(r.code, 0, describeRun(what, r));
}

interface LsEntry {
  path: string;
  size: number;
  md5: string | undefined;
  modTime: number;
}

async function lsjson(remote: string, extra: string[] = []): Promise<{ r: RunResult; entries: LsEntry[] }> {
  const r = await rclone(['lsjson', '-R', '--files-only', '--hash', remote], extra);
  let parsed: unknown;
  try {
    parsed = JSON.parse(r.stdout) as unknown;
  } catch {
    parsed = [];
  }
  const entries = asArray(parsed).map((e) => {
    const o = asRecord(e);
    const hashes = asRecord(o['Hashes']);
    return {
      path: String(o['Path']),
      size: Number(o['Size']),
      md5: typeof hashes['md5'] === 'string' ? hashes['md5'] : undefined,
      modTime: Date.parse(String(o['ModTime'])),
    };
  });
  entries.sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  return { r, entries };
}

/** "N differences found" / "N matching files" from `rclone check`'s log. */
function checkCounts(r: RunResult): { differences: number | undefined; matching: number | undefined } {
  const text = r.stderr + r.stdout;
  const d = /(\d+) differences found/.exec(text);
  const m = /(\d+) matching files/.exec(text);
  return { differences: d?.[1] === undefined ? undefined : Number(d[1]), matching: m?.[1] === undefined ? undefined : Number(m[1]) };
}

function treeFiles(): Record<string, Buffer> {
  return {
    'readme.txt': Buffer.from('rclone conformance\n'),
    'empty.bin': Buffer.alloc(0),
    'nested/a/b/deep.bin': randomBytes(70_000),
    'nested/a/other.txt': Buffer.from('other\n'),
    'with space/file name.txt': randomBytes(321),
    'plus+sign/a+b.txt': randomBytes(222),
    'percent%25/100%.txt': randomBytes(111),
    'hash#tag/#1.txt': randomBytes(77),
    'question?/why?.txt': randomBytes(66),
    'unicode/é-café/文件-😀.txt': randomBytes(1234),
    'medium/six-mib.bin': randomBytes(6 * MiB + 5),
  };
}

function expectedEntries(files: Record<string, Buffer>, modTimes: Record<string, Date> = {}): LsEntry[] {
  return s3Sorted(Object.keys(files)).map((path) => {
    const bytes = files[path] ?? Buffer.alloc(0);
    return { path, size: bytes.length, md5: md5Hex(bytes), modTime: (modTimes[path] ?? PAST).getTime() };
  });
}

async function writeLocal(dir: string, files: Record<string, Buffer>): Promise<void> {
  await writeTree(dir, files);
  for (const name of Object.keys(files)) await utimes(join(dir, ...name.split('/')), PAST, PAST);
}

t.test('rclone is installed', async (t) => {
  const v = await run('rclone', ['version'], { env });
  t.equal(v.code, 0, v.code === 0 ? `rclone: ${v.stdout.split('\n')[0] ?? ''}` : `rclone is missing or broken (apt-get install -y rclone; .ci/run installs it): ${v.stderr}`);
});

t.test('rclone over HTTP: copy, check, lsjson, sync, delete', async (t) => {
  const work = join(server.tmpRoot, 'http');
  const src = join(work, 'src');
  const files = treeFiles();
  await writeLocal(src, files);
  const remote = `s3edge:${BUCKET}/tree`;

  ok(t, await rclone(['mkdir', `s3edge:${BUCKET}`]), 'rclone mkdir (CreateBucket)');
  const copy = await rclone(['copy', src, remote]);
  ok(t, copy, 'rclone copy');

  // What rclone stored, seen with our own client: exactly the tree's keys and bytes.
  const keys = await root.listAllKeys(BUCKET, { prefix: 'tree/' });
  t.same(keys, s3Sorted(Object.keys(files).map((k) => `tree/${k}`)), 'the bucket holds exactly the tree (raw ListObjectsV2)');
  for (const [name, bytes] of Object.entries(files)) {
    const head = await root.headObject(BUCKET, `tree/${name}`);
    t.same([head.status, head.headers['etag'], head.headers['content-length']], [200, `"${md5Hex(bytes)}"`, String(bytes.length)], `stored ${name}: ETag and length`);
  }

  const check = await rclone(['check', src, remote]);
  ok(t, check, 'rclone check');
  t.same(checkCounts(check), { differences: 0, matching: Object.keys(files).length }, 'rclone check: 0 differences, every file matching by MD5');

  const ls = await lsjson(remote);
  ok(t, ls.r, 'rclone lsjson');
  t.same(ls.entries, expectedEntries(files), 'lsjson: exact paths, sizes, MD5s and modtimes (from rclone metadata)');

  // Local changes, then sync: one file deleted, one rewritten with a new size, one added.
  const removed = 'hash#tag/#1.txt';
  await unlink(join(src, ...removed.split('/')));
  const changedName = 'nested/a/other.txt';
  const changed = randomBytes(5000);
  const addedName = 'added/ñew file+.bin';
  const added = randomBytes(3333);
  await writeLocal(src, { [changedName]: changed, [addedName]: added });
  const synced: Record<string, Buffer> = { ...files, [changedName]: changed, [addedName]: added };
  delete synced[removed];
  const sync = await rclone(['sync', '-v', src, remote]);
  ok(t, sync, 'rclone sync');
  t.match(sync.stderr, `${removed}: Deleted`, 'sync deleted the removed file');
  const afterSync = await lsjson(remote);
  ok(t, afterSync.r, 'lsjson after sync');
  t.same(afterSync.entries, expectedEntries(synced), 'after sync the remote mirrors the local tree');
  const head = await root.headObject(BUCKET, `tree/${removed}`);
  t.equal(head.status, 404, 'the deleted file is gone from the server');
  const check2 = await rclone(['check', src, remote]);
  ok(t, check2, 'rclone check after sync');
  t.same(checkCounts(check2), { differences: 0, matching: Object.keys(synced).length }, 'check after sync: 0 differences');

  // rclone download: a fresh copy down equals the local tree.
  const down = join(work, 'down');
  ok(t, await rclone(['copy', remote, down]), 'rclone copy down');
  t.same(await hashTree(down), await hashTree(src), 'downloaded tree equals the local one, by SHA-256');

  const del = await rclone(['delete', `${remote}/nested`]);
  ok(t, del, 'rclone delete of a folder');
  const afterDelete = await lsjson(remote);
  t.same(
    afterDelete.entries.map((e) => e.path),
    s3Sorted(Object.keys(synced).filter((k) => !k.startsWith('nested/'))),
    'rclone delete removed exactly the files under nested/',
  );
  t.same(await root.listAllKeys(BUCKET, { prefix: 'tree/nested/' }), [], 'no key under nested/ on the server');
});

t.test('rclone over HTTP: a modtime-only change updates metadata with a REPLACE self-copy; touch', async (t) => {
  const work = join(server.tmpRoot, 'mtime');
  const src = join(work, 'src');
  const files = treeFiles();
  delete files['medium/six-mib.bin'];
  await writeLocal(src, files);
  const remote = `s3edge:${BUCKET}/mtime`;
  ok(t, await rclone(['copy', src, remote]), 'rclone copy');

  // A modtime-only change: same bytes, newer mtime. rclone sees equal MD5s and updates the
  // object's metadata in place (CopyObject onto itself with REPLACE), with no upload.
  const newTime = new Date('2025-05-06T07:08:09Z');
  const touched = 'with space/file name.txt';
  await utimes(join(src, ...touched.split('/')), newTime, newTime);
  const recopy = await rclone(['copy', '-v', src, remote]);
  ok(t, recopy, 'rclone copy after a local touch');
  t.match(recopy.stderr, `${touched}: Updated modification time in destination`, 'rclone updated the modtime in place');
  t.notMatch(recopy.stderr, /Copied \(/, 'nothing was uploaded again');
  const afterTouch = await lsjson(remote);
  ok(t, afterTouch.r, 'lsjson after the modtime update');
  t.same(afterTouch.entries, expectedEntries(files, { [touched]: newTime }), 'lsjson shows the new ModTime, everything else unchanged');
  const headTouched = await root.headObject(BUCKET, `mtime/${touched}`);
  t.equal(headTouched.headers['etag'], `"${md5Hex(files[touched] ?? Buffer.alloc(0))}"`, 'the self-copy kept the bytes');

  // rclone touch on an existing object: the same metadata update, driven from the remote side.
  const touchTime = new Date('2023-03-04T05:06:07Z');
  const rtouch = await rclone(['touch', '--no-create', '--timestamp', '2023-03-04T05:06:07', `${remote}/readme.txt`]);
  ok(t, rtouch, 'rclone touch of an existing object');
  const afterRtouch = await lsjson(remote);
  ok(t, afterRtouch.r, 'lsjson after rclone touch');
  t.same(afterRtouch.entries, expectedEntries(files, { [touched]: newTime, 'readme.txt': touchTime }), 'lsjson shows the touched ModTime');

  const check = await rclone(['check', src, remote]);
  ok(t, check, 'rclone check after the metadata updates');
  t.same(checkCounts(check), { differences: 0, matching: Object.keys(files).length }, 'check: 0 differences (the self-copies kept every byte)');
});

t.test('rclone over HTTP: a 300 MiB copyto goes multipart and reads back intact', async (t) => {
  const work = join(server.tmpRoot, 'big');
  const path = join(work, 'three-hundred.bin');
  const size = 300 * MiB;
  const digest = await writeBigFile(path, size);
  const remotePath = `s3edge:${BUCKET}/big/three hundred+.bin`;
  const up = await rclone(['copyto', path, remotePath]);
  ok(t, up, 'rclone copyto 300 MiB');

  // rclone's defaults: upload_cutoff 200 MiB, chunk_size 5 MiB -> 60 parts.
  const head = await root.headObject(BUCKET, 'big/three hundred+.bin');
  t.equal(head.status, 200, 'HEAD of the big object');
  t.equal(head.headers['content-length'], String(size), 'Content-Length');
  t.equal(head.headers['etag'], await multipartEtagOfFile(path, 5 * MiB), 'multipart ETag: MD5 of the 60 part MD5s, -60');

  const cat = await runHashingStdout('rclone', ['cat', remotePath, '--retries', '1', '--low-level-retries', '1'], { env });
  t.equal(cat.code, 0, describeRun('rclone cat of the 300 MiB object', { code: cat.code, stdout: '', stderr: cat.stderr }));
  t.equal(cat.bytes, size, 'downloaded length');
  t.equal(cat.sha256, digest.sha256, 'downloaded bytes have the SHA-256 of the upload');
  const ls = await lsjson(`s3edge:${BUCKET}/big`);
  t.same(
    ls.entries.map((e) => [e.path, e.size, e.md5]),
    [['three hundred+.bin', size, digest.md5]],
    'lsjson: path, size and the MD5 rclone recorded for the multipart object',
  );
  await rm(work, { recursive: true, force: true });
});

t.test('rclone over HTTPS (--ca-cert): copy and check', async (t) => {
  const work = join(server.tmpRoot, 'https');
  const src = join(work, 'src');
  const files = treeFiles();
  await writeLocal(src, files);
  const remote = 's3edgetls:rclone-tls/tree';
  const tlsFlags = ['--ca-cert', server.caFile ?? ''];
  ok(t, await rclone(['mkdir', 's3edgetls:rclone-tls'], tlsFlags), 'rclone mkdir over HTTPS');
  ok(t, await rclone(['copy', src, remote], tlsFlags), 'rclone copy over HTTPS');
  const check = await rclone(['check', src, remote], tlsFlags);
  ok(t, check, 'rclone check over HTTPS');
  t.same(checkCounts(check), { differences: 0, matching: Object.keys(files).length }, 'check over HTTPS: 0 differences');
  const ls = await lsjson(remote, tlsFlags);
  ok(t, ls.r, 'lsjson over HTTPS');
  t.same(ls.entries, expectedEntries(files), 'lsjson over HTTPS: exact paths, sizes, MD5s, modtimes');
  const down = join(work, 'down');
  ok(t, await rclone(['copy', remote, down], tlsFlags), 'rclone copy down over HTTPS');
  t.same(await hashTree(down), await hashTree(src), 'downloaded tree equals the local one, by SHA-256');
});
