// Damage for integrity tests, done the way a failing disk would: a byte flipped in a stored blob file,
// or in a small object's bytes inside meta.db (another process writing the database, as the admin CLI
// does while the server runs).
import { openSqlite } from '../../src/db/sqlite/index.js';
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { RunningServer } from './server.js';

/** Flips the lowest bit of byte `at` of a disk-backend blob file. */
export function flipBlobByte(server: RunningServer, blobId: string, at: number): void {
  const fd = openSync(join(server.dataDir, 'storage', 'blobs', blobId.slice(-2), blobId), 'r+');
  try {
    const one = Buffer.alloc(1);
    readSync(fd, one, 0, 1, at);
    one[0] = (one[0] ?? 0) ^ 0x01;
    writeSync(fd, one, 0, 1, at);
  } finally {
    closeSync(fd);
  }
}

/** Flips the lowest bit of byte `at` of an inline blob (a small object kept in meta.db). */
export function flipInlineByte(server: RunningServer, blobId: string, at: number): void {
  const db = openSqlite(join(server.dataDir, 'meta.db'), { fileMustExist: true });
  try {
    const row = db.prepare('SELECT data FROM inline_blobs WHERE blob_id = ?').get(blobId) as { data: Buffer } | undefined;
    if (!row) throw new Error(`no inline blob ${blobId}`);
    row.data[at] = (row.data[at] ?? 0) ^ 0x01;
    db.prepare('UPDATE inline_blobs SET data = ? WHERE blob_id = ?').run(row.data, blobId);
  } finally {
    db.close();
  }
}
