// Opening an object's bytes: the one place that knows how a record maps onto stored blobs. A plain
// object is one blob; a completed multipart upload is its parts' blobs in order (a manifest, never a
// concatenated copy). Every blob of the version is leased for as long as the stream lives, so an
// overwrite cannot remove bytes from under a reader. Every blob read whole (and every inline blob,
// always in memory whole) is checked against the digest recorded when it was written
// (storage/blob-digest.ts): a mismatch is reported (storage/corruption.ts) and fails the read before
// its last bytes go out.
import { Readable } from 'node:stream';
import { objectBlobIds, type ObjectPart, type ObjectRecord } from '../db/repos/objects.js';
import { S3Error } from '../errors/s3-errors.js';
import type { ReadRange, StorageBackend } from './backend.js';
import type { BucketsRepo } from '../db/repos/buckets.js';
import type { ObjectsRepo } from '../db/repos/objects.js';
import type { BlobLeases } from './blob-leases.js';
import type { CorruptionReporter } from './corruption.js';
import { checkBuffer, hasCrc32c, type BlobDigest, type ReadVerification } from './blob-digest.js';
import { blobGone, isInlineBlobId } from './blob-id.js';

export const MAX_PART_NUMBER = 10000;

/** One blob's share of a read: which bytes of it, inclusive. */
interface Segment {
  blobId: string;
  range: ReadRange;
  /** The blob is rec.parts[part]; absent for an object of one blob. */
  part?: number;
}

/** The blobs (and the bytes of each) that make up `range` of the object; zero-length parts are skipped. */
export function segmentsOf(rec: Pick<ObjectRecord, 'blobId' | 'parts' | 'size'>, range?: ReadRange): Segment[] {
  const start = range?.start ?? 0;
  const end = range?.end ?? rec.size - 1;
  if (end < start) return [];
  if (!rec.parts) return [{ blobId: rec.blobId, range: { start, end } }];
  const out: Segment[] = [];
  let offset = 0;
  for (const [index, part] of rec.parts.entries()) {
    const first = offset;
    const last = offset + part.size - 1;
    offset += part.size;
    if (part.size === 0 || last < start) continue;
    if (first > end) break;
    out.push({ blobId: part.blobId, range: { start: Math.max(start, first) - first, end: Math.min(end, last) - first }, part: index });
  }
  return out;
}

/** Parses the partNumber query parameter: 1..10000, else InvalidArgument. */
export function parsePartNumber(raw: string): number {
  const n = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= MAX_PART_NUMBER)) {
    throw new S3Error('InvalidArgument', `Part number must be an integer between 1 and ${MAX_PART_NUMBER}, inclusive`, {
      ArgumentName: 'partNumber',
      ArgumentValue: raw,
    });
  }
  return n;
}

/**
 * The byte range of part `partNumber` and the object's part count (1 for an object that was not
 * uploaded in parts, whose only part is all of it). InvalidPartNumber (416) past the last part.
 */
export function partRange(rec: Pick<ObjectRecord, 'parts' | 'size'>, partNumber: number): { range?: ReadRange; count: number } {
  const parts: Pick<ObjectPart, 'size'>[] = rec.parts ?? [{ size: rec.size }];
  if (partNumber > parts.length) throw new S3Error('InvalidPartNumber', undefined, { PartNumberRequested: String(partNumber), ActualPartCount: String(parts.length) });
  let start = 0;
  for (let i = 0; i < partNumber - 1; i++) start += (parts[i] as { size: number }).size;
  const size = (parts[partNumber - 1] as { size: number }).size;
  return { range: size > 0 ? { start, end: start + size - 1 } : undefined, count: parts.length };
}

/** `object photos/a.jpg` or `part 3 of photos/a.jpg` (rec.parts[part]), as the scrub names them too. */
/** What reading an object needs of the serving process (the context has all of it). */
export interface ObjectReaderDeps {
  repos: { buckets: Pick<BucketsRepo, 'getById'> };
  objects: Pick<ObjectsRepo, 'inlineData'>;
  storage: StorageBackend;
  leases: Pick<BlobLeases, 'whileOpen'>;
  corruption: Pick<CorruptionReporter, 'wholeReadCheck' | 'readCheck'>;
}

async function ownerOf(ctx: ObjectReaderDeps, rec: ObjectRecord, part?: number): Promise<string> {
  const name = `${(await ctx.repos.buckets.getById(rec.bucketId))?.name ?? rec.bucketId}/${rec.key}`;
  return part === undefined ? `object ${name}` : `part ${part + 1} of ${name}`;
}

/** The check of a segment's blob, when the segment is all of it and the record holds its digest. */
function segmentVerification(ctx: ObjectReaderDeps, rec: ObjectRecord, segment: Segment): ReadVerification | undefined {
  const part = segment.part === undefined ? undefined : rec.parts?.[segment.part];
  const blob = part
    ? { blobId: segment.blobId, size: part.size, crc32c: part.crc32c, etag: part.etag }
    : { blobId: segment.blobId, size: rec.size, crc32c: rec.blobCrc32c, etag: rec.etag };
  return ctx.corruption.wholeReadCheck(blob, segment.range, () => ownerOf(ctx, rec, segment.part));
}

/**
 * Buffers of small objects already found to have a CRC32C, and which: the row cache (db/metadata-cache.ts)
 * hands the same Buffer to every GET of a hot object, and its bytes were checked when they were read
 * from the database (a CRC32C of 4 KiB is ~3 µs of a GET's ~90).
 */
const checkedInline = new WeakMap<Buffer, number>();

/**
 * Checks the bytes of a small object kept in the metadata database (SQLite has no checksums of its
 * own) against their recorded CRC32C; throws BlobDigestMismatch, reported, before anything is sent.
 * Rows from before CRC32Cs were recorded are not checked here: an MD5 per small GET costs too much.
 */
export function checkInlineObject(ctx: ObjectReaderDeps, rec: ObjectRecord, data: Buffer): void {
  if (rec.blobCrc32c === undefined || checkedInline.get(data) === rec.blobCrc32c) return;
  if (hasCrc32c(data, rec.blobCrc32c)) {
    checkedInline.set(data, rec.blobCrc32c);
    return;
  }
  // Damaged: the full check again, which reports and throws.
  const expected: BlobDigest = { kind: 'crc32c', value: rec.blobCrc32c };
  checkBuffer(data, ctx.corruption.readCheck(rec.blobId, expected, () => ownerOf(ctx, rec)));
}

/** Opens one segment, from the metadata database or the storage backend. */
async function openSegment(ctx: ObjectReaderDeps, rec: ObjectRecord, segment: Segment, signal?: AbortSignal): Promise<Readable> {
  if (!isInlineBlobId(segment.blobId)) {
    const verify = segmentVerification(ctx, rec, segment);
    return ctx.storage.read(segment.blobId, { range: segment.range, signal, ...(verify ? { verify } : {}) });
  }
  const data = await ctx.objects.inlineData(segment.blobId);
  if (!data) throw blobGone(segment.blobId);
  checkInlineObject(ctx, rec, data);
  return Readable.from([data.subarray(segment.range.start, segment.range.end + 1)], { objectMode: false });
}

/**
 * Streams the object's bytes (or an inclusive range of them). Call it right after the lookup that
 * produced `rec` resolved, before any other I/O: the lease on its blobs is taken synchronously, before
 * any await, and a blob is removed only after a durable commit (I/O), so none can go in between.
 * Rejects with code 'ENOENT' only if a blob vanished anyway (another process, or an older lookup):
 * the caller looks the key up again.
 */
export async function openObjectBody(
  ctx: ObjectReaderDeps,
  rec: ObjectRecord,
  opts: { range?: ReadRange; signal?: AbortSignal } = {},
): Promise<Readable> {
  return ctx.leases.whileOpen(objectBlobIds(rec), async () => {
    const segments = segmentsOf(rec, opts.range);
    const first = segments[0];
    if (!first) return Readable.from([]);
    // The first blob is opened before anything is sent, so a missing blob is still a clean error.
    const opened = await openSegment(ctx, rec, first, opts.signal);
    return segments.length === 1 ? opened : concatenate(ctx, rec, opened, segments.slice(1), opts.signal);
  });
}

/** The already-open first segment, then each further segment opened as the previous one ends. */
function concatenate(ctx: ObjectReaderDeps, rec: ObjectRecord, first: Readable, rest: Segment[], signal?: AbortSignal): Readable {
  async function* chunks(): AsyncGenerator<Buffer> {
    let current: Readable | undefined = first;
    try {
      yield* current as AsyncIterable<Buffer>;
      for (const segment of rest) {
        current = await openSegment(ctx, rec, segment, signal);
        yield* current as AsyncIterable<Buffer>;
      }
    } finally {
      // Reached early when the consumer goes away: close the blob being read.
      current?.destroy();
    }
  }
  const out = Readable.from(chunks(), { objectMode: false, highWaterMark: 1024 * 1024 });
  // A generator destroyed before its first step never runs its finally: close the first blob here too.
  out.once('close', () => first.destroy());
  return out;
}
