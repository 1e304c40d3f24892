// A batch of request log records as it crosses to the writer thread (log-writer.ts ->
// log-writer-worker.ts): one JSON string of one array per record, its fields by position. Keys named
// in every record made the JSON 1.7x as long, and its stringify on the event loop and its parse in the
// thread each 1.5x as slow (~1.4 against ~0.85 µs a record). The request id stays behind: it is in the
// log line, not the table.
import type { CacheStatus, CdnRequestRecord, Surface } from '../db/repos/request-records.js';

type Encoded = [
  surface: Surface | null,
  method: string,
  path: string,
  bytesIn: number | null,
  decision: string | null,
  time: number,
  host: string,
  assetId: string | null,
  bucket: string | null,
  key: string | null,
  ownerId: string | null,
  status: number,
  bytesSent: number,
  cacheStatus: CacheStatus | null,
  clientIp: string,
  country: string,
  userAgent: string,
  durationMs: number,
  downloadKey: string | null,
];

/** The fields carried, in Encoded's order. */
const CARRIED = [
  'surface', 'method', 'path', 'bytesIn', 'decision', 'time', 'host', 'assetId', 'bucket', 'key', 'ownerId',
  'status', 'bytesSent', 'cacheStatus', 'clientIp', 'country', 'userAgent', 'durationMs', 'downloadKey',
] as const satisfies readonly (keyof CdnRequestRecord)[];
type MustBeNever<T extends never> = T;
/** Does not compile once CdnRequestRecord has a field that is neither carried here nor the request id. */
export type UncarriedRecordFields = MustBeNever<Exclude<keyof CdnRequestRecord, (typeof CARRIED)[number] | 'requestId'>>;

export function encodeRecordBatch(records: readonly CdnRequestRecord[]): string {
  const rows = new Array<Encoded>(records.length);
  for (let i = 0; i < records.length; i++) {
    const r = records[i] as CdnRequestRecord;
    rows[i] = [
      r.surface ?? null, r.method, r.path, r.bytesIn ?? null, r.decision ?? null, r.time, r.host, r.assetId, r.bucket, r.key, r.ownerId,
      r.status, r.bytesSent, r.cacheStatus, r.clientIp, r.country, r.userAgent, r.durationMs, r.downloadKey ?? null,
    ];
  }
  return JSON.stringify(rows);
}

/** The records of encodeRecordBatch's string (without their request ids); an optional field absent stays absent. */
export function decodeRecordBatch(text: string): CdnRequestRecord[] {
  const rows = JSON.parse(text) as Encoded[];
  const records = new Array<CdnRequestRecord>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const [surface, method, path, bytesIn, decision, time, host, assetId, bucket, key, ownerId, status, bytesSent, cacheStatus, clientIp, country, userAgent, durationMs, downloadKey] = rows[i] as Encoded;
    const r: CdnRequestRecord = { method, path, time, host, assetId, bucket, key, ownerId, status, bytesSent, cacheStatus, clientIp, country, userAgent, durationMs };
    if (surface !== null) r.surface = surface;
    if (bytesIn !== null) r.bytesIn = bytesIn;
    if (decision !== null) r.decision = decision;
    if (downloadKey !== null) r.downloadKey = downloadKey;
    records[i] = r;
  }
  return records;
}
