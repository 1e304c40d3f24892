// POST /api/v3/cdn/assets: one streamed multipart upload becomes one asset. Order matters:
//   1. before any body byte: the space must be active, the declared size within limits, credits
//      reserved (a 402 here costs the client nothing but its headers) and room under the user's storage
//      quota (credits/quotas.ts; a 403 quota_exceeded);
//   2. the file part streams through the meter (size + credit limits, first bytes for sniffing) and
//      the hasher (SHA-256, MD5 for the ETag) into a staged blob of the storage backend; the other
//      fields, before or after it, are validated as they come, and projectId / deploymentId checked
//      against the uploader's projects once the form has ended;
//   3. commit: the blob first, then the asset row, the ledger charge and the upload usage event in one
//      transaction, then the shared WAL flush. Any failure before the transaction discards the blob,
//      so a refused or broken upload leaves neither a row nor bytes behind.
import type { Multipart, MultipartFile } from '@fastify/multipart';
import type { IncomingMessage } from 'node:http';
import { pipeline, type Transform } from 'node:stream';
import { newId } from '../db/ids.js';
import { invalidInput, Refusal } from '../errors/refusal.js';
import { isOutOfSpace } from '../errors/s3-errors.js';
import type { AppContext } from '../context.js';
import type { UploadReservation } from '../credits/credits.js';
import type { QuotaReservation } from '../credits/quotas.js';
import type { AssetKind, AssetRecord, AssetVisibility } from '../db/repos/assets.js';
import { UploadHasher, type UploadDigests } from '../hashing/upload-hasher.js';
import { checkAssetLinks, type AssetLinks } from '../projects/asset-links.js';
import { ProjectError } from '../projects/errors.js';
import { commitStaged } from '../storage/commit-staged.js';
import type { StagedBlob } from '../storage/backend.js';
import { isUnsafeActiveContent } from './content-safety.js';
import { normalizeContentType } from './content-type.js';
import { sanitizeFileName } from './file-name.js';
import { UploadLimitError, UploadMeter } from './upload-meter.js';
import { displayKey } from './view.js';
import { reserveUploadBuffers, uploadBufferBytes } from '../storage/upload-buffers.js';

/**
 * What the form may add around the file: boundaries, part headers and the small fields. A declared
 * body longer than the file limit plus this is refused before it is read.
 */
export const MULTIPART_OVERHEAD = 64 * 1024;
export const MAX_FIELD_CHARS = 128;

/** Limits for the multipart parser (busboy); the file size itself is enforced by UploadMeter. */
export function multipartLimits(maxObjectSize: number) {
  return {
    fieldNameSize: 100,
    // Longer than any valid value, so a too-long one is seen (truncated) and refused, not cut silently.
    fieldSize: 4 * MAX_FIELD_CHARS,
    fields: 16,
    files: 4,
    parts: 24,
    headerPairs: 16,
    // Never reached first: the meter stops the stream at maxObjectSize + 1.
    fileSize: maxObjectSize + 1,
  };
}

export interface UploadInput {
  userId: string;
  /** The request's Content-Length, if it had one. */
  declaredLength: number | undefined;
  /** The multipart parts, in order (request.parts()). */
  parts: AsyncIterable<Multipart>;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /** The request, paused while the upload waits for room in the upload budget. */
  req?: IncomingMessage;
  /** For the usage event. */
  hostname: string;
  clientIp: string;
}

interface FormFields {
  visibility: AssetVisibility;
  kind: AssetKind;
  projectId: string | null;
  deploymentId: string | null;
}

interface ReceivedFile {
  staged: StagedBlob;
  digests: UploadDigests;
  head: Buffer;
  fileName: string;
  contentType: string;
}

function payloadTooLarge(maxSize: number): Refusal {
  return new Refusal('too_large', 'payload_too_large', `The file is larger than the upload limit of ${maxSize} bytes`);
}

function fieldValue(part: Extract<Multipart, { type: 'field' }>): string {
  if (part.fieldnameTruncated || part.valueTruncated || typeof part.value !== 'string') {
    throw invalidInput(`Form field '${part.fieldname}' must be a text value of at most ${MAX_FIELD_CHARS} characters`);
  }
  return part.value;
}

/** Optional short printable ASCII (ids of other systems); empty means absent. */
function optionalId(name: string, value: string): string | null {
  const v = value.trim();
  if (v === '') return null;
  if (v.length > MAX_FIELD_CHARS || !/^[\x20-\x7e]+$/.test(v)) {
    throw invalidInput(`${name} must be printable ASCII of at most ${MAX_FIELD_CHARS} characters`);
  }
  return v;
}

/** Applies one text field; unknown fields are ignored (forms often carry extras), repeats refused. */
function applyField(fields: FormFields, seen: Set<string>, part: Extract<Multipart, { type: 'field' }>): void {
  const name = part.fieldname;
  if (!['visibility', 'kind', 'projectId', 'deploymentId'].includes(name)) return;
  if (seen.has(name)) throw invalidInput(`Form field '${name}' was given more than once`);
  seen.add(name);
  const value = fieldValue(part).trim();
  switch (name) {
    case 'visibility':
      if (value !== 'public' && value !== 'private') throw invalidInput("visibility must be 'public' or 'private'");
      fields.visibility = value;
      return;
    case 'kind':
      if (value !== 'file' && value !== 'artifact') throw invalidInput("kind must be 'file' or 'artifact'");
      fields.kind = value;
      return;
    case 'projectId':
      fields.projectId = optionalId('projectId', value);
      return;
    default:
      fields.deploymentId = optionalId('deploymentId', value);
  }
}

/** A client error from the body itself (truncated, malformed, client gone), not our failure. */
function isBodyFault(err: unknown, signal: AbortSignal, fileError: Error | undefined): boolean {
  return signal.aborted || fileError !== undefined || (err as { code?: unknown } | null)?.code === 'ERR_STREAM_PREMATURE_CLOSE';
}

/** What an upload holds while it streams: its credits and its room under the storage quota. */
interface Reserved {
  credits: UploadReservation;
  quota: QuotaReservation;
}

async function stageFile(
  ctx: AppContext,
  part: MultipartFile,
  input: UploadInput,
  reserved: Reserved,
): Promise<ReceivedFile> {
  const maxSize = ctx.config.maxObjectSize;
  const meter = new UploadMeter({ maxSize, maxPaidBytes: reserved.credits.maxBytes, maxQuotaBytes: reserved.quota.maxBytes });
  // The meter enforces the size: the hasher's own S3 limit must never be the one that fires.
  const hasher = new UploadHasher({ maxSize: Number.MAX_SAFE_INTEGER, pool: ctx.hashPool, expectedSize: input.declaredLength });
  let fileError: Error | undefined;
  part.file.once('error', (err: Error) => {
    fileError = err;
  });
  const body = pipeline(part.file, meter, hasher, () => undefined) as Transform;
  let staged: StagedBlob;
  try {
    // The request's length bounds the file's: the backend sizes its buffer to it.
    staged = await ctx.storage.stage(body, { signal: input.signal, sizeHint: input.declaredLength });
  } catch (err) {
    if (err instanceof UploadLimitError) {
      if (err.limit === 'size') throw payloadTooLarge(maxSize);
      throw err.limit === 'credits' ? await reserved.credits.refusal(err.size) : await reserved.quota.refusal(err.size);
    }
    // A full disk destroys the body behind it, which must not read as the client's fault.
    if (isOutOfSpace(err)) throw err;
    if (isBodyFault(err, input.signal, fileError)) throw invalidInput('The upload body ended before the file was complete');
    throw err;
  }
  try {
    const digests = await hasher.digests();
    return {
      staged,
      digests,
      head: meter.head(),
      fileName: sanitizeFileName(part.filename),
      contentType: normalizeContentType(part.mimetype),
    };
  } catch (err) {
    await staged.abort();
    throw err;
  }
}

/** Reads the whole form: exactly one file part named `file`, staged; the fields, validated. */
async function receiveForm(
  ctx: AppContext,
  input: UploadInput,
  reserved: Reserved,
): Promise<{ file: ReceivedFile; fields: FormFields }> {
  const fields: FormFields = { visibility: 'public', kind: 'file', projectId: null, deploymentId: null };
  const seen = new Set<string>();
  let file: ReceivedFile | undefined;
  try {
    try {
      for await (const part of input.parts) {
        if (part.type === 'field') {
          applyField(fields, seen, part);
          continue;
        }
        if (part.fieldname !== 'file' || file) throw invalidInput("The form must carry exactly one file part, named 'file'");
        file = await stageFile(ctx, part, input, reserved);
      }
    } catch (err) {
      // Errors of the multipart parser itself (busboy, @fastify/multipart limits) are the body's fault.
      if (err instanceof Refusal || err instanceof UploadLimitError) throw err;
      if (isMultipartError(err) || input.signal.aborted) throw invalidInput('Malformed multipart/form-data body');
      throw err;
    }
    if (!file) throw invalidInput("The form must carry exactly one file part, named 'file'");
    return { file, fields: { ...fields, ...(await linkedProject(ctx, input.userId, fields)) } };
  } catch (err) {
    await file?.staged.abort();
    throw err;
  }
}

/** projectId and deploymentId must name the uploader's project and a deployment of it. */
async function linkedProject(ctx: AppContext, userId: string, fields: FormFields): Promise<AssetLinks> {
  try {
    return await checkAssetLinks(ctx.repos, userId, { projectId: fields.projectId, deploymentId: fields.deploymentId });
  } catch (err) {
    if (err instanceof ProjectError) throw invalidInput(err.message);
    throw err;
  }
}

function isMultipartError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (typeof e?.code === 'string' && e.code.startsWith('FST_')) return true;
  // busboy's own parse errors carry no code.
  return typeof e?.message === 'string' && /multipart|boundary|part terminated|malformed/i.test(e.message);
}

export async function uploadAsset(ctx: AppContext, input: UploadInput): Promise<AssetRecord> {
  const { userId } = input;
  const space = await ctx.repos.spaces.ensure(userId);
  if (space.status === 'suspended') {
    throw new Refusal('suspended', 'space_suspended', 'This space is suspended: uploads are refused until an administrator resumes it');
  }
  const maxSize = ctx.config.maxObjectSize;
  const declared = input.declaredLength;
  if (declared !== undefined && declared > maxSize + MULTIPART_OVERHEAD) throw payloadTooLarge(maxSize);
  const reservation = await ctx.credits.reserveUpload(userId, declared);
  try {
    // The file is at least the body minus the form's overhead: refuse now what the credits cannot pay.
    if (declared !== undefined && declared - MULTIPART_OVERHEAD > reservation.maxBytes) {
      throw await reservation.refusal(declared - MULTIPART_OVERHEAD);
    }
    // Room under the user's storage quota: the file is at most the body, and at least the body less the
    // form's overhead (refused now when even that does not fit); stopped as it streams past the room.
    const quota = await ctx.quotas.reserve({ userId }, { upTo: declared, atLeast: declared === undefined ? 0 : Math.max(0, declared - MULTIPART_OVERHEAD) });
    try {
      // The memory the upload will hold, before the form is read (the file may be all of the body).
      const buffers = await reserveUploadBuffers(ctx, uploadBufferBytes(ctx, declared), { req: input.req, signal: input.signal });
      let received: { file: ReceivedFile; fields: FormFields };
      try {
        received = await receiveForm(ctx, input, { credits: reservation, quota });
      } finally {
        buffers.release();
      }
      return await commitAsset(ctx, input, reservation, received.file, received.fields);
    } finally {
      // After the commit: the asset's bytes count as stored from then on.
      await quota.release();
    }
  } finally {
    await reservation.release();
  }
}

async function commitAsset(
  ctx: AppContext,
  input: UploadInput,
  reservation: UploadReservation,
  file: ReceivedFile,
  fields: FormFields,
): Promise<AssetRecord> {
  const now = ctx.clock().getTime();
  const unsafe = isUnsafeActiveContent({ contentType: file.contentType, fileName: file.fileName, head: file.head });
  const asset: AssetRecord = {
    id: newId(),
    userId: input.userId,
    projectId: fields.projectId,
    deploymentId: fields.deploymentId,
    blobId: file.staged.blobId,
    crc32c: file.staged.crc32c,
    fileName: file.fileName,
    contentType: file.contentType,
    size: file.digests.size,
    sha256: file.digests.sha256Hex,
    etag: `"${file.digests.md5Hex}"`,
    // SPEC.md §3: unsafe active content is private whatever was asked.
    visibility: unsafe ? 'private' : fields.visibility,
    kind: fields.kind,
    activeContent: unsafe,
    createdAt: now,
    updatedAt: now,
  };
  const key = displayKey(asset);
  await commitStaged(ctx, file.staged, () =>
    ctx.repos.transact(async (r) => {
      await r.assets.insert(asset);
      await reservation.charge(r, asset.size, asset.id, key);
      await r.usage.record({
        userId: asset.userId, assetId: asset.id, eventType: 'upload', source: 'api', bytes: asset.size,
        hostname: input.hostname, statusCode: 201, metadata: { key }, clientIp: input.clientIp,
      });
    }),
  );
  // Acknowledged only once durable, like an S3 PUT.
  await ctx.durability.sync();
  return asset;
}
