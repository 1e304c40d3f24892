// Upstream mode (--upstream): s3edge keeps its object bytes on a moto S3 server of its own (not the
// moto target it is compared with), so "s3edge over moto vs moto direct" runs in one process tree.
import { request } from 'undici';
import { startMoto, type Target } from './targets.js';

export interface Upstream {
  /** S3EDGE_* settings that point s3edge's storage at this moto. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export async function startUpstream(): Promise<Upstream> {
  const moto: Target = await startMoto();
  const bucket = 's3edge-upstream';
  const res = await request(`${moto.url}/${bucket}`, { method: 'PUT' });
  await res.body.dump();
  if (res.statusCode !== 200) {
    await moto.stop();
    throw new Error(`upstream moto: create bucket answered ${res.statusCode}`);
  }
  return {
    env: {
      S3EDGE_STORAGE_BACKEND: 's3',
      S3EDGE_STORAGE_S3_ENDPOINT: moto.url,
      S3EDGE_STORAGE_S3_REGION: 'us-east-1',
      S3EDGE_STORAGE_S3_BUCKET: bucket,
      S3EDGE_STORAGE_S3_ACCESS_KEY_ID: 'bench',
      S3EDGE_STORAGE_S3_SECRET_ACCESS_KEY: 'bench-secret',
      S3EDGE_STORAGE_S3_FORCE_PATH_STYLE: 'true',
      S3EDGE_STORAGE_S3_PREFIX: 'bench/',
    },
    stop: () => moto.stop(),
  };
}
