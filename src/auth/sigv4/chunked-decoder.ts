// aws-chunked body decoder (Content-Encoding: aws-chunked) with SigV4 chunk and trailer signature checks.
//
// Wire format, chunk-signed (STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]):
//   <hex-size>;chunk-signature=<sig>\r\n<data>\r\n ... 0;chunk-signature=<sig>\r\n
//   then either \r\n (no trailer), or trailer lines 'name:value\r\n', x-amz-trailer-signature:<sig>\r\n, \r\n.
// Unsigned chunks (STREAMING-UNSIGNED-PAYLOAD-TRAILER):
//   <hex-size>\r\n<data>\r\n ... 0\r\n<trailer lines>\r\n
//
// Memory / trust model: in chunk-signed mode the data of ONE chunk is held (as zero-copy slices of the input
// buffers) while its SHA-256 is computed incrementally; only once the chunk signature is verified is the chunk
// pushed downstream, so no unverified byte ever reaches storage. Chunks are bounded by maxChunkSize (default
// 16 MiB; SDKs use 8 KiB..1 MiB). In unsigned-chunk mode there is nothing to verify per chunk, so data is
// streamed through as it arrives (the trailer checksum, verified by the caller, covers it).
//
// Tolerances: a bare '\n' line end is accepted for header and trailer lines; at EOF a missing final empty
// line (or a missing CRLF on the last trailer line) is accepted; an empty line between the final chunk and
// the trailer lines (as in the AWS documentation's trailer example) is skipped.
import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { S3Error } from '../../errors/s3-errors.js';
import { EMPTY_SHA256, sha256Hex } from './canonical.js';
import { signatureMatches } from './verify.js';
import { signWithKey } from './signing-key.js';
import type { ChunkDecoderOptions } from './types.js';

const MAX_LINE = 4096;
const MAX_TRAILER_BYTES = 16 * 1024;
const MAX_TRAILER_LINES = 64;
const DEFAULT_MAX_CHUNK = 16 * 1024 * 1024;
const MAX_ZERO_COPY_SLICES = 16;
const TRAILER_SIGNATURE = 'x-amz-trailer-signature';
const TOKEN_RE = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
const HEX_SIZE_RE = /^[0-9a-fA-F]{1,16}$/;

const enum State {
  Header,
  Data,
  DataCrlf,
  FinalLine,
  Trailer,
  Done,
  Failed,
}

function incomplete(msg?: string): S3Error {
  return new S3Error('IncompleteBody', msg);
}

export class ChunkDecoder extends Transform {
  /** Trailer headers after the stream ended, names lower-cased, e.g. { 'x-amz-checksum-crc32': 'AAAAAA==' }. */
  readonly trailers: Record<string, string> = Object.create(null) as Record<string, string>;

  private readonly chunkSigned: boolean;
  private readonly trailerMode: 'none' | 'signed' | 'unsigned';
  private readonly signingKey: Buffer;
  private readonly amzDate: string;
  private readonly scope: string;
  private readonly decodedLength: number | undefined;
  private readonly maxChunk: number;

  private state: State = State.Header;
  private prevSig: string;
  private readonly line = Buffer.allocUnsafe(MAX_LINE);
  private lineLen = 0;

  private remaining = 0;
  private chunkSig = '';
  private hash: Hash | undefined;
  private held: Buffer[] = [];
  private heldLen = 0;
  private crlf = 0;
  private total = 0;

  private trailerCanonical = '';
  private trailerLines = 0;
  private trailerBytes = 0;
  private trailerSigSeen = false;

  constructor(opts: ChunkDecoderOptions) {
    super();
    const { auth } = opts;
    const p = auth.payload;
    if (p.kind === 'streaming-signed') {
      this.chunkSigned = true;
      this.trailerMode = p.trailer ? 'signed' : 'none';
    } else if (p.kind === 'streaming-unsigned-trailer') {
      this.chunkSigned = false;
      this.trailerMode = 'unsigned';
    } else {
      throw new S3Error('InvalidRequest', 'aws-chunked content encoding requires a STREAMING-* x-amz-content-sha256 value.');
    }
    const dl = opts.decodedContentLength;
    if (dl !== undefined && !(Number.isSafeInteger(dl) && dl >= 0)) {
      throw new S3Error('InvalidArgument', 'Invalid x-amz-decoded-content-length.', {
        ArgumentName: 'x-amz-decoded-content-length',
        ArgumentValue: String(dl),
      });
    }
    this.decodedLength = dl;
    this.maxChunk = opts.maxChunkSize ?? DEFAULT_MAX_CHUNK;
    this.signingKey = auth.signingKey;
    this.amzDate = auth.amzDate;
    this.scope = auth.scope;
    this.prevSig = auth.signature;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    if (this.state === State.Failed) {
      callback();
      return;
    }
    try {
      this.consume(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
      callback();
    } catch (err) {
      this.state = State.Failed;
      this.releaseHeld();
      callback(err instanceof S3Error ? err : new S3Error('InternalError'));
    }
  }

  override _flush(callback: TransformCallback): void {
    if (this.state === State.Failed) {
      callback();
      return;
    }
    try {
      this.end_();
      callback();
    } catch (err) {
      this.state = State.Failed;
      callback(err instanceof S3Error ? err : new S3Error('InternalError'));
    }
  }

  private consume(buf: Buffer): void {
    let off = 0;
    const len = buf.length;
    while (off < len) {
      switch (this.state) {
        case State.Header:
        case State.FinalLine:
        case State.Trailer: {
          const nl = buf.indexOf(0x0a, off);
          const end = nl === -1 ? len : nl;
          this.appendLine(buf, off, end);
          if (nl === -1) return;
          off = nl + 1;
          const line = this.takeLine();
          if (this.state === State.Header) this.onHeaderLine(line);
          else if (this.state === State.FinalLine) this.onFinalLine(line);
          else this.onTrailerLine(line);
          break;
        }
        case State.Data: {
          const n = Math.min(this.remaining, len - off);
          const slice = buf.subarray(off, off + n);
          off += n;
          this.remaining -= n;
          if (this.hash) {
            this.hash.update(slice);
            this.held.push(slice);
            this.heldLen += n;
          } else {
            this.push(slice);
          }
          if (this.remaining === 0) {
            if (this.hash) this.verifyAndPushChunk();
            this.state = State.DataCrlf;
            this.crlf = 0;
          }
          break;
        }
        case State.DataCrlf: {
          const b = buf[off++];
          if (b !== (this.crlf === 0 ? 0x0d : 0x0a)) throw incomplete('Malformed aws-chunked body: expected CRLF after chunk data.');
          if (++this.crlf === 2) this.state = State.Header;
          break;
        }
        case State.Done: {
          // Only stray line ends may follow the end of the body.
          const b = buf[off++];
          if (b !== 0x0d && b !== 0x0a) throw incomplete('Malformed aws-chunked body: data after the final chunk.');
          break;
        }
        case State.Failed:
          return;
      }
    }
  }

  private appendLine(buf: Buffer, start: number, end: number): void {
    const n = end - start;
    if (this.lineLen + n > MAX_LINE) throw incomplete('Malformed aws-chunked body: line too long.');
    buf.copy(this.line, this.lineLen, start, end);
    this.lineLen += n;
  }

  /** The accumulated line without its line end. */
  private takeLine(): string {
    let n = this.lineLen;
    if (n > 0 && this.line[n - 1] === 0x0d) n--;
    this.lineLen = 0;
    return this.line.toString('utf8', 0, n);
  }

  private onHeaderLine(line: string): void {
    const semi = line.indexOf(';');
    const sizeHex = (semi === -1 ? line : line.slice(0, semi)).trim();
    if (!HEX_SIZE_RE.test(sizeHex)) throw incomplete('Malformed aws-chunked body: invalid chunk size.');
    const size = parseInt(sizeHex, 16);
    if (this.chunkSigned) {
      const ext = semi === -1 ? '' : line.slice(semi + 1).trim();
      if (!ext.startsWith('chunk-signature=')) {
        throw new S3Error('SignatureDoesNotMatch', 'Missing chunk signature in aws-chunked body.');
      }
      this.chunkSig = ext.slice('chunk-signature='.length);
    }
    if (size > this.maxChunk) {
      throw new S3Error('InvalidArgument', `Chunk size exceeds the maximum of ${this.maxChunk} bytes.`);
    }
    if (this.decodedLength !== undefined && this.total + size > this.decodedLength) {
      throw incomplete('The aws-chunked body is longer than x-amz-decoded-content-length.');
    }
    if (size === 0) {
      if (this.chunkSigned) this.verifyChunk(EMPTY_SHA256);
      this.state = this.trailerMode === 'none' ? State.FinalLine : State.Trailer;
      return;
    }
    this.total += size;
    this.remaining = size;
    this.hash = this.chunkSigned ? createHash('sha256') : undefined;
    this.state = State.Data;
  }

  private verifyChunk(dataSha256: string): void {
    const sts =
      'AWS4-HMAC-SHA256-PAYLOAD\n' + this.amzDate + '\n' + this.scope + '\n' + this.prevSig + '\n' + EMPTY_SHA256 + '\n' + dataSha256;
    const expected = signWithKey(this.signingKey, sts);
    if (!signatureMatches(this.chunkSig, expected)) {
      throw new S3Error('SignatureDoesNotMatch', 'The chunk signature we calculated does not match the signature you provided.');
    }
    this.prevSig = expected.toString('hex');
  }

  private verifyAndPushChunk(): void {
    const digest = (this.hash as Hash).digest('hex');
    this.hash = undefined;
    this.verifyChunk(digest);
    // Verified: release the chunk. A few slices are passed on as they are (zero-copy); many small ones
    // (a client trickling bytes) are joined first so downstream does not see thousands of tiny buffers.
    const held = this.held;
    const heldLen = this.heldLen;
    this.releaseHeld();
    if (held.length <= MAX_ZERO_COPY_SLICES) {
      for (const b of held) this.push(b);
    } else {
      this.push(Buffer.concat(held, heldLen));
    }
  }

  private releaseHeld(): void {
    this.held = [];
    this.heldLen = 0;
  }

  private onFinalLine(line: string): void {
    if (line !== '') throw incomplete('Malformed aws-chunked body: expected an empty line after the final chunk.');
    this.finish();
  }

  private onTrailerLine(line: string): void {
    this.trailerBytes += line.length + 2;
    if (this.trailerBytes > MAX_TRAILER_BYTES) throw incomplete('Malformed aws-chunked body: trailer too long.');
    if (line === '') {
      // Before any trailer: the separator line of the documented example, or the end of a trailer-less body.
      if (this.trailerLines === 0 && !this.trailerSigSeen) return;
      this.finishTrailers(false);
      this.finish();
      return;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) throw incomplete('Malformed aws-chunked body: invalid trailer line.');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (!TOKEN_RE.test(name)) throw incomplete('Malformed aws-chunked body: invalid trailer name.');
    if (this.trailerSigSeen) throw incomplete('Malformed aws-chunked body: trailer after the trailer signature.');
    if (name === TRAILER_SIGNATURE) {
      if (this.trailerMode === 'signed') {
        const sts =
          'AWS4-HMAC-SHA256-TRAILER\n' + this.amzDate + '\n' + this.scope + '\n' + this.prevSig + '\n' + sha256Hex(this.trailerCanonical);
        const expected = signWithKey(this.signingKey, sts);
        if (!signatureMatches(value, expected)) {
          throw new S3Error('SignatureDoesNotMatch', 'The trailer signature we calculated does not match the signature you provided.');
        }
        this.prevSig = expected.toString('hex');
      }
      // Unsigned-trailer mode has no trailer signature to check; a stray one is ignored.
      this.trailerSigSeen = true;
      return;
    }
    if (++this.trailerLines > MAX_TRAILER_LINES) throw incomplete('Malformed aws-chunked body: too many trailers.');
    if (Object.prototype.hasOwnProperty.call(this.trailers, name)) {
      throw new S3Error('InvalidArgument', `Trailer ${name} was sent more than once.`);
    }
    this.trailers[name] = value;
    this.trailerCanonical += name + ':' + value + '\n';
  }

  /** End of the trailer section: by an empty line (atEof false) or by EOF. */
  private finishTrailers(atEof: boolean): void {
    // Signed-trailer mode always ends with x-amz-trailer-signature (even with no trailer): without it the
    // trailers would be unauthenticated, or cut off.
    if (this.trailerMode === 'signed' && !this.trailerSigSeen) {
      if (atEof && this.trailerLines === 0) throw incomplete('The aws-chunked body ended before the trailer signature.');
      throw new S3Error('SignatureDoesNotMatch', 'Missing x-amz-trailer-signature in aws-chunked body.');
    }
  }

  private finish(): void {
    if (this.decodedLength !== undefined && this.total !== this.decodedLength) {
      throw incomplete('The aws-chunked body does not match x-amz-decoded-content-length.');
    }
    this.state = State.Done;
  }

  /** EOF. */
  private end_(): void {
    switch (this.state) {
      case State.Done:
        return;
      case State.FinalLine: {
        // Tolerate a missing final empty line.
        const line = this.takeLine();
        if (line !== '') throw incomplete('Malformed aws-chunked body: expected an empty line after the final chunk.');
        this.finish();
        return;
      }
      case State.Trailer: {
        // Tolerate a last trailer line without CRLF and a missing final empty line.
        if (this.lineLen > 0) {
          const line = this.takeLine();
          if (line !== '') this.onTrailerLine(line);
          if ((this.state as State) === State.Done) return;
        }
        this.finishTrailers(true);
        this.finish();
        return;
      }
      default:
        throw incomplete('The aws-chunked body ended before the final chunk.');
    }
  }
}
