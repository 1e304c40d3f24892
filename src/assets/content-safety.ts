// Unsafe active content: anything a browser may run as a document or script when it is opened from one
// of our origins (HTML, XHTML, SVG, XML with its stylesheets, JavaScript, PDF, whose viewers run script,
// WebAssembly, and a few legacy cousins), and any body stored with a Content-Encoding, which a browser
// decodes into bytes no check here has seen (gzip declared image/png). This is the one list: an API
// upload of it is forced private (SPEC.md §3), the CDN serves it only as an attachment (assets and
// public-bucket objects), and every answer of every door carries SAFETY_HEADERS besides.
//
// Judged three ways, any one suffices: the declared content type, the file name's extension, and the
// first bytes themselves, because a declared type or an extension is whatever the uploader chose (an
// SVG sent as image/png named x.png is still an SVG to a sniffing browser).
import { essenceOf } from './content-type.js';

/**
 * On every answer that may carry user bytes (asset downloads, the CDN, the S3 door): never sniffed into
 * something runnable, and if a browser opens it anyway, a sandboxed document that may load nothing.
 */
export const SAFETY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; sandbox",
} as const;

/**
 * On a project hostname's bucket site (src/edge/bucket-site.ts), the user's own website on its own
 * origin: its pages and scripts must run, so no sandbox; a body is still never sniffed into another type.
 */
export const SITE_SAFETY_HEADERS = { 'x-content-type-options': 'nosniff' } as const;

/** How many leading bytes sniffing looks at (browsers sniff at most 512; old IE scanned 256 for tags). */
export const SNIFF_BYTES = 1024;

const ACTIVE_TYPES = new Set([
  'text/html',
  'application/xhtml+xml',
  'image/svg+xml',
  'text/xml',
  'application/xml',
  'text/xsl',
  'text/javascript',
  'application/javascript',
  'application/x-javascript',
  'text/ecmascript',
  'application/ecmascript',
  'application/x-ecmascript',
  'text/jscript',
  'text/livescript',
  'text/x-javascript',
  'text/x-ecmascript',
  'application/x-shockwave-flash',
  'multipart/x-mixed-replace',
  'message/rfc822',
  'application/x-mimearchive',
  'text/x-component',
  'application/pdf',
  'application/x-pdf',
  'application/wasm',
]);

const ACTIVE_EXTENSIONS = new Set([
  'html', 'htm', 'shtml', 'shtm', 'xhtml', 'xht', 'svg', 'svgz', 'xml', 'xsl', 'xslt', 'js', 'mjs', 'cjs',
  'jsx', 'swf', 'hta', 'mht', 'mhtml', 'htc', 'pdf', 'wasm',
]);

export function isActiveType(contentType: string): boolean {
  const essence = essenceOf(contentType);
  // Every `+xml` type (application/rss+xml, application/xslt+xml, ...) is rendered as XML.
  return ACTIVE_TYPES.has(essence) || essence.endsWith('+xml') || /^text\/javascript\d/.test(essence);
}

export function isActiveExtension(fileName: string): boolean {
  const dot = fileName.lastIndexOf('.');
  return dot >= 0 && ACTIVE_EXTENSIONS.has(fileName.slice(dot + 1).toLowerCase());
}

// What a document starts with (the WHATWG MIME sniffing "HTML" and "XML" patterns, plus SVG). Each
// needs a tag-terminating character after it, so `<bold` is not `<b`.
const LEADING_TAGS = [
  '<!doctype html', '<html', '<head', '<script', '<iframe', '<h1', '<div', '<font', '<table', '<a', '<style',
  '<title', '<b', '<body', '<br', '<p', '<svg', '<?xml', '<!--', '<xsl:',
];
// Unambiguous markup anywhere in the sniffed bytes (old browsers scanned for these past the start).
const EMBEDDED_TAGS = ['<script', '<html', '<svg', '<!doctype html', '<iframe', '<?xml-stylesheet'];
// Binary formats a browser runs whatever they are called: PDF (viewers look for the header in the
// first KiB) and WebAssembly's magic number.
const PDF_HEADER = '%pdf-';
const WASM_MAGIC = Buffer.from([0x00, 0x61, 0x73, 0x6d]);

const TAG_END = /^[\s>/]/;

/**
 * The first bytes as text for pattern matching: NULs dropped (so UTF-16 and UTF-32 text reads like
 * ASCII), byte-order marks and leading whitespace skipped, lowercased.
 */
function sniffText(head: Buffer): string {
  return head
    .subarray(0, SNIFF_BYTES)
    .toString('latin1')
    .replace(/\u0000/g, '')
    .replace(/^(?:\u00ef\u00bb\u00bf|\u00fe\u00ff|\u00ff\u00fe)/, '')
    .replace(/^[\t\n\f\r ]+/, '')
    .toLowerCase();
}

export function looksActive(head: Buffer): boolean {
  if (head.subarray(0, 4).equals(WASM_MAGIC)) return true;
  const text = sniffText(head);
  if (text.includes(PDF_HEADER)) return true;
  for (const tag of LEADING_TAGS) {
    if (!text.startsWith(tag)) continue;
    const after = text.slice(tag.length);
    // `<?xml`, `<!--` and prefixed names need no terminator; a cut-off head counts as a match.
    if (after === '' || tag.startsWith('<?') || tag === '<!--' || tag.endsWith(':') || TAG_END.test(after)) return true;
  }
  return EMBEDDED_TAGS.some((tag) => text.includes(tag));
}

/** A Content-Encoding other than none/identity: the browser decodes it, so what runs is unknown. */
export function isEncoded(contentEncoding: string | null | undefined): boolean {
  const e = (contentEncoding ?? '').trim().toLowerCase();
  return e !== '' && e !== 'identity';
}

/** True when stored bytes must never be served inline: by type, name or encoding (the bytes were judged on upload). */
export function servesAsAttachment(input: { contentType: string; fileName: string; contentEncoding?: string | null }): boolean {
  return isActiveType(input.contentType) || isActiveExtension(input.fileName) || isEncoded(input.contentEncoding);
}

/** True when the upload must be private and downloaded, never rendered. */
export function isUnsafeActiveContent(input: { contentType: string; fileName: string; head: Buffer; contentEncoding?: string | null }): boolean {
  return servesAsAttachment(input) || looksActive(input.head);
}
