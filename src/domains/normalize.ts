// What a user types into the domain search box -> the name to look up, or one sentence saying what is wrong.
//
// Decisions (issue 16):
// - Pasted URLs are reduced to their host: scheme (`https://`, `ftp://`, ...), userinfo, port, path, query
//   and fragment are dropped; case, surrounding spaces and one trailing dot are normalised away.
// - IDN: each name is mapped and converted by UTS #46 as browsers do (node:url domainToASCII:
//   non-transitional, so `faß.de` stays `faß`), and we return both forms. On top of that we apply the
//   IDNA2008 rules UTS #46 leaves loose, since registries enforce them (approximated by Unicode category,
//   no IDNA table shipped): letters, marks and digits only (no emoji or symbols, `xn--ls8h` included), the
//   punctuation IDNA2008 allows only in context (Catalan l·l, ͵ ׳ ״ ・), no `--` in the third and fourth
//   positions unless the label is `xn--` punycode, and punycode that round-trips and decodes to non-ASCII. What WHATWG host parsing adds is refused: `%` escapes,
//   IPv4 forms (`1.2.3.4`, `127.1`, `0x7f.1`), IPv6 (`[::1]`); a lone number (`12345`) stays a label.
// - The registrable name comes from the public suffix list (tldts, bundled, no network), ICANN section
//   only: a reseller sells ICANN names, so `foo.github.io` is a subdomain of `github.io` (suffix `io`),
//   not a registrable name of its own.
// - A leading `www.` is an ordinary subdomain: `ascii` keeps it, `registrable` drops it like any other.
// - A single label (`acme`, `münchen`, also `shop` or `com`) is a `label` query: the caller tries it under
//   the extensions it sells. A dotted name that is itself a public suffix (`co.uk`) is refused, and so is
//   a name whose ending the ICANN list does not know (`example.notarealtld`, `.test`, `.local`). Whether
//   the extension is one we sell is the caller's question (its catalogue), not this module's.
import { domainToASCII, domainToUnicode } from 'node:url';
import { createRequire } from 'node:module';
import type { parse as tldtsParse } from 'tldts';

/** The public suffix list (tldts: one large module) loads with its first use, not with the server. */
let psl: typeof tldtsParse | undefined;
function parse(...args: Parameters<typeof tldtsParse>): ReturnType<typeof tldtsParse> {
  psl ??= (createRequire(import.meta.url)('tldts') as { parse: typeof tldtsParse }).parse;
  return psl(...args);
}

export class DomainQueryError extends Error {
  override name = 'DomainQueryError';
}

export type NormalizedQuery =
  | {
      kind: 'domain';
      /** The whole name in ASCII (punycode), lowercase, no trailing dot: `shop.xn--mnchen-3ya.de`. */
      ascii: string;
      unicode: string;
      /** The ICANN registrable domain in ASCII: `example.co.uk`. */
      registrable: string;
      registrableUnicode: string;
      /** The ICANN public suffix in ASCII: `co.uk`. */
      suffix: string;
      /** The registrable domain's first label in ASCII: `example`. */
      label: string;
    }
  | { kind: 'label'; ascii: string; unicode: string };

/** Raw input longer than this is refused before any parsing. */
export const MAX_QUERY_INPUT = 1024;
const MAX_LABEL_OCTETS = 63;
const MAX_NAME_OCTETS = 253;

const PSL_OPTIONS = {
  allowIcannDomains: true,
  allowPrivateDomains: false,
  detectIp: false,
  extractHostname: false,
  mixedInputs: false,
  validateHostname: false,
} as const;

/** Letters, digits and hyphen, not starting or ending with a hyphen, 1 to 63 octets (RFC 1035/1123). */
export function isLdhLabel(label: string): boolean {
  return /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i.test(label);
}

export function normalizeQuery(raw: string): NormalizedQuery {
  const shown = hostOf(checkedInput(raw, NAME));
  const host = shown.replace(/[.\u3002\uFF0E\uFF61]$/, '');
  if (host === '') throw new DomainQueryError(`${show(shown)} is not a domain name.`);
  if (DOTS.test(host[0] ?? '')) {
    // `.com`, `.co.uk`: an extension typed where a name goes.
    const ext = publicSuffixOf(host.slice(1));
    if (ext !== undefined) throw isSuffixError(shown, ext);
    throw new DomainQueryError(`${show(shown)} starts with a dot; type a name such as example.com.`);
  }
  const { ascii, unicode, labels } = toAsciiName(host, shown);
  if (labels.length >= 2 && labels.every((l) => /^(?:\d+|0x[0-9a-f]*)$/.test(l)) && labels.length <= 4) {
    throw new DomainQueryError(`${show(shown)} is an IP address, not a domain name.`);
  }
  if (labels.length === 1) return { kind: 'label', ascii, unicode };

  const p = parse(ascii, PSL_OPTIONS);
  const suffix = p.publicSuffix;
  if (p.isIcann !== true || suffix === null) {
    const ending = suffix ?? labels[labels.length - 1] ?? ascii;
    throw new DomainQueryError(
      `${show(shown)} is not a domain we can look up: ${show('.' + toUnicode(ending))} is not a known domain extension.`,
    );
  }
  if (p.domain === null || p.domainWithoutSuffix === null) throw isSuffixError(shown, unicode);
  return {
    kind: 'domain',
    ascii,
    unicode,
    registrable: p.domain,
    registrableUnicode: toUnicode(p.domain),
    suffix,
    label: p.domainWithoutSuffix,
  };
}

/**
 * The extension typed into the TLD search (`io`, `.IO`, ` .co.uk `, `xn--p1ai`, `рф`) -> its ASCII form
 * without the leading dot (`io`, `co.uk`, `xn--p1ai`). Only its syntax is checked: whether it exists or is
 * sold is the catalogue's question.
 */
export function normalizeExtension(raw: string): string {
  let text = checkedInput(raw, EXTENSION);
  text = text.replace(/^[.\u3002\uFF0E\uFF61]/, '').replace(/[.\u3002\uFF0E\uFF61]$/, '');
  if (text === '') throw new DomainQueryError(`Type ${EXTENSION}.`);
  const { ascii, labels } = toAsciiName(text, raw.trim());
  const last = labels[labels.length - 1] ?? '';
  if (/^\d+$/.test(last)) {
    throw new DomainQueryError(`${show(raw.trim())} is not a domain extension: an extension cannot be all digits.`);
  }
  return ascii;
}

// --- input and URL ---------------------------------------------------------------------------------

function checkedInput(raw: string, what: string): string {
  if (typeof raw !== 'string') throw new DomainQueryError(`Type ${what}.`);
  if (raw.length > MAX_QUERY_INPUT) {
    throw new DomainQueryError(`The text is too long (${raw.length} characters; at most ${MAX_QUERY_INPUT}).`);
  }
  const text = raw.trim();
  if (text === '') throw new DomainQueryError(`Type ${what}.`);
  return text;
}

const NAME = 'a domain name, such as example.com';
const EXTENSION = 'a domain extension, such as .com or .co.uk';

/** The host part of what may be a pasted URL. */
function hostOf(text: string): string {
  let s = text.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').replace(/^\/\//, '');
  const end = s.search(/[/?#\\]/);
  if (end >= 0) s = s.slice(0, end);
  const at = s.lastIndexOf('@');
  if (at >= 0) s = s.slice(at + 1);
  if (s.startsWith('[') || (/^[0-9a-f:.]+$/i.test(s) && (s.match(/:/g) ?? []).length >= 2)) {
    throw new DomainQueryError(`${show(text)} is an IP address, not a domain name.`);
  }
  s = s.replace(/:\d*$/, '');
  if (s.includes(':')) throw badCharacter(text, ':');
  if (s === '') throw new DomainQueryError(`${show(text)} has no domain name in it.`);
  return s;
}

// --- names and labels ------------------------------------------------------------------------------

const DOTS = /[.\u3002\uFF0E\uFF61]/;

/** `name` (no leading or trailing dot) -> its checked ASCII and Unicode forms; `shown` names it in errors. */
function toAsciiName(name: string, shown: string): { ascii: string; unicode: string; labels: string[] } {
  for (const ch of name) {
    if (/^[a-z0-9.-]$/i.test(ch)) continue;
    if (/[\p{Cc}\p{Z}]/u.test(ch) || ch.charCodeAt(0) < 0x80) throw badCharacter(shown, ch);
  }
  const rawLabels = name.split(DOTS);
  for (const l of rawLabels) {
    if (l === '') throw new DomainQueryError(`${show(shown)} has an empty label (two dots in a row).`);
  }
  // Converted with a letter label after it: WHATWG reads a host whose last label is a number as an IPv4
  // address (`12345` -> `0.0.48.57`); normalizeQuery refuses IP forms itself, on the ASCII labels.
  const converted = domainToASCII(`${name}.a`);
  if (converted === '' || !converted.endsWith('.a')) {
    for (const l of rawLabels) checkConvertible(l, shown);
    throw new DomainQueryError(`${show(shown)} is not a valid internationalised domain name.`);
  }
  const ascii = converted.slice(0, -2);
  const labels = ascii.split('.');
  for (const l of labels) checkAsciiLabel(l, shown);
  if (ascii.length > MAX_NAME_OCTETS) {
    throw new DomainQueryError(
      `${show(shown)} is too long: ${ascii.length} characters in its ASCII form, at most ${MAX_NAME_OCTETS}.`,
    );
  }
  const unicode = toUnicode(ascii);
  for (const u of unicode.split('.')) checkUnicodeLabel(u, shown);
  return { ascii, unicode, labels };
}

function checkConvertible(label: string, shown: string): void {
  if (domainToASCII(`${label}.a`) !== '') return;
  if (/^xn--/i.test(label)) throw new DomainQueryError(`${show(label)} in ${show(shown)} is not valid punycode.`);
  if (/^\p{M}/u.test(label)) {
    throw new DomainQueryError(`${show(shown)} has a label that starts with a combining mark (${codePoint(label)}).`);
  }
  const bad = [...label].find((ch) => !/[\p{L}\p{M}\p{Nd}-]/u.test(ch));
  if (bad !== undefined) throw badCharacter(shown, bad);
  throw new DomainQueryError(`${show(label)} in ${show(shown)} is not a valid internationalised label.`);
}

function checkAsciiLabel(label: string, shown: string): void {
  if (label === '') throw new DomainQueryError(`${show(shown)} has an empty label (two dots in a row).`);
  if (label.length > MAX_LABEL_OCTETS) {
    throw new DomainQueryError(
      `${show(shown)} has a label of ${label.length} characters in its ASCII form; a label is at most ${MAX_LABEL_OCTETS}.`,
    );
  }
  const bad = [...label].find((ch) => !/^[a-z0-9-]$/.test(ch));
  if (bad !== undefined) throw badCharacter(shown, bad);
  if (label.startsWith('-') || label.endsWith('-')) {
    throw new DomainQueryError(`${show(shown)} has a label that starts or ends with a hyphen.`);
  }
  if (label.slice(2, 4) === '--') {
    if (!label.startsWith('xn--')) {
      throw new DomainQueryError(
        `${show(label)} in ${show(shown)} has hyphens in the third and fourth places, which are reserved for punycode (xn--).`,
      );
    }
    const decoded = toUnicode(label);
    if (/^[\x00-\x7f]*$/.test(decoded) || domainToASCII(`${decoded}.a`) !== `${label}.a`) {
      throw new DomainQueryError(`${show(label)} in ${show(shown)} is not valid punycode.`);
    }
  }
}

/** IDNA2008's rules that UTS #46 (as browsers apply it) does not enforce. */
function checkUnicodeLabel(label: string, shown: string): void {
  const chars = [...label];
  if (chars[0] !== undefined && /\p{M}/u.test(chars[0])) {
    throw new DomainQueryError(`${show(label)} in ${show(shown)} starts with a combining mark.`);
  }
  chars.forEach((ch, i) => {
    if (/[\p{Ll}\p{Lu}\p{Lo}\p{Lm}\p{Mn}\p{Mc}\p{Nd}\u3007-]/u.test(ch)) return; // U+3007 〇 is PVALID (Nl)
    const before = chars[i - 1] ?? '';
    const after = chars[i + 1] ?? '';
    if (ch === '\u00b7' && before === 'l' && after === 'l') return; // Catalan l·l
    if (ch === '\u0375' && /\p{Script=Greek}/u.test(after)) return; // Greek lower numeral sign
    if ((ch === '\u05f3' || ch === '\u05f4') && /\p{Script=Hebrew}/u.test(before)) return; // geresh, gershayim
    if (ch === '\u30fb' && /[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}]/u.test(label.replace(/\u30fb/g, ''))) {
      return; // katakana middle dot
    }
    throw badCharacter(shown, ch);
  });
}

/** `name` in Unicode when it is itself an ICANN public suffix (`co.uk`, `рф`). */
function publicSuffixOf(name: string): string | undefined {
  try {
    const { ascii, unicode } = toAsciiName(name, name);
    const p = parse(ascii, PSL_OPTIONS);
    return p.isIcann === true && p.domain === null ? unicode : undefined;
  } catch (err) {
    if (err instanceof DomainQueryError) return undefined;
    throw err;
  }
}

/** domainToUnicode without WHATWG's IPv4 reading of a numeric last label (`123` -> `0.0.0.123`). */
function toUnicode(ascii: string): string {
  return domainToUnicode(`${ascii}.a`).slice(0, -2);
}

// --- messages --------------------------------------------------------------------------------------

function isSuffixError(shown: string, suffix: string): DomainQueryError {
  return new DomainQueryError(
    `${show(shown)} is a domain extension, not a domain name; add a name in front of it, such as ${show(`example.${suffix}`)}.`,
  );
}

function badCharacter(shown: string, ch: string): DomainQueryError {
  const what = /\s/u.test(ch)
    ? 'a space'
    : /\p{C}/u.test(ch)
      ? `an invisible character (${codePoint(ch)})`
      : ch.charCodeAt(0) < 0x80
        ? show(ch)
        : `${show(ch)} (${codePoint(ch)})`;
  return new DomainQueryError(
    `${show(shown)} contains ${what}; a domain name can only have letters, digits and hyphens.`,
  );
}

function codePoint(ch: string): string {
  return `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

const SHOW_MAX = 60;

/** User text, quoted, at most SHOW_MAX characters; invisible and control characters written as their code point (<U+001F>). */
export function show(text: string): string {
  const chars = [...text];
  const cut = chars.length > SHOW_MAX ? chars.slice(0, SHOW_MAX - 1) : chars;
  const body = cut.map((ch) => (/[\p{C}\p{Zl}\p{Zp}]/u.test(ch) ? `<${codePoint(ch)}>` : ch)).join('');
  return `"${body}${cut.length < chars.length ? '…' : ''}"`;
}
