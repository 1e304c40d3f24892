import t from 'tap';
import { loadConfig, ConfigError } from '../../src/config/load.js';
import { createStorage } from '../../src/storage/select.js';
import { DiskStorage } from '../../src/storage/disk.js';
import { S3Storage } from '../../src/storage/upstream/s3-storage.js';

t.test('storage.backend selects the backend; s3 needs its settings', async (t) => {
  t.ok((await createStorage(loadConfig({ env: {} }))) instanceof DiskStorage, 'disk by default');
  await t.rejects(createStorage(loadConfig({ env: { S3EDGE_STORAGE_BACKEND: 's3' } })), ConfigError);
  await t.rejects(
    createStorage(loadConfig({ env: { S3EDGE_STORAGE_BACKEND: 's3', S3EDGE_STORAGE_S3_ENDPOINT: 'http://127.0.0.1:1', S3EDGE_STORAGE_S3_BUCKET: 'bkt' } })),
    /storage\.s3\.accessKeyId is required/,
  );
  const s3 = await createStorage(
    loadConfig({
      env: {
        S3EDGE_STORAGE_BACKEND: 's3',
        S3EDGE_STORAGE_S3_ENDPOINT: 'http://127.0.0.1:1',
        S3EDGE_STORAGE_S3_BUCKET: 'bkt',
        S3EDGE_STORAGE_S3_ACCESS_KEY_ID: 'a',
        S3EDGE_STORAGE_S3_SECRET_ACCESS_KEY: 's',
      },
    }),
  );
  t.ok(s3 instanceof S3Storage, 's3 when configured');
  await s3.close();
});
