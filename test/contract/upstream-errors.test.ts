// The upstream backend's error mapping, against real servers: an upstream that rejects our
// credentials (an s3edge gateway, which checks SigV4) and one that is gone (moto, killed).
import t, { type Test } from 'tap';
import { Readable } from 'node:stream';
import { S3Storage } from '../../src/storage/upstream/s3-storage.js';
import { isS3Error } from '../../src/errors/s3-errors.js';
import { startMoto } from '../helpers/moto.js';
import { startServer } from '../helpers/server.js';
import { RawS3 } from '../helpers/s3-client.js';

function noDetail(t: Test, err: unknown, secrets: string[]): void {
  t.ok(isS3Error(err), 'an S3Error');
  const shown = JSON.stringify({ message: (err as Error).message, ...(err as object) });
  for (const s of secrets) t.notOk(shown.includes(s), `nothing of ${s} is shown`);
}

t.test('wrong credentials: start-up fails naming the bucket; requests become 503 ServiceUnavailable', async (t) => {
  const server = await startServer({ upstream: false });
  t.teardown(() => server.stop());
  const root = new RawS3({ url: server.url }, server.rootKey);
  t.equal((await root.send({ method: 'PUT', bucket: 'upstream' })).status, 200);
  const storage = new S3Storage({
    endpoint: server.url,
    region: 'us-east-1',
    bucket: 'upstream',
    accessKeyId: server.rootKey.accessKeyId,
    secretAccessKey: 'not-the-secret',
    forcePathStyle: true,
    prefix: '',
  });
  t.teardown(() => storage.close());
  await t.rejects(storage.init(), /upstream storage: bucket upstream at http:\/\/127\.0\.0\.1:\d+ is not reachable/);
  const err = await storage.read('0123456789abcdefghijklmnop').catch((e: unknown) => e);
  t.match(err, { code: 'ServiceUnavailable', status: 503 });
  noDetail(t, err, [new URL(server.url).host, 'upstream', 'not-the-secret']);
  const staged = await storage.stage(Readable.from([Buffer.from('x')])).catch((e: unknown) => e);
  t.match(staged, { code: 'ServiceUnavailable', status: 503 });
});

t.test('upstream gone: 503 SlowDown with Retry-After, after retries, with no upstream detail', async (t) => {
  const moto = await startMoto({ bucket: 'gone-bucket' });
  const storage = new S3Storage({ ...moto.storageOptions('pre/') });
  t.teardown(() => storage.close());
  await storage.init();
  const staged = await storage.stage(Readable.from([Buffer.from('kept')]));
  await staged.commit();
  await moto.stop();
  const err = await storage.read(staged.blobId).catch((e: unknown) => e);
  t.match(err, { code: 'SlowDown', status: 503, headers: { 'Retry-After': '1' } });
  noDetail(t, err, [moto.endpoint, String(moto.port), 'gone-bucket', 'pre/']);
  const failing = await storage.stage(Readable.from([Buffer.from('y')])).catch((e: unknown) => e);
  t.match(failing, { code: 'SlowDown', status: 503 });
  await t.rejects(storage.remove(staged.blobId), { code: 'SlowDown' });
});
