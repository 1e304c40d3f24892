// The composition root's product: everything a request needs, built once, closed once. No globals.
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import type { Config } from './config/schema.js';
import type { Db } from './db/open.js';
import type { Repos } from './db/repos/index.js';
import { ObjectsRepo } from './db/repos/objects.js';
import { MultipartRepo } from './db/repos/multipart.js';
import { KeyStore } from './auth/key-store.js';
import { ensureRoot } from './auth/root.js';
import { openDataDir } from './cli/data-dir.js';
import type { StorageBackend } from './storage/backend.js';
import { DiskStorage } from './storage/disk.js';
import { BlobLeases } from './storage/blob-leases.js';
import { HashPool } from './hashing/hash-pool.js';
import { startMultipartSweeper } from './s3/operations/multipart/sweep.js';

export interface AppContext {
  config: Config;
  log: Logger;
  clock: () => Date;
  db: Db;
  repos: Repos;
  objects: ObjectsRepo;
  multipart: MultipartRepo;
  storage: StorageBackend;
  /** Blobs being streamed to readers: their removal waits for the last reader. */
  leases: BlobLeases;
  keys: KeyStore;
  /** The hashing worker thread for large uploads; absent when hashing.workerThreshold is 0. */
  hashPool?: HashPool;
  root: { accessKeyId: string; secretAccessKey?: string; generated: boolean };
  close(): Promise<void>;
}

export interface ContextOptions {
  log?: Logger;
  clock?: () => Date;
}

export async function createContext(config: Config, opts: ContextOptions = {}): Promise<AppContext> {
  const log = opts.log ?? pino({ level: config.logLevel });
  const { db, repos, masterKey } = openDataDir(config);
  const storage = new DiskStorage(join(config.dataDir, 'storage'));
  const hashPool = config.hashing.workerThreshold > 0 ? new HashPool({ threshold: config.hashing.workerThreshold }) : undefined;
  try {
    await storage.init();
    const root = ensureRoot(config, repos, masterKey);
    const objects = new ObjectsRepo(db);
    const leases = new BlobLeases((blobId) =>
      storage.remove(blobId).catch((err: unknown) => log.warn({ err, blobId }, 'blob removal failed')),
    );
    const ctx: AppContext = {
      config,
      log,
      clock: opts.clock ?? (() => new Date()),
      db,
      repos,
      objects,
      multipart: new MultipartRepo(db, objects),
      storage,
      leases,
      keys: new KeyStore(repos, masterKey),
      ...(hashPool ? { hashPool } : {}),
      root,
      async close() {
        await sweeper.stop();
        await storage.close();
        await hashPool?.close();
        db.close();
      },
    };
    // Abandoned multipart uploads: swept now and every hour.
    const sweeper = startMultipartSweeper(ctx);
    return ctx;
  } catch (err) {
    await hashPool?.close();
    db.close();
    throw err;
  }
}
