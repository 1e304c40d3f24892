// One log line per S3 request (docs/ARCHITECTURE.md "Request logs"): a record the handler and the
// responder fill in as the request goes, written once when the response is over or the client left.
// Secrets never enter it: the access key id only, no headers, no query string (signatures live there).
import type { ServerResponse } from 'node:http';
import { counterOf, type BodyCounter } from '../http/counted-messages.js';
import { performance } from 'node:perf_hooks';
import { jsonString as str, type LineWriter } from '../log-format.js';
import type { S3Error } from '../errors/s3-errors.js';
import type { RequestMetrics } from '../metrics/request-metrics.js';
import type { OperationName } from './router.js';

/** A CORS preflight is answered before routing, from the bucket's rules: not an AWS operation. */
export type LoggedOperation = OperationName | 'CorsPreflight';

const RECORD = Symbol('s3RequestRecord');

interface Counted {
  [RECORD]: S3RequestRecord;
}

// The fields, in the order of the line (fields()).
export class S3RequestRecord implements BodyCounter {
  readonly surface: 's3';
  readonly requestId: string;
  operation: LoggedOperation | null;
  readonly method: string;
  bucket: string | null;
  key: string | null;
  accessKeyId: string | null;
  status: number | null;
  errorCode: string | null;
  bytesIn: number;
  bytesOut: number;
  durationMs: number;
  /** The client closed the connection before the whole response was written. */
  clientGone: boolean;
  readonly clientIp: string;
  readonly #started: number;
  #written = false;

  constructor(requestId: string, method: string, clientIp: string) {
    this.surface = 's3';
    this.requestId = requestId;
    this.operation = null;
    this.method = method;
    this.bucket = null;
    this.key = null;
    this.accessKeyId = null;
    this.status = null;
    this.errorCode = null;
    this.bytesIn = 0;
    this.bytesOut = 0;
    this.durationMs = 0;
    this.clientGone = false;
    this.clientIp = clientIp;
    this.#started = performance.now();
  }

  /** The error the client is answered with; a failed signature still names the key id it claimed. */
  failed(e: S3Error): void {
    // 304 NotModified travels as an S3Error but is no failure.
    if (e.status >= 400) this.errorCode = e.code;
    const claimed = e.extra['AWSAccessKeyId'];
    if (this.accessKeyId === null && claimed !== undefined) this.accessKeyId = claimed;
  }

  /** The line's fields, in the order above, serialised (src/log-format.ts lineWriter). */
  fields(): string {
    return (
      `,"surface":"s3","requestId":${str(this.requestId)},"operation":${strOrNull(this.operation)},"method":${str(this.method)}` +
      `,"bucket":${strOrNull(this.bucket)},"key":${strOrNull(this.key)},"accessKeyId":${strOrNull(this.accessKeyId)}` +
      `,"status":${this.status === null ? 'null' : this.status},"errorCode":${strOrNull(this.errorCode)},"bytesIn":${this.bytesIn}` +
      `,"bytesOut":${this.bytesOut},"durationMs":${this.durationMs},"clientGone":${this.clientGone},"clientIp":${str(this.clientIp)}`
    );
  }

  /**
   * Writes the line, once: at info, or warn for a 5xx (the cause is logged at error where it happened);
   * and counts the request in the metrics.
   */
  write(lines: LineWriter, res: ServerResponse, metrics: RequestMetrics): void {
    if (this.#written) return;
    this.#written = true;
    this.status = res.headersSent ? res.statusCode : null;
    this.clientGone = !res.writableFinished;
    this.durationMs = Math.round((performance.now() - this.#started) * 1000) / 1000;
    const level = this.status !== null && this.status >= 500 ? 40 : 30;
    if (lines.enabled(level)) lines.write(level, this.fields(), 's3 request');
    metrics.count('s3', this.operation ?? 'unrouted', this.status, this.durationMs, this.bytesIn, this.bytesOut);
  }
}

/** A JSON value for a nullable string. */
function strOrNull(s: string | null): string {
  return s === null ? 'null' : str(s);
}

/** The record of an S3 response, for answers written outside the handler (the request guard's). */
export function requestRecordOf(res: ServerResponse): S3RequestRecord | undefined {
  const counter = counterOf(res);
  return counter instanceof S3RequestRecord ? counter : undefined;
}
