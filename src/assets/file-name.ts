// The file name of an upload as we keep it: the last path component only, with nothing that could break
// a header, a URL path segment or a terminal (control, bidi-override and quote characters), at most
// 255 UTF-8 bytes, never empty and never `.`/`..` (a URL segment browsers would resolve away).

/** Bytes of UTF-8, the usual file-system limit for one name. */
export const MAX_FILE_NAME_BYTES = 255;
export const DEFAULT_FILE_NAME = 'file';

// C0 and C1 controls, DEL, quotes and the backtick, and the invisible direction/formatting characters
// that make `evil\u202Efdp.exe` display as `evilexe.pdf`.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f"'`\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;

/** Cuts `s` to at most `max` UTF-8 bytes without splitting a character (code point). */
function cutUtf8(s: string, max: number): string {
  let bytes = 0;
  let out = '';
  for (const ch of s) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (bytes + n > max) break;
    bytes += n;
    out += ch;
  }
  return out;
}

/** Shortens a long name, keeping a short extension (`.pdf`) when there is one. */
function limitLength(name: string): string {
  if (Buffer.byteLength(name, 'utf8') <= MAX_FILE_NAME_BYTES) return name;
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 ? name.slice(dot) : '';
  if (ext.length > 1 && Buffer.byteLength(ext, 'utf8') <= 16) {
    return cutUtf8(name.slice(0, dot), MAX_FILE_NAME_BYTES - Buffer.byteLength(ext, 'utf8')) + ext;
  }
  return cutUtf8(name, MAX_FILE_NAME_BYTES);
}

export function sanitizeFileName(raw: string | undefined): string {
  if (!raw) return DEFAULT_FILE_NAME;
  // Both separators: a Windows client sends `C:\Users\me\a.txt`.
  const last = raw.split(/[/\\]/).pop() ?? '';
  // Leading/trailing blanks and trailing dots are invisible, or dropped by file systems.
  const name = limitLength(last.normalize('NFC').replace(UNSAFE, '').trim().replace(/[. ]+$/, '')).trim();
  return name === '' ? DEFAULT_FILE_NAME : name;
}
