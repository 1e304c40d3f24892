// The pure rules of an upload: file-name sanitising, the stored content type, unsafe active content
// (by type, extension and sniffed bytes) and the Content-Disposition header built from any name.
import t from 'tap';
import { contentDisposition } from '../../src/assets/content-disposition.js';
import { isActiveExtension, isActiveType, isEncoded, isUnsafeActiveContent, looksActive, servesAsAttachment } from '../../src/assets/content-safety.js';
import { normalizeContentType } from '../../src/assets/content-type.js';
import { sanitizeFileName } from '../../src/assets/file-name.js';

t.test('file names: last path component, no controls/quotes/bidi, bounded, never empty', async (t) => {
  t.equal(sanitizeFileName('report.pdf'), 'report.pdf');
  t.equal(sanitizeFileName('../../etc/passwd'), 'passwd');
  t.equal(sanitizeFileName('C:\\Users\\me\\My File.txt'), 'My File.txt');
  t.equal(sanitizeFileName('a\r\nSet-Cookie: x=y.txt'), 'aSet-Cookie: x=y.txt');
  t.equal(sanitizeFileName('say "hi" it\'s `me`.txt'), 'say hi its me.txt');
  t.equal(sanitizeFileName('evil\u202Efdp.exe'), 'evilfdp.exe', 'right-to-left override removed');
  t.equal(sanitizeFileName('\u0000\u0007name\u007f.bin'), 'name.bin');
  t.equal(sanitizeFileName('résumé 📄.pdf'), 'résumé 📄.pdf', 'unicode kept');
  t.equal(sanitizeFileName('e\u0301.txt'), '\u00e9.txt', 'NFC');
  t.equal(sanitizeFileName('  spaced.txt  '), 'spaced.txt');
  t.equal(sanitizeFileName('trailing.dots...'), 'trailing.dots');
  for (const empty of [undefined, '', '   ', '.', '..', '...', '/', 'dir/', '\u0000\u0001', '""']) {
    t.equal(sanitizeFileName(empty), 'file', `${JSON.stringify(empty)} -> file`);
  }
  const long = sanitizeFileName(`${'é'.repeat(300)}.png`);
  t.ok(Buffer.byteLength(long) <= 255, 'at most 255 UTF-8 bytes');
  t.ok(long.endsWith('.png'), 'the extension survives the cut');
  t.notOk(long.includes('\ufffd'), 'no character split');
  const noExt = sanitizeFileName('😀'.repeat(100));
  t.ok(Buffer.byteLength(noExt) <= 255 && noExt.length % 2 === 0, 'emoji cut at a code point boundary');
});

t.test('content types: sane type/subtype or application/octet-stream', async (t) => {
  t.equal(normalizeContentType('image/PNG'), 'image/png');
  t.equal(normalizeContentType('text/plain; charset=UTF-8'), 'text/plain; charset=utf-8');
  t.equal(normalizeContentType('text/plain; format=flowed; charset="iso-8859-1"'), 'text/plain; charset=iso-8859-1');
  t.equal(normalizeContentType('text/plain; charset=bad value'), 'text/plain', 'a bad parameter is dropped, not kept');
  t.equal(normalizeContentType('application/vnd.api+json'), 'application/vnd.api+json');
  for (const bad of [undefined, '', 'png', 'image/', '/png', 'image/png/x', 'text/html\r\nx-evil: 1', 'ima ge/png', 'image/pngé', `a/${'b'.repeat(200)}`]) {
    t.equal(normalizeContentType(bad), 'application/octet-stream', `${JSON.stringify(bad)} -> octet-stream`);
  }
});

t.test('active content by declared type and by extension', async (t) => {
  for (const type of ['text/html', 'TEXT/HTML; charset=utf-8', 'image/svg+xml', 'application/xhtml+xml', 'text/xml', 'application/xml',
    'application/rss+xml', 'text/javascript', 'application/javascript', 'application/ecmascript', 'text/javascript1.5']) {
    t.ok(isActiveType(type), type);
  }
  for (const type of ['application/pdf', 'application/x-pdf', 'application/wasm', 'APPLICATION/PDF; x=y']) t.ok(isActiveType(type), `${type}: viewers and runtimes run it`);
  for (const type of ['image/png', 'text/plain', 'application/json', 'application/octet-stream', 'text/css']) {
    t.notOk(isActiveType(type), type);
  }
  for (const name of ['report.pdf', 'REPORT.PDF', 'module.wasm']) t.ok(isActiveExtension(name), name);
  for (const name of ['a.html', 'A.HTM', 'x.svg', 'x.SVGZ', 'feed.xml', 'app.js', 'mod.mjs', 'page.xhtml', 'a.b.shtml']) {
    t.ok(isActiveExtension(name), name);
  }
  for (const name of ['a.png', 'html', 'svg.txt', 'js', 'a.json', 'a.jsonl']) t.notOk(isActiveExtension(name), name);
});

t.test('active content by its first bytes, whatever the declared type', async (t) => {
  const yes = [
    '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
    '<?xml version="1.0"?><svg/>',
    '<!DOCTYPE html><p>x',
    '<!doctype HTML>',
    '<html>',
    '<HTML lang="en">',
    '<script>alert(1)</script>',
    '\ufeff<svg>',
    '   \r\n\t<html>',
    '<!-- comment --><div>',
    '<body onload=alert(1)>',
    '<iframe src=x>',
    'GIF89a junk <script>alert(1)</script>',
    'binary\u0000prefix<svg onload=alert(1)>',
  ];
  for (const s of yes) t.ok(looksActive(Buffer.from(s, 'utf8')), JSON.stringify(s));
  t.ok(looksActive(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<svg>', 'utf16le')])), 'UTF-16LE with BOM');
  t.ok(looksActive(Buffer.from('<html>', 'utf16le')), 'UTF-16LE without BOM');
  t.ok(looksActive(Buffer.from([0xfe, 0xff, 0, 0x3c, 0, 0x73, 0, 0x76, 0, 0x67, 0, 0x3e])), 'UTF-16BE with BOM');
  const no = ['\x89PNG\r\n\x1a\n', 'plain text file', '{"json": true}', '<bold>not a tag we know', '< html>', ''];
  for (const s of no) t.notOk(looksActive(Buffer.from(s, 'latin1')), JSON.stringify(s));
});

t.test('the upload rule: any one of type, extension or bytes', async (t) => {
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>');
  const png = Buffer.from('\x89PNG\r\n\x1a\n', 'latin1');
  t.ok(isUnsafeActiveContent({ contentType: 'image/png', fileName: 'x.png', head: svg }), 'an SVG declared as PNG');
  t.ok(isUnsafeActiveContent({ contentType: 'text/html', fileName: 'x.png', head: png }), 'declared HTML');
  t.ok(isUnsafeActiveContent({ contentType: 'image/png', fileName: 'x.html', head: png }), 'named .html');
  t.notOk(isUnsafeActiveContent({ contentType: 'image/png', fileName: 'x.png', head: png }), 'a real PNG');
});

t.test('Content-Disposition: one safe header from any name', async (t) => {
  t.equal(contentDisposition('attachment', 'report.pdf'), 'attachment; filename="report.pdf"');
  t.equal(contentDisposition('inline', 'a b.txt'), 'inline; filename="a b.txt"');
  const evil = contentDisposition('attachment', 'evil".html\r\nSet-Cookie: a=b');
  t.notMatch(evil, /[\r\n]/, 'no line break');
  t.equal(evil.split('"').length, 3, 'exactly one quoted string');
  t.match(evil, /^attachment; filename="evil_\.html__Set-Cookie: a=b"; filename\*=UTF-8''evil%22\.html%0D%0ASet-Cookie%3A%20a%3Db$/);
  const uni = contentDisposition('attachment', 'résumé 📄.pdf');
  t.equal(uni, `attachment; filename="r_sum_ _.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%F0%9F%93%84.pdf`);
  t.match(uni, /^[\x20-\x7e]+$/, 'pure printable ASCII');
  t.equal(contentDisposition('attachment', 'back\\slash.txt'), `attachment; filename="back_slash.txt"; filename*=UTF-8''back%5Cslash.txt`);
  t.equal(contentDisposition('attachment', '100%41.txt'), `attachment; filename="100_41.txt"; filename*=UTF-8''100%2541.txt`,
    'no %XX in the fallback (some browsers decode it)');
  t.equal(contentDisposition('attachment', ''), `attachment; filename="file"; filename*=UTF-8''`);
});

t.test('PDF and wasm by their bytes; any Content-Encoding makes stored bytes an attachment', async (t) => {
  t.ok(looksActive(Buffer.from('%PDF-1.7\n%\xe2\xe3\n1 0 obj', 'latin1')), 'a PDF header');
  t.ok(looksActive(Buffer.concat([Buffer.from('junk before the header '), Buffer.from('%PDF-1.4')])), 'a PDF header within the first KiB');
  t.ok(looksActive(Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00])), 'wasm magic');
  t.notOk(looksActive(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'a PNG');
  for (const enc of ['gzip', 'br', 'GZIP', 'deflate', 'aws-chunked']) t.ok(isEncoded(enc), enc);
  for (const enc of [null, undefined, '', 'identity', ' Identity ']) t.notOk(isEncoded(enc), String(enc));
  t.ok(servesAsAttachment({ contentType: 'image/png', fileName: 'x.png', contentEncoding: 'gzip' }), 'gzip bytes declared image/png');
  t.notOk(servesAsAttachment({ contentType: 'image/png', fileName: 'x.png', contentEncoding: null }), 'a plain PNG is inline');
  t.ok(isUnsafeActiveContent({ contentType: 'image/png', fileName: 'x.png', head: Buffer.from('%PDF-1.5'), contentEncoding: null }), 'a PDF named x.png');
});

