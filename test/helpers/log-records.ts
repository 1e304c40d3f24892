// CDN request log records for unit tests: a plausible request, overridden field by field.
import type { CdnRequestRecord } from '../../src/db/repos/request-records.js';

export const LOG_NOW = Date.parse('2026-11-21T12:30:00Z');
export const HOUR = 3_600_000;

export function logRecord(over: Partial<CdnRequestRecord> = {}): CdnRequestRecord {
  return {
    time: LOG_NOW, method: 'GET', path: '/a1/file.txt', host: 'cdn.localhost', assetId: 'a1', bucket: null, key: null, ownerId: 'u1', status: 200, bytesSent: 100,
    cacheStatus: 'MISS', clientIp: '203.0.113.1', country: 'DE', userAgent: 'curl/8', durationMs: 1.5, ...over,
  };
}
