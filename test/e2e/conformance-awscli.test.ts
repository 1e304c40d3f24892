// Client conformance: aws-cli (v1, the real `aws` binary) against the real server.
//  - `aws s3 sync` of a generated tree with awkward names (spaces, + % # ?, unicode, emoji), a 0-byte
//    file and, over HTTPS, a 100 MiB file that goes multipart with the default 8 MiB threshold:
//    up, down into a fresh dir (every file compared by SHA-256), a re-sync that copies nothing.
//  - over HTTP: the same small tree, `sync --delete`, `rm --recursive`,
//    `cp --metadata-directive REPLACE` onto the same object, and `s3api` multipart by hand.
// aws-cli sends checksum trailers (STREAMING-UNSIGNED-PAYLOAD-TRAILER) over TLS and signed payloads
// with checksum headers over HTTP, so both upload paths are exercised.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startServer } from '../helpers/server.js';
import { runAws, writeAwsConfig, type AwsResult, type AwsTarget } from '../helpers/aws-cli.js';
import { md5Hex, sha256Hex } from '../helpers/checksums.js';
import { asArray, asRecord, hashTree, multipartEtag, multipartEtagOfFile, s3Sorted, writeBigFile, writeTree } from '../helpers/conformance.js';

const server = await startServer({ tls: true });
t.teardown(() => server.stop());
const awsFiles = await writeAwsConfig(server.tmpRoot);

const MiB = 1024 * 1024;
const BIG_NAME = 'big/hundred-mib.bin';
const BIG_SIZE = 100 * MiB;
const AWS_CHUNK = 8 * MiB; // aws-cli's default multipart_threshold and multipart_chunksize

// The small tree: relative path (also the key below the sync prefix) -> bytes.
const smallTree: Record<string, Buffer> = {
  'readme.txt': Buffer.from('s3edge conformance tree\n'),
  'empty.bin': Buffer.alloc(0),
  'nested/a/b/c/deep.txt': Buffer.from('deep\n'),
  'nested/a/sibling.bin': randomBytes(100 * 1024 + 17),
  'with space/file name.txt': randomBytes(321),
  'plus+sign/a+b.txt': randomBytes(222),
  'percent%25/100%.txt': randomBytes(111),
  'hash#tag/#1.txt': randomBytes(77),
  'question?/why?.txt': randomBytes(66),
  'unicode/é-café.txt': Buffer.from('é\n'),
  'unicode/文件/数据.txt': Buffer.from('文件\n'),
  'unicode/emoji-😀🚀.txt': randomBytes(1234),
  'mixed/a b+c%d#e?f&g=h;i,j@k$l!m~n\'o(p)q.txt': randomBytes(4321),
  'exactly-8mib.bin': randomBytes(AWS_CHUNK), // at the threshold: multipart with one part
};

// Local files get an mtime in the past: S3's LastModified has second granularity, and aws-cli
// re-uploads when the local mtime is newer than it. (AWS behaves the same.)
const PAST = new Date('2024-01-02T03:04:05Z');

async function writeSmallTree(dir: string): Promise<void> {
  await writeTree(dir, smallTree);
  for (const name of Object.keys(smallTree)) await utimes(join(dir, ...name.split('/')), PAST, PAST);
}

function target(endpoint: string, caFile?: string): AwsTarget {
  return { endpoint, caFile, credentials: server.rootKey, files: awsFiles };
}

type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

function ok(t: TapTest, r: AwsResult, what: string): boolean {
  return t.equal(r.code, 0, r.code === 0 ? `${what}: exit 0` : `${what}: exit 0\nstdout: ${r.stdout.slice(-3000)}\nstderr: ${r.stderr.slice(-5000)}`);
}

/** Keys (below `prefix`) named by the `upload:` / `download:` / `delete:` lines of aws s3 output. */
function transferred(stdout: string, verb: 'upload' | 'download' | 'delete', bucket: string, prefix: string): string[] {
  const s3Url = `s3://${bucket}/${prefix}`;
  const out: string[] = [];
  for (const line of stdout.split(/\r?\n/)) {
    if (!line.startsWith(`${verb}: `)) continue;
    if (verb === 'upload') {
      // upload: LOCAL to s3://bucket/prefixKEY
      const idx = line.lastIndexOf(` to ${s3Url}`);
      out.push(idx < 0 ? `?${line}` : line.slice(idx + 4 + s3Url.length));
    } else {
      // download: s3://bucket/prefixKEY to LOCAL   |   delete: s3://bucket/prefixKEY
      const head = `${verb}: ${s3Url}`;
      if (!line.startsWith(head)) {
        out.push(`?${line}`);
        continue;
      }
      const rest = line.slice(head.length);
      out.push(verb === 'download' ? rest.slice(0, rest.lastIndexOf(' to ')) : rest);
    }
  }
  return s3Sorted(out);
}

interface Listed {
  key: string;
  size: number;
  etag: string;
}

async function listAll(tg: AwsTarget, bucket: string, prefix: string): Promise<{ r: AwsResult; objects: Listed[] }> {
  const r = await runAws(tg, ['s3api', 'list-objects-v2', '--bucket', bucket, '--prefix', prefix]);
  const objects = asArray(asRecord(r.json)['Contents']).map((c) => {
    const o = asRecord(c);
    return { key: String(o['Key']).slice(prefix.length), size: Number(o['Size']), etag: String(o['ETag']) };
  });
  return { r, objects };
}

const smallKeys = s3Sorted(Object.keys(smallTree));

/** Sync a tree up and down again over one transport; returns the dirs for the caller's next steps. */
async function syncRoundTrip(t: TapTest, tg: AwsTarget, bucket: string, work: string, withBig: boolean): Promise<{ upDir: string; downDir: string; bigPath?: string }> {
  const upDir = join(work, 'up');
  const downDir = join(work, 'down');
  await writeSmallTree(upDir);
  const expectedTree: Record<string, { size: number; etag: string }> = {};
  for (const [name, bytes] of Object.entries(smallTree)) {
    expectedTree[name] = { size: bytes.length, etag: bytes.length >= AWS_CHUNK ? multipartEtag([bytes]) : `"${md5Hex(bytes)}"` };
  }
  let bigPath: string | undefined;
  if (withBig) {
    bigPath = join(upDir, ...BIG_NAME.split('/'));
    const big = await writeBigFile(bigPath, BIG_SIZE);
    await utimes(bigPath, PAST, PAST);
    expectedTree[BIG_NAME] = { size: big.size, etag: await multipartEtagOfFile(bigPath, AWS_CHUNK) };
  }
  const keys = s3Sorted(Object.keys(expectedTree));

  ok(t, await runAws(tg, ['s3', 'mb', `s3://${bucket}`]), 's3 mb');
  const up = await runAws(tg, ['s3', 'sync', upDir, `s3://${bucket}/tree/`, '--no-progress']);
  ok(t, up, 's3 sync up');
  t.same(transferred(up.stdout, 'upload', bucket, 'tree/'), keys, 'sync up uploaded every file once, with its name intact');

  const listed = await listAll(tg, bucket, 'tree/');
  ok(t, listed.r, 's3api list-objects-v2');
  t.same(
    listed.objects.map((o) => o.key),
    keys,
    'the bucket holds exactly the tree, in UTF-8 order',
  );
  for (const o of listed.objects) {
    const want = expectedTree[o.key];
    t.same({ size: o.size, etag: o.etag }, want, `listed size and ETag of ${o.key}${want && want.etag.includes('-') ? ' (multipart)' : ''}`);
  }

  const down = await runAws(tg, ['s3', 'sync', `s3://${bucket}/tree/`, downDir, '--no-progress']);
  ok(t, down, 's3 sync down into a fresh dir');
  t.same(transferred(down.stdout, 'download', bucket, 'tree/'), keys, 'sync down downloaded every object once');
  t.same(await hashTree(downDir), await hashTree(upDir), 'every downloaded file has the SHA-256 of its upload (0-byte file included)');

  const again = await runAws(tg, ['s3', 'sync', upDir, `s3://${bucket}/tree/`, '--no-progress']);
  ok(t, again, 're-sync up');
  t.same(again.stdout.split(/\r?\n/).filter((l) => l.startsWith('upload:')), [], `re-sync up copies nothing:\n${again.stdout}`);
  const againDown = await runAws(tg, ['s3', 'sync', `s3://${bucket}/tree/`, downDir, '--no-progress']);
  ok(t, againDown, 're-sync down');
  t.same(againDown.stdout.split(/\r?\n/).filter((l) => l.startsWith('download:')), [], `re-sync down copies nothing:\n${againDown.stdout}`);
  return { upDir, downDir, bigPath };
}

t.test('aws s3 sync over HTTPS, with a 100 MiB multipart file', async (t) => {
  const tg = target(server.tlsUrl ?? '', server.caFile);
  const work = join(server.tmpRoot, 'https');
  const { upDir, downDir } = await syncRoundTrip(t, tg, 'sync-tls', work, true);
  // The big file and its download are 200 MiB of temp space: gone as soon as they are checked.
  await rm(upDir, { recursive: true, force: true });
  await rm(downDir, { recursive: true, force: true });
});

t.test('aws s3 sync over HTTP, sync --delete, rm --recursive', async (t) => {
  const tg = target(server.url);
  const bucket = 'sync-http';
  const work = join(server.tmpRoot, 'http');
  const { upDir } = await syncRoundTrip(t, tg, bucket, work, false);

  // Local changes: three files deleted (one nested, one unicode, one with '#'), one rewritten with
  // a new size, one added.
  const removed = ['nested/a/b/c/deep.txt', 'unicode/emoji-😀🚀.txt', 'hash#tag/#1.txt'];
  for (const name of removed) await unlink(join(upDir, ...name.split('/')));
  const changed = randomBytes(999);
  await writeFile(join(upDir, 'with space', 'file name.txt'), changed);
  const added = randomBytes(4097);
  await mkdir(join(upDir, 'new dir'), { recursive: true });
  await writeFile(join(upDir, 'new dir', 'añadido+1.bin'), added);

  const del = await runAws(tg, ['s3', 'sync', upDir, `s3://${bucket}/tree/`, '--delete', '--no-progress']);
  ok(t, del, 's3 sync --delete');
  t.same(transferred(del.stdout, 'delete', bucket, 'tree/'), s3Sorted(removed), 'sync --delete deleted exactly the removed files');
  t.same(transferred(del.stdout, 'upload', bucket, 'tree/'), s3Sorted(['with space/file name.txt', 'new dir/añadido+1.bin']), 'and uploaded the changed and the new file');

  const expectedKeys = s3Sorted([...smallKeys.filter((k) => !removed.includes(k)), 'new dir/añadido+1.bin']);
  const listed = await listAll(tg, bucket, 'tree/');
  ok(t, listed.r, 'list after sync --delete');
  t.same(listed.objects.map((o) => o.key), expectedKeys, 'the bucket mirrors the local tree after sync --delete');
  const byKey = new Map(listed.objects.map((o) => [o.key, o]));
  t.same(byKey.get('with space/file name.txt'), { key: 'with space/file name.txt', size: changed.length, etag: `"${md5Hex(changed)}"` }, 'the changed file was replaced');
  t.same(byKey.get('new dir/añadido+1.bin'), { key: 'new dir/añadido+1.bin', size: added.length, etag: `"${md5Hex(added)}"` }, 'the new file arrived');

  const down2 = join(work, 'down2');
  ok(t, await runAws(tg, ['s3', 'sync', `s3://${bucket}/tree/`, down2, '--no-progress']), 'sync down after --delete');
  t.same(await hashTree(down2), await hashTree(upDir), 'a fresh download equals the changed local tree, byte for byte');

  const rmr = await runAws(tg, ['s3', 'rm', `s3://${bucket}/tree/`, '--recursive']);
  ok(t, rmr, 's3 rm --recursive');
  t.same(transferred(rmr.stdout, 'delete', bucket, 'tree/'), expectedKeys, 'rm --recursive deleted every object');
  const after = await runAws(tg, ['s3api', 'list-objects-v2', '--bucket', bucket, '--no-paginate']);
  ok(t, after, 'list after rm --recursive');
  t.equal(asRecord(after.json)['KeyCount'], 0, 'nothing is left in the bucket');
  t.same(asArray(asRecord(after.json)['Contents']), [], 'no Contents');
});

t.test('aws s3 cp --metadata-directive REPLACE onto the same object (HTTP)', async (t) => {
  const tg = target(server.url);
  const bucket = 'meta-http';
  const work = join(server.tmpRoot, 'meta');
  await mkdir(work, { recursive: true });
  const body = randomBytes(20_000);
  await writeFile(join(work, 'body.bin'), body);
  const key = 'docs/report 1+ü.txt';
  ok(t, await runAws(tg, ['s3', 'mb', `s3://${bucket}`]), 's3 mb');
  const put = await runAws(tg, [
    's3api', 'put-object', '--bucket', bucket, '--key', key, '--body', join(work, 'body.bin'),
    '--content-type', 'text/plain', '--cache-control', 'no-cache', '--content-disposition', 'inline',
    '--metadata', JSON.stringify({ old: '1', color: 'red' }),
  ]);
  ok(t, put, 's3api put-object with metadata');
  const before = await runAws(tg, ['s3api', 'head-object', '--bucket', bucket, '--key', key]);
  ok(t, before, 'head-object before');
  t.same(asRecord(before.json)['Metadata'], { old: '1', color: 'red' }, 'metadata before the copy');

  const cp = await runAws(tg, [
    's3', 'cp', `s3://${bucket}/${key}`, `s3://${bucket}/${key}`,
    '--metadata-directive', 'REPLACE', '--content-type', 'application/x-replaced', '--metadata', 'k=v,second=2',
  ]);
  ok(t, cp, 's3 cp --metadata-directive REPLACE (self-copy)');
  t.match(cp.stdout, `copy: s3://${bucket}/${key} to s3://${bucket}/${key}`, 'aws-cli reports the copy');

  const head = await runAws(tg, ['s3api', 'head-object', '--bucket', bucket, '--key', key]);
  ok(t, head, 'head-object after');
  const h = asRecord(head.json);
  t.equal(h['ContentType'], 'application/x-replaced', 'Content-Type replaced');
  t.same(h['Metadata'], { k: 'v', second: '2' }, 'user metadata replaced, not merged');
  t.equal(h['CacheControl'], undefined, 'Cache-Control replaced (REPLACE given none)');
  t.equal(h['ContentDisposition'], undefined, 'Content-Disposition replaced (REPLACE given none)');
  t.equal(h['ContentLength'], body.length, 'same length');
  t.equal(h['ETag'], `"${md5Hex(body)}"`, 'same bytes, same ETag');
  const get = await runAws(tg, ['s3api', 'get-object', '--bucket', bucket, '--key', key, join(work, 'after.bin')]);
  ok(t, get, 'get-object after');
  t.equal(sha256Hex(await readFile(join(work, 'after.bin')).catch(() => Buffer.from('missing'))), sha256Hex(body), 'bytes unchanged by the self-copy');

  // Without REPLACE, copying an object onto itself is refused (nothing would change).
  const same = await runAws(tg, ['s3api', 'copy-object', '--bucket', bucket, '--key', key, '--copy-source', `${bucket}/${key}`]);
  t.not(same.code, 0, 'copy-object onto itself without REPLACE fails');
  t.match(same.stderr, /InvalidRequest/, `copy-object onto itself without REPLACE: InvalidRequest (${same.stderr.trim()})`);
});

t.test('aws s3api multipart upload by hand (HTTP)', async (t) => {
  const tg = target(server.url);
  const bucket = 'mpu-http';
  const work = join(server.tmpRoot, 'mpu');
  await mkdir(work, { recursive: true });
  const part1 = randomBytes(5 * MiB + 1);
  const part2 = randomBytes(1_234_567);
  await writeFile(join(work, 'part1.bin'), part1);
  await writeFile(join(work, 'part2.bin'), part2);
  const key = 'by hand/ü+ #1.bin';
  ok(t, await runAws(tg, ['s3', 'mb', `s3://${bucket}`]), 's3 mb');

  const create = await runAws(tg, ['s3api', 'create-multipart-upload', '--bucket', bucket, '--key', key, '--content-type', 'application/x-parts']);
  ok(t, create, 'create-multipart-upload');
  const uploadId = asRecord(create.json)['UploadId'];
  t.type(uploadId, 'string', 'an UploadId');
  if (typeof uploadId !== 'string') return;
  t.equal(asRecord(create.json)['Key'], key, 'the key comes back as sent');

  // Part 2 first: parts may arrive in any order.
  const [up2, up1] = await Promise.all([
    runAws(tg, ['s3api', 'upload-part', '--bucket', bucket, '--key', key, '--upload-id', uploadId, '--part-number', '2', '--body', join(work, 'part2.bin')]),
    runAws(tg, ['s3api', 'upload-part', '--bucket', bucket, '--key', key, '--upload-id', uploadId, '--part-number', '1', '--body', join(work, 'part1.bin')]),
  ]);
  ok(t, up1, 'upload-part 1');
  ok(t, up2, 'upload-part 2');
  const etag1 = asRecord(up1.json)['ETag'];
  const etag2 = asRecord(up2.json)['ETag'];
  t.equal(etag1, `"${md5Hex(part1)}"`, 'part 1 ETag is its quoted MD5');
  t.equal(etag2, `"${md5Hex(part2)}"`, 'part 2 ETag is its quoted MD5');

  const uploads = await runAws(tg, ['s3api', 'list-multipart-uploads', '--bucket', bucket]);
  ok(t, uploads, 'list-multipart-uploads');
  t.same(asArray(asRecord(uploads.json)['Uploads']).map((u) => [asRecord(u)['Key'], asRecord(u)['UploadId']]), [[key, uploadId]], 'the upload is listed');

  const parts = await runAws(tg, ['s3api', 'list-parts', '--bucket', bucket, '--key', key, '--upload-id', uploadId]);
  ok(t, parts, 'list-parts');
  t.same(
    asArray(asRecord(parts.json)['Parts']).map((p) => [asRecord(p)['PartNumber'], asRecord(p)['Size'], asRecord(p)['ETag']]),
    [[1, part1.length, `"${md5Hex(part1)}"`], [2, part2.length, `"${md5Hex(part2)}"`]],
    'list-parts: numbers, sizes and ETags',
  );

  await writeFile(join(work, 'parts.json'), JSON.stringify({ Parts: [{ ETag: etag1, PartNumber: 1 }, { ETag: etag2, PartNumber: 2 }] }));
  const complete = await runAws(tg, [
    's3api', 'complete-multipart-upload', '--bucket', bucket, '--key', key, '--upload-id', uploadId,
    '--multipart-upload', `file://${join(work, 'parts.json')}`,
  ]);
  ok(t, complete, 'complete-multipart-upload');
  const expectedEtag = multipartEtag([part1, part2]);
  t.equal(asRecord(complete.json)['ETag'], expectedEtag, 'complete: ETag is the MD5 of the part MD5s, -2');
  t.equal(asRecord(complete.json)['Key'], key, 'complete: Key');

  const head = await runAws(tg, ['s3api', 'head-object', '--bucket', bucket, '--key', key]);
  ok(t, head, 'head-object');
  const h = asRecord(head.json);
  t.match(String(h['ETag']), /-2"$/, 'head-object ETag ends with -2');
  t.equal(h['ETag'], expectedEtag, 'head-object ETag exactly');
  t.equal(h['ContentLength'], part1.length + part2.length, 'head-object ContentLength');
  t.equal(h['ContentType'], 'application/x-parts', 'Content-Type given at create');

  const headPart = await runAws(tg, ['s3api', 'head-object', '--bucket', bucket, '--key', key, '--part-number', '2']);
  ok(t, headPart, 'head-object --part-number 2');
  t.equal(asRecord(headPart.json)['ContentLength'], part2.length, 'part 2 alone');
  t.equal(asRecord(headPart.json)['PartsCount'], 2, 'PartsCount');

  const get = await runAws(tg, ['s3api', 'get-object', '--bucket', bucket, '--key', key, join(work, 'whole.bin')]);
  ok(t, get, 'get-object');
  t.equal(sha256Hex(await readFile(join(work, 'whole.bin')).catch(() => Buffer.from('missing'))), sha256Hex(Buffer.concat([part1, part2])), 'the object is the two parts, in order');

  const gone = await runAws(tg, ['s3api', 'list-multipart-uploads', '--bucket', bucket]);
  ok(t, gone, 'list-multipart-uploads after complete');
  t.same(asArray(asRecord(gone.json)['Uploads']), [], 'no upload left in progress');
});
