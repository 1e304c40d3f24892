// Comma-separated header field values (RFC 9110 §5.6.1), split outside quoted strings: Cache-Control
// directives, entity-tag lists.

/** Splits on commas outside quoted strings; items trimmed, empty items dropped. */
export function splitQuotedList(value: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i] as string;
    if (quoted && c === '\\' && i + 1 < value.length) {
      cur += c + (value[++i] as string);
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === ',' && !quoted) {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out.map((s) => s.trim()).filter((s) => s !== '');
}
