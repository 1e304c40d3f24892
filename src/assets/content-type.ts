// The content type an asset is stored and served with: the upload part's own Content-Type when it is a
// well-formed `type/subtype` (RFC 9110 tokens), lowercased, keeping only a well-formed charset
// parameter; anything else (missing, garbage, header-splitting attempts) is application/octet-stream.

export const OCTET_STREAM = 'application/octet-stream';

const TOKEN = "[a-z0-9!#$%&'*+.^_`|~-]{1,127}";
const ESSENCE = new RegExp(`^(${TOKEN})/(${TOKEN})$`);
const CHARSET = /^"?([a-z0-9._:-]{1,40})"?$/;

export function normalizeContentType(raw: string | undefined): string {
  if (!raw) return OCTET_STREAM;
  const [essenceRaw = '', ...params] = raw.split(';');
  const essence = essenceRaw.trim().toLowerCase();
  if (!ESSENCE.test(essence)) return OCTET_STREAM;
  for (const param of params) {
    const eq = param.indexOf('=');
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    const m = CHARSET.exec(param.slice(eq + 1).trim().toLowerCase());
    return m ? `${essence}; charset=${m[1] as string}` : essence;
  }
  return essence;
}

/** `text/html; charset=utf-8` -> `text/html`. */
export function essenceOf(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}
