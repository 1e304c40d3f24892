// Content-Disposition per RFC 6266: `attachment; filename="<ASCII fallback>"` plus, when the name is not
// plain printable ASCII, `filename*=UTF-8''<percent-encoded>` (RFC 8187), which current browsers prefer.
// Built from any string, so even a name that escaped sanitising cannot end the quoted string, add a
// parameter or split the header: the fallback has no quote, backslash, control or non-ASCII character,
// and the extended value is percent-encoded down to RFC 8187's attr-char.

export type DispositionType = 'attachment' | 'inline';

/** Printable ASCII except the quote and the backslash (which would end or escape the quoted string). */
const FALLBACK_SAFE = /^[\x20-\x21\x23-\x5b\x5d-\x7e]$/;

/** RFC 8187 attr-char: ALPHA / DIGIT / "!" / "#" / "$" / "&" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~". */
const ATTR_CHAR = /[A-Za-z0-9!#$&+\-.^_`|~]/;

function asciiFallback(name: string): string {
  // One `_` per character (code point), not per UTF-16 unit or byte.
  let out = '';
  for (const ch of name) out += FALLBACK_SAFE.test(ch) ? ch : '_';
  return out.replace(/%(?=[0-9A-Fa-f]{2})/g, '_') || 'file';
}

function encodeExtValue(name: string): string {
  let out = '';
  for (const byte of Buffer.from(name, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x80 && ATTR_CHAR.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function contentDisposition(type: DispositionType, fileName: string): string {
  const fallback = asciiFallback(fileName);
  const header = `${type}; filename="${fallback}"`;
  return fallback === fileName ? header : `${header}; filename*=UTF-8''${encodeExtValue(fileName)}`;
}
