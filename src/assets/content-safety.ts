// Unsafe active content: anything a browser may run as a document or script when it is opened from our
// CDN host (HTML, XHTML, SVG, XML with its stylesheets, JavaScript, and a few legacy cousins). Such an
// upload is forced private (SPEC.md §3) whatever was asked, and is always served as an attachment.
//
// Judged three ways, any one suffices: the declared content type, the file name's extension, and the
// first bytes themselves, because a declared type or an extension is whatever the uploader chose (an
// SVG sent as image/png named x.png is still an SVG to a sniffing browser).
import { essenceOf } from './content-type.js';

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
]);

const ACTIVE_EXTENSIONS = new Set([
  'html', 'htm', 'shtml', 'shtm', 'xhtml', 'xht', 'svg', 'svgz', 'xml', 'xsl', 'xslt', 'js', 'mjs', 'cjs',
  'jsx', 'swf', 'hta', 'mht', 'mhtml', 'htc',
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
  const text = sniffText(head);
  for (const tag of LEADING_TAGS) {
    if (!text.startsWith(tag)) continue;
    const after = text.slice(tag.length);
    // `<?xml`, `<!--` and prefixed names need no terminator; a cut-off head counts as a match.
    if (after === '' || tag.startsWith('<?') || tag === '<!--' || tag.endsWith(':') || TAG_END.test(after)) return true;
  }
  return EMBEDDED_TAGS.some((tag) => text.includes(tag));
}

/** True when the upload must be private and downloaded, never rendered. */
export function isUnsafeActiveContent(input: { contentType: string; fileName: string; head: Buffer }): boolean {
  return isActiveType(input.contentType) || isActiveExtension(input.fileName) || looksActive(input.head);
}
