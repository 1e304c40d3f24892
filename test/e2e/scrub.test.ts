// The scrub (src/storage/scrub.ts) against flipped bytes on disk: `s3edge scrub run` (another process,
// on the running server's data directory) finds exactly the blobs whose bytes no longer match the digest
// recorded at write time (their CRC32C), `scrub list` names their objects, the server's background scrub counts them
// in its metrics, and a rewritten object is no longer reported. A blob file lost from the disk is named
// as missing. `scrub run` exits 1 when it finds anything.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { apiUser, eventually, metricValue, query } from '../helpers/api.js';
import { flipBlobByte } from '../helpers/integrity.js';
import { RawS3 } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';

const BIG = 100 * 1024; // past the inline limit: a blob file of the disk backend
const BUCKET = 'scrubbed';

t.test('flipped bytes are found by the scrub, on demand and in the background', async (t) => {
  const server = await startServer({ env: { S3EDGE_INTEGRITY_SCRUB_INTERVAL_SECONDS: '1', S3EDGE_INTEGRITY_SCRUB_BYTES_PER_SECOND: '1GiB' } });
  t.teardown(() => server.stop());
  const s3 = new RawS3({ url: server.url }, server.rootKey);
  t.equal((await s3.createBucket(BUCKET)).status, 200);
  t.equal((await s3.putObject(BUCKET, 'single.bin', randomBytes(BIG))).status, 200);
  t.equal((await s3.putObject(BUCKET, 'healthy.bin', randomBytes(BIG))).status, 200);
  const created = await s3.send({ method: 'POST', bucket: BUCKET, key: 'multi.bin', query: { uploads: '' } });
  const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.text)?.[1] ?? '';
  const part = await s3.send({ method: 'PUT', bucket: BUCKET, key: 'multi.bin', query: { partNumber: '1', uploadId }, body: randomBytes(BIG) });
  const done = Buffer.from(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${part.headers['etag'] ?? ''}</ETag></Part></CompleteMultipartUpload>`);
  t.equal((await s3.send({ method: 'POST', bucket: BUCKET, key: 'multi.bin', query: { uploadId }, body: done })).status, 200);
  const alice = await apiUser(server, ['assets:read', 'assets:write', 'metrics:read']);
  await alice.client.upload({ file: randomBytes(BIG), fileName: 'fine.bin' });

  const small = randomBytes(1000);
  t.equal((await s3.putObject(BUCKET, 'small.bin', small)).status, 200, 'a small object, kept in meta.db');
  const clean = await server.cli(['scrub', 'run']);
  t.equal(clean.code, 0, 'nothing found: exit status 0');
  t.match(clean.json, { checked: 5, bytes: 4 * BIG + small.length, corrupt: 0, missing: 0 }, 'all five blobs check out, the inline one too');

  const single = query<{ blob_id: string }>(server, "SELECT blob_id FROM objects WHERE key = 'single.bin'")[0]?.blob_id ?? '';
  const parts = query<{ parts: string }>(server, "SELECT parts FROM objects WHERE key = 'multi.bin'")[0]?.parts ?? '[]';
  const partBlob = (JSON.parse(parts) as { blobId: string }[])[0]?.blobId ?? '';
  flipBlobByte(server, single, 12345);
  flipBlobByte(server, partBlob, 0);

  const found = await server.cli(['scrub', 'run']);
  t.equal(found.code, 1, 'damage found: exit status 1');
  t.match(found.json, { checked: 5, corrupt: 2, missing: 0 }, 'exactly the two flipped blobs');
  t.match(String((found.json as Record<string, unknown>)['corruptBlobs']), /object scrubbed\/single\.bin/);
  t.match(String((found.json as Record<string, unknown>)['corruptBlobs']), /part 1 of scrubbed\/multi\.bin/);
  const list = (await server.cli(['scrub', 'list'])).json as { owner: string; expected: string; actual: string; foundBy: string }[];
  t.same(list.map((c) => c.owner).sort(), ['object scrubbed/single.bin', 'part 1 of scrubbed/multi.bin']);
  for (const c of list) {
    t.match(c, { expected: /^crc32c:[0-9a-f]{8}$/, actual: /^crc32c:[0-9a-f]{8}$/, foundBy: 'scrub' }, `${c.owner}: both digests shown`);
    t.not(c.expected, c.actual, `${c.owner}: they differ`);
  }

  await eventually(async () => (await metricValue(server, alice.token, 's3edge_scrub_corrupt_found_total')) >= 2, 'the background scrub found them');
  t.equal(await metricValue(server, alice.token, 's3edge_corrupt_blobs'), 2, 'the gauge of marked blobs');

  t.equal((await s3.putObject(BUCKET, 'single.bin', randomBytes(BIG))).status, 200, 'the damaged object is rewritten');
  const after = (await server.cli(['scrub', 'run'])).json as Record<string, unknown>;
  t.match(after, { corrupt: 1 }, 'only the multipart part is left');
  t.same(((await server.cli(['scrub', 'list'])).json as { owner: string }[]).map((c) => c.owner), ['part 1 of scrubbed/multi.bin'], 'the rewritten object is no longer listed');

  // A blob file lost from the disk while its row still needs it.
  const lost = query<{ blob_id: string }>(server, "SELECT blob_id FROM objects WHERE key = 'healthy.bin'")[0]?.blob_id ?? '';
  rmSync(join(server.dataDir, 'storage', 'blobs', lost.slice(-2), lost));
  const missing = await server.cli(['scrub', 'run']);
  t.equal(missing.code, 1);
  t.match(missing.json, { missing: 1, missingBlobs: 'object scrubbed/healthy.bin' }, 'the lost blob is named');
  const marked = ((await server.cli(['scrub', 'list'])).json as { owner: string }[]).sort((a, b) => a.owner.localeCompare(b.owner));
  t.match(marked, [{ owner: 'object scrubbed/healthy.bin', actual: 'missing', foundBy: 'scrub' }, { owner: 'part 1 of scrubbed/multi.bin' }], 'and marked');
  await eventually(async () => (await metricValue(server, alice.token, 's3edge_scrub_missing_found_total')) >= 1, 'the background scrub counts it');
});
