// Bucket versioning (docs/COMPATIBILITY.md "Versioning") driven by boto3 (test/python/
// boto3_versioning.py: one scenario, judged here), aws cli, rclone, and raw signed requests for the
// edges clients never send. One server for the file.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../helpers/server.js';
import { awsForServer, isolatedAwsEnv } from '../helpers/aws-cli.js';
import { md5Base64 } from '../helpers/checksums.js';
import { RawS3, errorCode } from '../helpers/s3-client.js';
import { xmlBlocks, xmlText, xmlTexts } from '../helpers/xml.js';

const PY_SCRIPT = fileURLToPath(new URL('../../../test/python/boto3_versioning.py', import.meta.url));

const server = await startServer();
t.teardown(() => server.stop());
const { files: awsFiles, aws } = await awsForServer(server);
const root = new RawS3({ url: server.url }, server.rootKey);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, cwd: server.tmpRoot, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

function putVersioning(bucket: string, body: string): Promise<Awaited<ReturnType<RawS3['send']>>> {
  const bytes = Buffer.from(body);
  return root.send({ method: 'PUT', bucket, query: q('versioning'), body: bytes, headers: { 'content-md5': md5Base64(bytes) } });
}

/** A query string as the request helper takes it (values decoded; it encodes them itself). */
function q(query: string): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(query));
}

const VERSION_ID = /^[A-Za-z0-9_-]{32}$/;

// `any`: the JSON document of the Python side, read field by field.
t.test('boto3: a versioned bucket from first write to bucket delete', async (t) => {
  const bucket = 'ver-boto3';
  t.equal((await root.createBucket(bucket)).status, 200);
  const r = await run('python3', [PY_SCRIPT, '--endpoint', server.url, '--bucket', bucket], isolatedAwsEnv(awsFiles, server.rootKey));
  t.equal(r.code, 0, r.stderr);
  const o = JSON.parse(r.stdout) as Record<string, any>;
  t.notOk(o.exception, o.exception);

  // Never versioned: no version id anywhere; the object listed as the "null" version.
  t.equal(o.initialStatus, null, 'GetBucketVersioning of a new bucket: no Status');
  t.equal(o.prePutVersionId, null, 'PutObject on a never-versioned bucket: no x-amz-version-id');
  t.same(o.preListing, [['V', 'doc.txt', 'null', true, 2, '"9abcde3c584628a02620bf796dee1204"']], 'ListObjectVersions: the null version');

  t.equal(o.enabledStatus, 'Enabled');
  const ids = o.putIds as string[];
  t.equal(new Set(ids).size, 3, 'three distinct version ids');
  for (const id of ids) t.match(id, VERSION_ID, 'version ids: 32 URL-safe characters');
  t.same(o.headLatest, { versionId: ids[2], length: 2 }, 'HEAD: the latest version and its id');
  t.same(o.getById, ['v1', 'v2', 'v3'], 'GET ?versionId= each version');
  t.equal(o.getNull, 'v0', 'the object written before versioning is the "null" version');
  t.equal(o.headNull, 'null');
  t.same(o.listing.map((e: any[]) => [e[0], e[2], e[3]]), [['V', ids[2], true], ['V', ids[1], false], ['V', ids[0], false], ['V', 'null', false]], 'versions newest first, IsLatest on the newest');
  t.same(o.plainList, ['doc.txt'], 'ListObjectsV2 lists the key once');
  t.match(o.unknownVersion, { error: { status: 404, code: 'NoSuchVersion' } });
  t.match(o.invalidVersion, { error: { status: 400, code: 'InvalidArgument', message: 'Invalid version id specified' } });

  // Delete markers.
  t.equal(o.deleteMarker.marker, true, 'DELETE on an Enabled bucket: x-amz-delete-marker');
  t.match(o.deleteMarker.versionId, VERSION_ID, 'and the delete marker\'s version id');
  const marker = o.deleteMarker.versionId as string;
  t.match(o.getAfterDelete, { error: { status: 404, code: 'NoSuchKey', deleteMarker: 'true', versionId: marker } }, 'GET of a deleted key: 404 with x-amz-delete-marker');
  t.match(o.headAfterDelete, { error: { status: 404, deleteMarker: 'true', versionId: marker } }, 'HEAD likewise');
  t.match(o.getMarkerById, { error: { status: 405, code: 'MethodNotAllowed', deleteMarker: 'true', versionId: marker } }, 'GET of a delete marker by id: 405');
  t.ok(o.getMarkerById.error.lastModified, '405 carries Last-Modified');
  t.equal(o.getOldAfterDelete, 'v2', 'older versions stay readable by id');
  t.same(o.plainListAfterDelete, [], 'ListObjectsV2 hides a key whose latest is a delete marker');
  t.same(o.listingAfterDelete.map((e: any[]) => [e[0], e[2], e[3]]), [['V', ids[2], false], ['V', ids[1], false], ['V', ids[0], false], ['V', 'null', false], ['D', marker, true]], 'the marker is the latest');
  t.same(o.removeMarker, { marker: true, versionId: marker }, 'DELETE ?versionId=<marker>: removed, x-amz-delete-marker: true');
  t.equal(o.getAfterMarkerRemoved, 'v3', 'the newest version is current again');
  t.same(o.removeCurrent, { marker: null, versionId: ids[2] }, 'DELETE ?versionId=<current>');
  t.same(o.getAfterCurrentRemoved, { body: 'v2', versionId: ids[1] }, 'the previous version becomes current');
  t.same(o.removeMissing, { ok: 204 }, 'DELETE of a version that does not exist: 204');

  // Copies, conditional writes, multipart.
  t.match(o.copy, { sourceVersionId: ids[0], body: 'v1' }, 'CopyObject from a version: x-amz-copy-source-version-id');
  t.match(o.copy.versionId, VERSION_ID, 'the copy is a new version');
  t.match(o.copyFromMarker, { error: { status: 400, code: 'InvalidRequest' } }, 'copy source naming a delete marker: 400');
  t.match(o.ifNoneMatchOverMarker, { ok: VERSION_ID }, 'If-None-Match: * succeeds over a delete marker');
  t.match(o.ifNoneMatchOverObject, { error: { status: 412, code: 'PreconditionFailed' } }, 'and fails over an object');
  t.match(o.multipart.versionId, VERSION_ID, 'CompleteMultipartUpload: x-amz-version-id');
  t.equal(o.multipart.headVersionId, o.multipart.versionId);
  t.equal(o.multipartOld, 5 * 1024 * 1024, 'an overwritten multipart object stays readable by id');

  // Suspended.
  t.equal(o.suspendedStatus, 'Suspended');
  t.equal(o.suspendedPut, 'null', 'PutObject on a Suspended bucket: version id "null"');
  t.equal(o.suspendedPut2, 'null');
  t.same(o.suspendedListing.map((e: any[]) => [e[2], e[3]]), [['null', true], [ids[1], false], [ids[0], false]], 'one null version: the old null version and the overwritten null one are gone');
  t.same(o.suspendedDelete, { marker: true, versionId: 'null' }, 'DELETE on a Suspended bucket: a null delete marker');
  t.same(o.suspendedListingAfterDelete.map((e: any[]) => [e[0], e[2], e[3]]), [['V', ids[1], false], ['V', ids[0], false], ['D', 'null', true]], 'the null version replaced by the null marker');

  // DeleteObjects with versions.
  const del = o.deleteObjects;
  t.equal(del.deleted.length, 3);
  t.same(del.deleted[0], { Key: 'multi/a', VersionId: del.deleted[0].VersionId, DeleteMarker: null, DeleteMarkerVersionId: null }, 'a version removed by id');
  t.match(del.deleted[0].VersionId, VERSION_ID);
  t.match(del.deleted[1], { Key: 'multi/b', VersionId: null, DeleteMarker: true, DeleteMarkerVersionId: VERSION_ID }, 'a delete marker made: DeleteMarker, DeleteMarkerVersionId');
  t.same(del.deleted[2], { Key: 'multi/c', VersionId: 'C'.repeat(32), DeleteMarker: null, DeleteMarkerVersionId: null }, 'a missing version: Deleted');
  t.same(del.errors, [{ Key: 'multi/d', VersionId: 'bad', Code: 'InvalidArgument' }], 'an invalid version id: a per-key error');
  t.same(o.multiListing.map((e: any[]) => [e[0], e[1], e[3]]), [['V', 'multi/a', true], ['V', 'multi/b', false], ['D', 'multi/b', true]]);

  // Pagination: the same entries in the same order at any page size; a delimiter rolls keys up.
  const [pages2, all2] = o.pages2 as [any[], any[][]];
  const [pages1000, all1000] = o.pages1000 as [any[], any[][]];
  t.equal(pages1000.length, 1);
  t.equal(all1000.length, 11, '3 + 3 + marker + 3 + 1 entries under page/');
  const order = (es: any[][]): string[] => es.map((e) => `${e[0]}/${e[1]}`).sort();
  t.same(order(all2), order(all1000), 'MaxKeys=2 pages hold the same entries');
  t.same(pages2.map((p) => p.n), [2, 2, 2, 2, 2, 1], 'full pages of 2');
  t.ok(pages2.slice(0, -1).every((p) => p.truncated && p.nextKey && p.nextVersion), 'IsTruncated with NextKeyMarker and NextVersionIdMarker');
  const keysInOrder = all2.map((e) => e[0]);
  t.same(keysInOrder, [...keysInOrder].sort(), 'keys ascending across pages');
  t.same(all2.filter((e) => e[3]).map((e) => e[0]), ['page/k0', 'page/k1', 'page/k2', 'page/sub/x'], 'one IsLatest per key');
  const [pagesD, allD] = o.pagesDelimiter as [any[], any[][]];
  t.same(pagesD.flatMap((p) => p.prefixes), ['page/sub/'], 'Delimiter: CommonPrefixes');
  t.equal(allD.length, 10, 'the rolled-up key is not listed');

  t.match(o.deleteBucketNotEmpty, { error: { status: 409, code: 'BucketNotEmpty' } }, 'DeleteBucket refused while versions remain');
  t.same(o.leftAfterPurge, []);
  t.same(o.deleteBucket, { ok: 204 }, 'DeleteBucket once every version and marker is gone');

  // Tags, GetObjectAttributes, copies and POST uploads on versions (a second bucket).
  const w = o.seams;
  t.ok(w, 'the tagging/attributes scenario ran');
  if (!w) return;
  const [v2, v3] = w.ids as string[];
  t.same(w.getNull, { tags: [['a', '1']], versionId: 'null' }, 'GetObjectTagging ?versionId=null: the noncurrent "null" version\'s tags');
  t.same(w.getV2, { tags: [['b', '2']], versionId: v2 }, 'GetObjectTagging of a noncurrent version, x-amz-version-id');
  t.same(w.getCurrent, { tags: [], versionId: v3 }, 'GetObjectTagging without a version id: the current version');
  t.equal(w.putV2, v2, 'PutObjectTagging ?versionId=: x-amz-version-id of that version');
  t.same(w.deleteNull, { status: 204, versionId: 'null' }, 'DeleteObjectTagging ?versionId=null');
  t.equal(w.putCurrent, v3, 'PutObjectTagging of the current version names it');
  t.same(w.after, { null: [], v2: [['c', '3']], v3: [['cur', 'x']] }, 'each version\'s tags changed alone');
  t.equal(w.listingUnchanged, true, 'tag changes move no version and keep LastModified and ETag');
  t.equal(w.headV2TagCount, 1, 'HeadObject of a version: x-amz-tagging-count of that version');
  t.equal(w.getNullTagCount, null, 'GetObject of an untagged version: no x-amz-tagging-count');
  t.match(w.tagMalformed, { error: { status: 400, code: 'InvalidArgument', message: 'Invalid version id specified' } });
  t.match(w.tagUnknown, { error: { status: 404, code: 'NoSuchVersion' } });
  t.same(w.attrsV2, { versionId: v2, size: 3, etag: w.listingV2[3].replace(/"/g, ''), lastModified: w.listingV2[2] }, 'GetObjectAttributes ?versionId=: that version');
  t.match(w.attrsNull, { versionId: 'null', size: 3 });
  t.match(w.attrsCurrent, { versionId: v3, size: 5 });
  t.match(w.attrsUnknown, { error: { status: 404, code: 'NoSuchVersion' } });
  t.match(w.attrsMalformed, { error: { status: 400, code: 'InvalidArgument' } });
  t.same(w.copy, { sourceVersionId: v2, tags: [['c', '3']] }, 'CopyObject from a version copies that version\'s tags');
  t.same(w.multipart, { old: [['m', '1']], current: [] }, 'a tagged multipart version keeps its tags once noncurrent');
  const wMarker = w.marker as string;
  t.match(w.tagOverMarker, { error: { status: 404, code: 'NoSuchKey', deleteMarker: 'true', versionId: wMarker } }, 'GetObjectTagging over a delete marker: NoSuchKey');
  t.match(w.putTagOverMarker, { error: { status: 404, code: 'NoSuchKey' } });
  for (const name of ['tagMarkerById', 'putTagMarkerById', 'deleteTagMarkerById', 'attrsMarkerById']) {
    t.match(w[name], { error: { status: 405, code: 'MethodNotAllowed', deleteMarker: 'true', versionId: wMarker } }, `${name}: 405 for a delete marker named by id`);
  }
  t.match(w.attrsOverMarker, { error: { status: 404, code: 'NoSuchKey', deleteMarker: 'true' } }, 'GetObjectAttributes over a delete marker');
  t.same(w.tagBehindMarker, { tags: [['c', '3']], versionId: v2 }, 'versions behind a delete marker keep their tags');
  t.match(w.post, { status: 204, versionId: VERSION_ID }, 'POST upload on a versioned bucket: x-amz-version-id');
  t.equal(w.postHead, w.post.versionId, 'the POSTed version is the current one');
});

t.test('aws cli: put-bucket-versioning, list-object-versions, get-object --version-id', async (t) => {
  const bucket = 'ver-awscli';
  t.equal((await root.createBucket(bucket)).status, 200);
  const enable = await aws(['s3api', 'put-bucket-versioning', '--bucket', bucket, '--versioning-configuration', 'Status=Enabled']);
  t.equal(enable.code, 0, enable.stderr);
  const ids: string[] = [];
  for (const body of ['one', 'two']) {
    const put = await root.putObject(bucket, 'dir/f.txt', Buffer.from(body));
    ids.push(put.headers['x-amz-version-id'] ?? '');
  }
  const list = await aws(['s3api', 'list-object-versions', '--bucket', bucket, '--prefix', 'dir/']);
  t.equal(list.code, 0, list.stderr);
  if (list.code === 0) {
    const listed = JSON.parse(list.stdout) as { Versions: Array<{ VersionId: string; IsLatest: boolean; Owner: { ID: string } }> };
    t.same(listed.Versions.map((v) => [v.VersionId, v.IsLatest]), [[ids[1], true], [ids[0], false]], 'list-object-versions: newest first');
    t.ok(listed.Versions.every((v) => v.Owner.ID), 'Owner');
  }
  const out = join(server.tmpRoot, 'out.txt');
  const old = await aws(['s3api', 'get-object', '--bucket', bucket, '--key', 'dir/f.txt', '--version-id', ids[0] ?? '', out]);
  t.equal(old.code, 0, old.stderr);
  if (old.code === 0) t.equal((JSON.parse(old.stdout) as { VersionId: string }).VersionId, ids[0], 'get-object --version-id');
  t.equal(await readFile(out, 'utf8'), 'one', 'the old version\'s bytes');
});

t.test('raw: never-versioned buckets answer as before; configuration and listing edges', async (t) => {
  const plain = 'ver-plain';
  t.equal((await root.createBucket(plain)).status, 200);
  const put = await root.putObject(plain, 'k', Buffer.from('x'));
  t.equal(put.headers['x-amz-version-id'], undefined, 'PUT: no x-amz-version-id');
  const get = await root.send({ method: 'GET', bucket: plain, key: 'k' });
  t.equal(get.headers['x-amz-version-id'], undefined, 'GET: no x-amz-version-id');
  const nullGet = await root.send({ method: 'GET', bucket: plain, key: 'k', query: q('versionId=null') });
  t.equal(nullGet.status, 200, '?versionId=null is the object');
  t.equal(nullGet.headers['x-amz-version-id'], 'null');
  t.equal(errorCode(await root.send({ method: 'GET', bucket: plain, key: 'k', query: q(`versionId=${'x'.repeat(32)}`) })), 'NoSuchVersion');
  t.equal(errorCode(await root.send({ method: 'GET', bucket: plain, key: 'k', query: q('versionId=') })), 'InvalidArgument', 'an empty version id');
  const del = await root.send({ method: 'DELETE', bucket: plain, key: 'k' });
  t.equal(del.status, 204);
  t.equal(del.headers['x-amz-version-id'], undefined, 'DELETE: no x-amz-version-id');
  t.equal(del.headers['x-amz-delete-marker'], undefined, 'and no delete marker');
  const config = await root.send({ method: 'GET', bucket: plain, query: q('versioning') });
  t.equal(xmlBlocks(config.text, 'Status').length, 0, 'GetBucketVersioning: empty configuration');

  // PutBucketVersioning bodies.
  t.equal(errorCode(await putVersioning(plain, '<VersioningConfiguration><Status>Disabled</Status></VersioningConfiguration>')), 'MalformedXML', 'Status Disabled');
  t.equal(errorCode(await putVersioning(plain, '<VersioningConfiguration><Other/></VersioningConfiguration>')), 'MalformedXML');
  t.equal(errorCode(await putVersioning(plain, '<Versioning><Status>Enabled</Status></Versioning>')), 'MalformedXML');
  const mfa = await putVersioning(plain, '<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Enabled</MfaDelete></VersioningConfiguration>');
  t.equal(mfa.status, 501, 'MfaDelete Enabled: 501');
  t.equal(errorCode(mfa), 'NotImplemented');
  t.equal(xmlBlocks((await root.send({ method: 'GET', bucket: plain, query: q('versioning') })).text, 'Status').length, 0, 'nothing changed by refused bodies');
  const suspend = await putVersioning(plain, '<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Suspended</Status><MfaDelete>Disabled</MfaDelete></VersioningConfiguration>');
  t.equal(suspend.status, 200, 'Suspended on a never-versioned bucket');
  t.equal(xmlText((await root.send({ method: 'GET', bucket: plain, query: q('versioning') })).text, 'Status'), 'Suspended');

  // ListObjectVersions parameters.
  const bucket = 'ver-raw';
  t.equal((await root.createBucket(bucket)).status, 200);
  t.equal((await putVersioning(bucket, '<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>')).status, 200);
  for (const key of ['a b+c', 'a b+c', 'z']) await root.putObject(bucket, key, Buffer.from(key));
  const noKeyMarker = await root.send({ method: 'GET', bucket, query: q(`versions&version-id-marker=${'A'.repeat(32)}`) });
  t.equal(noKeyMarker.status, 400, 'version-id-marker without key-marker');
  t.equal(errorCode(noKeyMarker), 'InvalidArgument');
  t.equal(errorCode(await root.send({ method: 'GET', bucket, query: q('versions&key-marker=a&version-id-marker=nope') })), 'InvalidArgument', 'an invalid version-id-marker');
  t.equal(errorCode(await root.send({ method: 'GET', bucket, query: q('versions&max-keys=x') })), 'InvalidArgument');
  const encoded = await root.send({ method: 'GET', bucket, query: q('versions&encoding-type=url') });
  t.equal(encoded.status, 200);
  t.same(xmlTexts(encoded.text, 'Key'), ['a%20b%2Bc', 'a%20b%2Bc', 'z'], 'encoding-type=url encodes keys');
  t.equal(xmlText(encoded.text, 'EncodingType'), 'url');
  const first = await root.send({ method: 'GET', bucket, query: q('versions&max-keys=1') });
  t.equal(xmlText(first.text, 'IsTruncated'), 'true');
  const nextKey = xmlText(first.text, 'NextKeyMarker') ?? '';
  const nextVersion = xmlText(first.text, 'NextVersionIdMarker') ?? '';
  t.equal(nextKey, 'a b+c');
  const second = await root.send({ method: 'GET', bucket, query: q(`versions&max-keys=1&key-marker=${encodeURIComponent(nextKey)}&version-id-marker=${nextVersion}`) });
  t.same(xmlTexts(second.text, 'Key'), ['a b+c'], 'resumes within the key');
  t.equal(xmlText(second.text, 'IsLatest'), 'false');
  t.equal(xmlText(second.text, 'VersionIdMarker'), nextVersion, 'VersionIdMarker echoed');
  const afterKey = await root.send({ method: 'GET', bucket, query: q(`versions&key-marker=${encodeURIComponent(nextKey)}`) });
  t.same(xmlTexts(afterKey.text, 'Key'), ['z'], 'key-marker alone skips every version of that key');
  const gone = await root.send({ method: 'GET', bucket, query: q(`versions&key-marker=${encodeURIComponent(nextKey)}&version-id-marker=${'Q'.repeat(32)}`) });
  t.same(xmlTexts(gone.text, 'Key'), ['z'], 'a version-id-marker that no longer exists resumes after its key');
  // Versions and delete markers interleaved in one order (key, then newest first), as AWS lists them.
  t.equal((await root.send({ method: 'DELETE', bucket, key: 'a b+c' })).status, 204);
  await root.putObject(bucket, 'a b+c', Buffer.from('after the marker'));
  const mixed = await root.send({ method: 'GET', bucket, query: q('versions') });
  const order = [...mixed.text.matchAll(/<(Version|DeleteMarker)><Key>([^<]*)<\/Key>/g)].map((m) => `${m[1]} ${m[2]}`);
  t.same(order, ['Version a b+c', 'DeleteMarker a b+c', 'Version a b+c', 'Version a b+c', 'Version z'], 'a delete marker between the versions it came between');
});

t.test('rclone: backend versioning, --s3-versions, --s3-version-at', async (t) => {
  const bucket = 'ver-rclone';
  const home = join(server.tmpRoot, 'rclone-home');
  await mkdir(home, { recursive: true });
  const configFile = join(home, 'rclone.conf');
  await writeFile(configFile, '');
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('RCLONE_') && !k.startsWith('AWS_')) env[k] = v;
  Object.assign(env, {
    RCLONE_CONFIG: configFile, HOME: home, XDG_CONFIG_HOME: home, XDG_CACHE_HOME: home,
    RCLONE_CONFIG_VER_TYPE: 's3', RCLONE_CONFIG_VER_PROVIDER: 'Other', RCLONE_CONFIG_VER_ENDPOINT: server.url,
    RCLONE_CONFIG_VER_ACCESS_KEY_ID: server.rootKey.accessKeyId, RCLONE_CONFIG_VER_SECRET_ACCESS_KEY: server.rootKey.secretAccessKey,
    RCLONE_CONFIG_VER_REGION: 'us-east-1', RCLONE_CONFIG_VER_FORCE_PATH_STYLE: 'true',
  });
  const rclone = (args: string[]): Promise<Run> => run('rclone', [...args, '--retries', '1', '--low-level-retries', '1'], env);
  t.equal((await root.createBucket(bucket)).status, 200);
  const before = await rclone(['backend', 'versioning', `ver:${bucket}`]);
  t.equal(before.code, 0, before.stderr);
  t.equal(before.stdout.trim(), 'Unversioned', 'rclone backend versioning: unversioned');
  const enable = await rclone(['backend', 'versioning', `ver:${bucket}`, 'Enabled']);
  t.equal(enable.code, 0, enable.stderr);
  t.equal(enable.stdout.trim(), 'Enabled');

  const file = join(server.tmpRoot, 'r.txt');
  await writeFile(file, 'first');
  t.equal((await rclone(['copyto', file, `ver:${bucket}/r.txt`])).code, 0);
  await new Promise((r) => setTimeout(r, 1500));
  const between = new Date().toISOString();
  await new Promise((r) => setTimeout(r, 1500));
  await writeFile(file, 'second!');
  t.equal((await rclone(['copyto', file, `ver:${bucket}/r.txt`])).code, 0);

  const plain = await rclone(['lsjson', `ver:${bucket}`]);
  t.same((JSON.parse(plain.stdout) as Array<{ Path: string }>).map((e) => e.Path), ['r.txt'], 'lsjson: the current version only');
  const all = await rclone(['lsjson', '--s3-versions', `ver:${bucket}`]);
  t.equal(all.code, 0, all.stderr);
  const entries = JSON.parse(all.stdout) as Array<{ Path: string; Size: number }>;
  t.equal(entries.length, 2, `lsjson --s3-versions: both versions (${entries.map((e) => e.Path).join(', ')})`);
  t.same(entries.map((e) => e.Size).sort(), [5, 7]);
  const at = await rclone(['cat', '--s3-version-at', between, `ver:${bucket}/r.txt`]);
  t.equal(at.code, 0, at.stderr);
  t.equal(at.stdout, 'first', '--s3-version-at reads the version current at that time');
  t.equal((await rclone(['deletefile', `ver:${bucket}/r.txt`])).code, 0);
  const afterDelete = await rclone(['lsjson', `ver:${bucket}`]);
  t.same(JSON.parse(afterDelete.stdout), [], 'deleted: hidden by a delete marker');
  const still = await rclone(['lsjson', '--s3-versions', `ver:${bucket}`]);
  t.equal((JSON.parse(still.stdout) as unknown[]).length, 2, 'both versions still there with --s3-versions');
});

t.test('restic on a versioned bucket: plain operations keep working', async (t) => {
  const bucket = 'ver-restic';
  t.equal((await root.createBucket(bucket)).status, 200);
  t.equal((await putVersioning(bucket, '<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>')).status, 200);
  const source = join(server.tmpRoot, 'restic-source');
  await mkdir(source, { recursive: true });
  await writeFile(join(source, 'a.txt'), 'restic on a versioned bucket\n');
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('RESTIC_') && !k.startsWith('AWS_')) env[k] = v;
  Object.assign(env, {
    AWS_ACCESS_KEY_ID: server.rootKey.accessKeyId,
    AWS_SECRET_ACCESS_KEY: server.rootKey.secretAccessKey,
    RESTIC_REPOSITORY: `s3:${server.url}/${bucket}/repo`,
    RESTIC_PASSWORD: 'versioned',
    RESTIC_CACHE_DIR: join(server.tmpRoot, 'restic-cache'),
  });
  for (const args of [['init'], ['backup', '--host', 'v', source], ['backup', '--host', 'v', source], ['forget', '--keep-last', '1', '--prune'], ['check']]) {
    const r = await run('restic', args, env);
    t.equal(r.code, 0, `restic ${args[0]}${r.code === 0 ? '' : `: ${r.stderr.slice(-2000)}`}`);
  }
  const snaps = await run('restic', ['snapshots', '--json'], env);
  t.equal((JSON.parse(snaps.stdout) as unknown[]).length, 1, 'one snapshot left after forget --prune');
  // restic's deletes (locks, the forgotten snapshot, pruned packs) became delete markers: hidden from
  // the plain listing restic reads, kept as versions.
  const versions = await root.send({ method: 'GET', bucket, query: q('versions') });
  t.ok(xmlBlocks(versions.text, 'DeleteMarker').length > 0, 'restic\'s deletes left delete markers');
});
