// Reading a POST Object form as it streams (multipart/form-data, @fastify/busboy): the fields before
// the `file` part are collected (at most 20 KiB, AWS's limit), the file part is handed over as a
// stream, and whatever follows it is read and ignored, as S3 ignores fields after the file.
import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { createRequire } from 'node:module';
import type { Busboy as BusboyCtor } from '@fastify/busboy';

/** The multipart parser loads with the first POST form: browser uploads are rare, every start is not. */
let busboyModule: { Busboy: typeof BusboyCtor } | undefined;
const Busboy = ((...args: Parameters<typeof BusboyCtor>) =>
  (busboyModule ??= createRequire(import.meta.url)('@fastify/busboy') as { Busboy: typeof BusboyCtor }).Busboy(...args)) as typeof BusboyCtor;
import { S3Error, isS3Error } from '../errors/s3-errors.js';
import { acceptBody } from './body.js';
import type { FormField } from './post-policy.js';

/** "The form data and boundaries (excluding the contents of the file) cannot exceed 20 KB." */
export const MAX_POST_PRE_DATA_BYTES = 20 * 1024;

/** What a part costs besides its name and value: the delimiter line and its Content-Disposition header. */
const PART_OVERHEAD = 48;

export interface PostForm {
  /** Fields before the file, by lower-cased name; repeated names are joined with commas (AWS's rule). */
  fields: Map<string, FormField>;
  /** The `file` part, undefined when the form has none. `filename` is undefined when the part names none. */
  file?: { stream: Readable; filename: string | undefined };
  /** Settles once the whole body is parsed: rejects when it is not well-formed multipart/form-data. */
  done: Promise<void>;
}

export function malformed(): S3Error {
  return new S3Error('MalformedPOSTRequest');
}

function tooLarge(): S3Error {
  return new S3Error('MaxPostPreDataLengthExceeded', undefined, { MaxPostPreDataLengthBytes: String(MAX_POST_PRE_DATA_BYTES) });
}

/**
 * Starts parsing `req` and resolves when the file part begins (its stream not yet read: the parser
 * waits for it, and TCP holds the client back) or, for a form without one, when the body ends.
 * The caller must either consume `file.stream` or destroy `req`.
 */
export function readPostForm(req: IncomingMessage): Promise<PostForm> {
  let busboy: ReturnType<typeof Busboy>;
  try {
    busboy = Busboy({
      headers: req.headers as Parameters<typeof Busboy>[0]['headers'],
      // The file is the part named `file` (any case), whether or not it has a filename: s3-tests sends a
      // filename on every part, and a file part may have none.
      isPartAFile: (name) => name?.toLowerCase() === 'file',
      // `${filename}` takes the name after the last slash or backslash (expandFilename), not busboy.
      preservePath: true,
      limits: { fieldSize: MAX_POST_PRE_DATA_BYTES + 1, headerSize: MAX_POST_PRE_DATA_BYTES },
    });
  } catch {
    return Promise.reject(malformed());
  }
  const fields = new Map<string, FormField>();
  let preBytes = 0;
  let fileSeen = false;
  let settled = false;
  let file: PassThrough | undefined;
  let resolveDone!: () => void;
  let rejectDone!: (err: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  // Nobody may be listening yet (an error before the file part): the start promise reports it.
  done.catch(() => undefined);

  return new Promise<PostForm>((resolve, reject) => {
    const fail = (err: unknown): void => {
      rejectDone(err);
      file?.destroy(err as Error);
      if (!settled) {
        settled = true;
        reject(err);
      }
    };
    busboy.on('field', (sentName: string | undefined, value, _nameTruncated, valueTruncated) => {
      if (fileSeen || settled) return;
      // A part without a name parameter is a field named '' (which no condition can cover).
      const name = sentName ?? '';
      preBytes += Buffer.byteLength(name) + Buffer.byteLength(value) + PART_OVERHEAD;
      if (valueTruncated || preBytes > MAX_POST_PRE_DATA_BYTES) {
        fail(tooLarge());
        req.unpipe(busboy);
        return;
      }
      const lower = name.toLowerCase();
      const prior = fields.get(lower);
      fields.set(lower, prior ? { name: prior.name, value: `${prior.value},${value}` } : { name, value });
    });
    busboy.on('file', (_name, stream, filename) => {
      if (fileSeen || settled) {
        stream.resume();
        return;
      }
      fileSeen = true;
      settled = true;
      // The parser's errors (a body cut short, a broken delimiter) reach the reader as S3 errors.
      file = new PassThrough({ highWaterMark: 64 * 1024 });
      const body = file;
      // Its reader may not be there yet (the policy is checked first) or ever (a refused form): an
      // error then must not go unheard, which would end the process. A reader sees it all the same.
      body.on('error', () => undefined);
      stream.on('error', (err) => body.destroy(isS3Error(err) ? err : malformed()));
      stream.pipe(body);
      resolve({ fields, file: { stream: body, filename }, done });
    });
    busboy.on('finish', () => {
      resolveDone();
      if (!settled) {
        settled = true;
        resolve({ fields, done });
      }
    });
    busboy.on('error', () => fail(malformed()));
    req.on('aborted', () => fail(new S3Error('IncompleteBody')));
    req.on('error', (err) => fail(err));
    acceptBody(req);
    req.pipe(busboy);
  });
}
