// The configured StorageBackend: local disk under the data directory, or an upstream S3 bucket.
import { join } from 'node:path';
import type { Config } from '../config/schema.js';
import { ConfigError } from '../config/load.js';
import type { StorageBackend } from './backend.js';
import { DiskStorage } from './disk.js';
import type { UploadBudget } from './upload-budget.js';

/**
 * `budget`: the upload budget the upstream backend takes its second part buffers from. The upstream
 * backend's code (its HTTP client and signer) loads only when it is the one configured.
 */
export async function createStorage(config: Config, opts: { budget?: UploadBudget } = {}): Promise<StorageBackend> {
  if (config.storage.backend === 'disk') return new DiskStorage(join(config.dataDir, 'storage'));
  const s3 = config.storage.s3;
  for (const field of ['endpoint', 'bucket', 'region', 'accessKeyId', 'secretAccessKey'] as const) {
    if (s3[field] === '') throw new ConfigError(`config: storage.s3.${field} is required when storage.backend is s3`);
  }
  const { S3Storage } = await import('./upstream/s3-storage.js');
  return new S3Storage({ ...s3, ...(opts.budget ? { budget: opts.budget } : {}) });
}
