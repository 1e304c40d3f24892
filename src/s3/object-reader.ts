// Opening an object's bytes: the one place that knows how a record maps onto stored blobs.
import type { Readable } from 'node:stream';
import type { AppContext } from '../context.js';
import type { ObjectRecord } from '../db/repos/objects.js';
import type { ReadRange } from '../storage/backend.js';

/**
 * Streams the object's bytes (or an inclusive range of them). Rejects with code 'ENOENT' when the
 * blob vanished because a newer version replaced it: the caller looks the key up again.
 */
export function openObjectBody(
  ctx: AppContext,
  rec: ObjectRecord,
  opts: { range?: ReadRange; signal?: AbortSignal } = {},
): Promise<Readable> {
  return ctx.storage.read(rec.blobId, opts);
}
