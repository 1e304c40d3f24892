// The disk tier under `serve --workers N`: each worker owns <cdn-cache>/<slot> (no two processes ever
// write, index or clean one directory); a single process owns <cdn-cache> itself, as before.
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** A serving process's slot among its cluster's workers: 1..of. */
export interface ProcessShare {
  slot: number;
  of: number;
}

export function assertShare(share: ProcessShare): void {
  if (!Number.isSafeInteger(share.of) || share.of < 1 || !Number.isSafeInteger(share.slot) || share.slot < 1 || share.slot > share.of) {
    throw new Error(`a process share must be slot 1..of, got ${share.slot} of ${share.of}`);
  }
}

/** The disk tier's directory of a process. */
export function shareDir(root: string, share: ProcessShare | undefined): string {
  return share ? join(root, String(share.slot)) : root;
}

/**
 * Deletes what under `root` belongs to no worker of a cluster of `of`: a single process's files (its
 * two-hex-digit shard directories and tmp) and the directories of slots above `of` (fewer workers
 * than before). Worker 1 calls it; the other slots' directories are left alone.
 */
export async function removeOtherShares(root: string, of: number): Promise<number> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  const mine = (name: string): boolean => /^[1-9][0-9]*$/.test(name) && Number(name) <= of;
  const others = names.filter((name) => !mine(name));
  for (const name of others) await rm(join(root, name), { recursive: true, force: true });
  return others.length;
}
