// Compressed variants for text-like types: which types, which coding a client accepts, and the coding
// itself (node:zlib on the thread pool, never on the event loop). Only bodies the memory tier can hold
// are compressed, so a variant is made once and then served from memory.
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { essenceOf } from '../../assets/content-type.js';

export type Coding = 'br' | 'gzip';

/** Below this a compressed body saves nothing worth a header. */
export const MIN_COMPRESS_BYTES = 256;

const TEXT_LIKE = new Set([
  'application/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'application/json',
  'application/xml',
  'application/xhtml+xml',
  'application/wasm',
  'application/graphql',
  'application/x-ndjson',
  'image/svg+xml',
  'image/x-icon',
  'image/vnd.microsoft.icon',
  'font/ttf',
  'font/otf',
  'application/vnd.ms-fontobject',
]);

/** Types worth compressing: text, JSON, JavaScript, XML (SVG included) and a few uncompressed binaries. */
export function isCompressibleType(contentType: string): boolean {
  const essence = essenceOf(contentType);
  return essence.startsWith('text/') || TEXT_LIKE.has(essence) || essence.endsWith('+json') || essence.endsWith('+xml');
}

/**
 * The coding to answer an Accept-Encoding header with (RFC 9110 §12.5.3): br before gzip, `q=0`
 * refuses, `*` stands for any coding not named. undefined means identity.
 */
export function negotiateCoding(acceptEncoding: string | string[] | undefined): Coding | undefined {
  if (acceptEncoding === undefined) return undefined;
  const header = Array.isArray(acceptEncoding) ? acceptEncoding.join(',') : acceptEncoding;
  const q = new Map<string, number>();
  for (const item of header.split(',')) {
    const [name = '', ...params] = item.split(';').map((s) => s.trim().toLowerCase());
    if (!name) continue;
    let weight = 1;
    for (const p of params) {
      const m = /^q=([01](?:\.\d{0,3})?)$/.exec(p);
      if (m) weight = Number(m[1]);
    }
    q.set(name, weight);
  }
  const weightOf = (coding: Coding): number => q.get(coding) ?? (coding === 'gzip' ? q.get('x-gzip') : undefined) ?? q.get('*') ?? 0;
  const br = weightOf('br');
  const gz = weightOf('gzip');
  if (br > 0 && br >= gz) return 'br';
  if (gz > 0) return 'gzip';
  return undefined;
}

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

/**
 * Compresses a whole body. Brotli at quality 5: close to gzip -9's speed with a smaller result
 * (quality 11, the default, costs ~20x more CPU for a few percent).
 */
export function compress(body: Buffer, coding: Coding): Promise<Buffer> {
  if (coding === 'gzip') return gzipAsync(body, { level: 6 });
  return brotliAsync(body, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 5,
      [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
    },
  });
}
