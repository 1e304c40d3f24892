import t, { type Test } from 'tap';
import {
  DomainQueryError,
  isLdhLabel,
  MAX_QUERY_INPUT,
  normalizeExtension,
  normalizeQuery,
  show,
  type NormalizedQuery,
} from '../../src/domains/normalize.js';

type Domain = Extract<NormalizedQuery, { kind: 'domain' }>;

/** [typed, ascii, registrable, suffix, label, unicode?, registrableUnicode?] (unicode defaults to ascii). */
const DOMAINS: [string, string, string, string, string, string?, string?][] = [
  ['example.com', 'example.com', 'example.com', 'com', 'example'],
  ['EXAMPLE.COM', 'example.com', 'example.com', 'com', 'example'],
  ['  example.com  ', 'example.com', 'example.com', 'com', 'example'],
  ['\texample.com\n', 'example.com', 'example.com', 'com', 'example'],
  ['example.com.', 'example.com', 'example.com', 'com', 'example'],
  ['HTTPS://Shop.Example.co.uk:8443/path?q#x', 'shop.example.co.uk', 'example.co.uk', 'co.uk', 'example'],
  ['http://example.com', 'example.com', 'example.com', 'com', 'example'],
  ['http://example.com/', 'example.com', 'example.com', 'com', 'example'],
  ['https://example.com?x=1', 'example.com', 'example.com', 'com', 'example'],
  ['https://example.com#top', 'example.com', 'example.com', 'com', 'example'],
  ['https://example.com.:443/', 'example.com', 'example.com', 'com', 'example'],
  ['ftp://user:pw@files.example.org:21/pub', 'files.example.org', 'example.org', 'org', 'example'],
  ['git+ssh://git@example.dev/repo', 'example.dev', 'example.dev', 'dev', 'example'],
  ['//example.com/x', 'example.com', 'example.com', 'com', 'example'],
  ['example.com/some/path', 'example.com', 'example.com', 'com', 'example'],
  ['example.com:8080', 'example.com', 'example.com', 'com', 'example'],
  ['example.com:', 'example.com', 'example.com', 'com', 'example'],
  ['bob@example.com', 'example.com', 'example.com', 'com', 'example'],
  ['mailto:bob@example.com', 'example.com', 'example.com', 'com', 'example'],
  ['https://example.com\\evil', 'example.com', 'example.com', 'com', 'example'],
  // www is an ordinary subdomain
  ['www.example.com', 'www.example.com', 'example.com', 'com', 'example'],
  ['WWW.Example.COM.NG', 'www.example.com.ng', 'example.com.ng', 'com.ng', 'example'],
  ['i.am.example.co.uk', 'i.am.example.co.uk', 'example.co.uk', 'co.uk', 'example'],
  ['example.com.ng', 'example.com.ng', 'example.com.ng', 'com.ng', 'example'],
  ['example.ng', 'example.ng', 'example.ng', 'ng', 'example'],
  ['shop.example.com.au', 'shop.example.com.au', 'example.com.au', 'com.au', 'example'],
  ['123.com', '123.com', '123.com', 'com', '123'],
  ['a.io', 'a.io', 'a.io', 'io', 'a'],
  ['x-y.de', 'x-y.de', 'x-y.de', 'de', 'x-y'],
  ['a'.repeat(63) + '.com', 'a'.repeat(63) + '.com', 'a'.repeat(63) + '.com', 'com', 'a'.repeat(63)],
  // private PSL section ignored: registrable is the ICANN registrable domain
  ['foo.github.io', 'foo.github.io', 'github.io', 'io', 'github'],
  ['foo.blogspot.com', 'foo.blogspot.com', 'blogspot.com', 'com', 'blogspot'],
  ['app.herokuapp.com', 'app.herokuapp.com', 'herokuapp.com', 'com', 'herokuapp'],
  ['github.io', 'github.io', 'github.io', 'io', 'github'],
  // wildcard and exception rules (*.ck, !www.ck; *.kawasaki.jp, !city.kawasaki.jp)
  ['www.ck', 'www.ck', 'www.ck', 'ck', 'www'],
  ['shop.example.ck', 'shop.example.ck', 'shop.example.ck', 'example.ck', 'shop'],
  ['city.kawasaki.jp', 'city.kawasaki.jp', 'city.kawasaki.jp', 'kawasaki.jp', 'city'],
  // IDN
  ['münchen.de', 'xn--mnchen-3ya.de', 'xn--mnchen-3ya.de', 'de', 'xn--mnchen-3ya', 'münchen.de', 'münchen.de'],
  ['MÜNCHEN.DE', 'xn--mnchen-3ya.de', 'xn--mnchen-3ya.de', 'de', 'xn--mnchen-3ya', 'münchen.de', 'münchen.de'],
  ['xn--mnchen-3ya.de', 'xn--mnchen-3ya.de', 'xn--mnchen-3ya.de', 'de', 'xn--mnchen-3ya', 'münchen.de', 'münchen.de'],
  ['XN--MNCHEN-3YA.DE', 'xn--mnchen-3ya.de', 'xn--mnchen-3ya.de', 'de', 'xn--mnchen-3ya', 'münchen.de', 'münchen.de'],
  ['https://www.münchen.de/a', 'www.xn--mnchen-3ya.de', 'xn--mnchen-3ya.de', 'de', 'xn--mnchen-3ya', 'www.münchen.de', 'münchen.de'],
  ['bücher.com', 'xn--bcher-kva.com', 'xn--bcher-kva.com', 'com', 'xn--bcher-kva', 'bücher.com', 'bücher.com'],
  ['faß.de', 'xn--fa-hia.de', 'xn--fa-hia.de', 'de', 'xn--fa-hia', 'faß.de', 'faß.de'], // non-transitional
  ['Straße.de', 'xn--strae-oqa.de', 'xn--strae-oqa.de', 'de', 'xn--strae-oqa', 'straße.de', 'straße.de'],
  ['пример.рф', 'xn--e1afmkfd.xn--p1ai', 'xn--e1afmkfd.xn--p1ai', 'xn--p1ai', 'xn--e1afmkfd', 'пример.рф', 'пример.рф'],
  ['example.xn--p1ai', 'example.xn--p1ai', 'example.xn--p1ai', 'xn--p1ai', 'example', 'example.рф', 'example.рф'],
  ['ドメイン.jp', 'xn--eckwd4c7c.jp', 'xn--eckwd4c7c.jp', 'jp', 'xn--eckwd4c7c', 'ドメイン.jp', 'ドメイン.jp'],
  ['例え。jp', 'xn--r8jz45g.jp', 'xn--r8jz45g.jp', 'jp', 'xn--r8jz45g', '例え.jp', '例え.jp'], // ideographic full stop
  ['ＥＸＡＭＰＬＥ．ＣＯＭ', 'example.com', 'example.com', 'com', 'example'], // fullwidth, mapped by UTS #46
  ['ⓔxample.com', 'example.com', 'example.com', 'com', 'example'],
  ['ab\u00adc.com', 'abc.com', 'abc.com', 'com', 'abc'], // soft hyphen is mapped away
  ['موقع.عرب', 'xn--4gbrim.xn--ngbrx', 'xn--4gbrim.xn--ngbrx', 'xn--ngbrx', 'xn--4gbrim', 'موقع.عرب', 'موقع.عرب'],
  ['col·legi.cat', 'xn--collegi-xma.cat', 'xn--collegi-xma.cat', 'cat', 'xn--collegi-xma', 'col·legi.cat', 'col·legi.cat'],
  ['〇〇.jp', 'xn--w6ja.jp', 'xn--w6ja.jp', 'jp', 'xn--w6ja', '〇〇.jp', '〇〇.jp'],
  ['café.fr', 'xn--caf-dma.fr', 'xn--caf-dma.fr', 'fr', 'xn--caf-dma', 'café.fr', 'café.fr'],
  ['cafe\u0301.fr', 'xn--caf-dma.fr', 'xn--caf-dma.fr', 'fr', 'xn--caf-dma', 'café.fr', 'café.fr'], // NFC
];

/** [typed, ascii, unicode?] */
const LABELS: [string, string, string?][] = [
  ['acme', 'acme'],
  ['ACME ', 'acme'],
  ['  Acme-Shop\t', 'acme-shop'],
  ['acme.', 'acme'],
  ['https://acme/', 'acme'],
  ['localhost:3000', 'localhost'],
  ['123', '123'],
  ['12345', '12345'], // not the IPv4 address 0.0.48.57
  ['0x7f', '0x7f'],
  ['com', 'com'], // a single word is a name to try under the extensions sold, even when it is a TLD too
  ['shop', 'shop'],
  ['www', 'www'],
  ['a', 'a'],
  ['a'.repeat(63), 'a'.repeat(63)],
  ['münchen', 'xn--mnchen-3ya', 'münchen'],
  ['xn--mnchen-3ya', 'xn--mnchen-3ya', 'münchen'],
  ['ドメイン', 'xn--eckwd4c7c', 'ドメイン'],
  ['ＡＣＭＥ', 'acme'],
  ['１２３', '123'],
  ['xn--p1ai.', 'xn--p1ai', 'рф'],
];

const ERRORS: [string, RegExp][] = [
  ['', /^Type a domain name/],
  ['   ', /^Type a domain name/],
  ['\u3000', /^Type a domain name/],
  ['x'.repeat(MAX_QUERY_INPUT + 1), /too long \(1025 characters; at most 1024\)/],
  [' '.repeat(2000), /too long/],
  ['.', /is not a domain name/],
  ['https://', /has no domain name in it/],
  ['http:///path', /has no domain name in it/],
  ['user@', /has no domain name in it/],
  // public suffixes
  ['co.uk', /^"co\.uk" is a domain extension, not a domain name; add a name in front of it, such as "example\.co\.uk"\.$/],
  ['CO.UK.', /^"CO\.UK\." is a domain extension.*such as "example\.co\.uk"/],
  ['com.ng', /is a domain extension/],
  ['.com', /^"\.com" is a domain extension.*such as "example\.com"\.$/],
  ['.co.uk', /is a domain extension/],
  ['.РФ', /is a domain extension.*"example\.рф"/],
  ['kawasaki.jp', /is a domain extension/],
  ['example.ck', /is a domain extension/], // *.ck
  ['in-addr.arpa', /is a domain extension/],
  ['.example.com', /starts with a dot/],
  ['.notarealtld', /starts with a dot/],
  // unknown suffixes
  ['example.notarealtld', /"example\.notarealtld" is not a domain we can look up: "\.notarealtld" is not a known/],
  ['bücher.example', /not a domain we can look up: "\.example"/],
  ['ドメイン.テスト', /not a domain we can look up: "\.テスト"/],
  ['example.test', /not a domain we can look up/],
  ['example.local', /not a domain we can look up/],
  ['example.localhost', /not a domain we can look up/],
  ['example.invalid', /not a domain we can look up/],
  ['example.123', /not a domain we can look up: "\.123"/],
  ['1.2.3.4.5', /not a domain we can look up/],
  // IP addresses
  ['1.2.3.4', /"1\.2\.3\.4" is an IP address/],
  ['http://192.168.0.1:8080/', /is an IP address/],
  ['127.1', /is an IP address/],
  ['0x7f.1', /is an IP address/],
  ['１２７．０．０．１', /is an IP address/],
  ['[::1]', /"\[::1\]" is an IP address/],
  ['http://[2001:db8::1]:80/', /is an IP address/],
  ['::1', /is an IP address/],
  ['2001:db8::1', /is an IP address/],
  // characters
  ['foo_bar.com', /"foo_bar\.com" contains "_"; a domain name can only have letters, digits and hyphens\./],
  ['a b.com', /contains a space/],
  ['a\u00a0b.com', /contains a space/],
  ['a\u3000b.com', /contains a space/],
  ['foo!.com', /contains "!"/],
  ['foo*.com', /contains "\*"/],
  ['%41.com', /contains "%"/],
  ['a%2eb.com', /contains "%"/],
  ['exa<mple.com', /contains "<"/],
  ['example.com:abc', /contains ":"/],
  ['a\u0000b.com', /"a<U\+0000>b\.com" contains an invisible character \(U\+0000\)/],
  ['a\tb.com', /contains a space/],
  ['a\nb.com', /contains a space/],
  ['a\u007fb.com', /invisible character \(U\+007F\)/],
  ['ex\u200dample.com', /invisible character \(U\+200D\)/],
  ['ex\u200cample.com', /invisible character \(U\+200C\)/],
  ['\u202egnp.exe.com', /"<U\+202E>gnp\.exe\.com" contains an invisible character/],
  ['😀.com', /contains "😀" \(U\+1F600\)/],
  ['i❤.ws', /contains "❤" \(U\+2764\)/],
  ['1\ufe0f\u20e3.com', /U\+20E3/],
  ['a★b.com', /contains "★"/],
  ['a·b.cat', /contains "·"/],
  ['a\u30fbb.jp', /contains "・"/],
  ['xn--ls8h.la', /contains "💩"/], // punycode of an emoji
  ['\u0301a.com', /has a label that starts with a combining mark \(U\+0301\)/],
  ['⒈com', /contains|not a valid internationalised/],
  // labels
  ['a..com', /"a\.\.com" has an empty label \(two dots in a row\)/],
  ['example.com..', /"example\.com\.\." has an empty label/],
  ['a。。com', /has an empty label/],
  ['-a.com', /starts or ends with a hyphen/],
  ['a-.com', /starts or ends with a hyphen/],
  ['-acme', /starts or ends with a hyphen/],
  ['-', /starts or ends with a hyphen/],
  ['ab--cd.com', /"ab--cd" in "ab--cd\.com" has hyphens in the third and fourth places/],
  ['a'.repeat(64) + '.com', /has a label of 64 characters in its ASCII form; a label is at most 63/],
  ['a'.repeat(64), /label of 64 characters/],
  ['ü'.repeat(60) + '.de', /label of \d+ characters in its ASCII form/],
  [('a'.repeat(63) + '.').repeat(4) + 'com', /is too long: 259 characters in its ASCII form, at most 253/],
  [('ü'.repeat(20) + '.').repeat(10) + 'de', /is too long: \d+ characters in its ASCII form/],
  // punycode
  ['xn--abc.com', /"xn--abc" in "xn--abc\.com" is not valid punycode/],
  ['xn--a.com', /is not valid punycode/],
  ['xn--zz', /is not valid punycode/],
  ['xn--abc-.com', /starts or ends with a hyphen/],
  ['xn--abc-a.com', /is not valid punycode/], // decodes to plain ASCII
  ['xn--Mnchen-3ya.de.xn--', /hyphen|punycode/],
];

const EXTENSIONS: [string, string][] = [
  ['io', 'io'],
  ['.IO', 'io'],
  [' .co.uk ', 'co.uk'],
  ['CO.UK.', 'co.uk'],
  ['com.ng', 'com.ng'],
  ['xn--p1ai', 'xn--p1ai'],
  ['XN--P1AI', 'xn--p1ai'],
  ['рф', 'xn--p1ai'],
  ['.РФ', 'xn--p1ai'],
  ['．ｃｏｍ', 'com'],
  ['。コム', 'xn--tckwe'],
  ['com', 'com'],
  ['co', 'co'], // syntax only: a prefix a catalogue search can use
];

const EXTENSION_ERRORS: [string, RegExp][] = [
  ['', /^Type a domain extension/],
  ['  ', /^Type a domain extension/],
  ['.', /^Type a domain extension/],
  ['..', /^Type a domain extension/],
  ['..com', /has an empty label/],
  ['co..uk', /has an empty label/],
  ['_x', /contains "_"/],
  ['.c o', /contains a space/],
  ['-io', /hyphen/],
  ['io-', /hyphen/],
  ['123', /cannot be all digits/],
  ['xn--zz', /not valid punycode/],
  ['😀', /contains "😀"/],
  ['a'.repeat(64), /label of 64 characters/],
  ['x'.repeat(MAX_QUERY_INPUT + 1), /too long/],
  ['https://example.com', /contains ":"/],
];

function expectError(t: Test, fn: () => unknown, re: RegExp, name: string): void {
  try {
    const got = fn();
    t.fail(`${name} accepted: ${JSON.stringify(got)}`);
  } catch (err) {
    if (!(err instanceof DomainQueryError)) {
      t.fail(`${name}: ${String(err)} is not a DomainQueryError`);
      return;
    }
    t.match(err.message, re, name);
    t.equal(err.name, 'DomainQueryError');
    t.notMatch(err.message, /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u, `${name}: no control or invisible characters in the message`);
    t.ok(err.message.length < 300, `${name}: message stays short`);
  }
}

t.test('domains', async (t) => {
  for (const [typed, ascii, registrable, suffix, label, unicode, registrableUnicode] of DOMAINS) {
    const expected: Domain = {
      kind: 'domain',
      ascii,
      unicode: unicode ?? ascii,
      registrable,
      registrableUnicode: registrableUnicode ?? registrable,
      suffix,
      label,
    };
    t.same(normalizeQuery(typed), expected, JSON.stringify(typed));
  }
});

t.test('single labels', async (t) => {
  for (const [typed, ascii, unicode] of LABELS) {
    t.same(normalizeQuery(typed), { kind: 'label', ascii, unicode: unicode ?? ascii }, JSON.stringify(typed));
  }
});

t.test('refused queries say what is wrong', async (t) => {
  for (const [typed, re] of ERRORS) expectError(t, () => normalizeQuery(typed), re, JSON.stringify(typed.slice(0, 40)));
});

t.test('normalisation is idempotent: the ascii and unicode forms give the same answer', async (t) => {
  for (const [typed] of [...DOMAINS, ...LABELS]) {
    const first = normalizeQuery(typed);
    t.same(normalizeQuery(first.ascii), first, `${typed} via ascii`);
    t.same(normalizeQuery(first.unicode), first, `${typed} via unicode`);
  }
});

t.test('extensions', async (t) => {
  for (const [typed, ext] of EXTENSIONS) t.equal(normalizeExtension(typed), ext, JSON.stringify(typed));
  for (const [typed, re] of EXTENSION_ERRORS) {
    expectError(t, () => normalizeExtension(typed), re, JSON.stringify(typed.slice(0, 40)));
  }
});

t.test('isLdhLabel', async (t) => {
  const yes = ['a', 'A', '0', 'abc', 'a-b', 'a--b', 'xn--mnchen-3ya', 'a'.repeat(63), '123'];
  const no = ['', '-', '-a', 'a-', 'a_b', 'a.b', 'a b', 'ü', 'a'.repeat(64), 'a!'];
  for (const l of yes) t.ok(isLdhLabel(l), l);
  for (const l of no) t.notOk(isLdhLabel(l), l);
});

t.test('show quotes, truncates and escapes user text', async (t) => {
  t.equal(show('abc'), '"abc"');
  t.equal(show('a\u0000b\u202e'), '"a<U+0000>b<U+202E>"');
  t.equal(show('x'.repeat(100)), `"${'x'.repeat(59)}…"`);
  t.equal(show('😀'.repeat(100)), `"${'😀'.repeat(59)}…"`); // by code point, never a split surrogate pair
});

t.test('any input gives a query or a DomainQueryError, never another error', async (t) => {
  const alphabet = [
    ...'abcxyz0129-._:/@?#[]%!* \t',
    'ü', 'ß', 'ド', 'メ', 'р', 'ф', '。', '．', '\u0301', '\u200d', '\u00ad', '\u0000', '\u202e',
    '😀', '\ud800', '\udfff', '·', '・', '⒈', 'Ⅻ', '²', '\u3000', 'xn--', 'www.', 'https://', '.com', '.co.uk',
  ];
  let seed = 0x5eed;
  const next = (): number => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed >>> 8;
  };
  let accepted = 0;
  let refused = 0;
  for (let i = 0; i < 3000; i++) {
    const len = 1 + (next() % 12);
    let s = '';
    for (let j = 0; j < len; j++) s += alphabet[next() % alphabet.length] ?? '';
    for (const fn of [normalizeQuery, normalizeExtension]) {
      try {
        const got = fn(s);
        accepted++;
        const ascii = typeof got === 'string' ? got : got.ascii;
        if (!/^[a-z0-9-]+(?:\.[a-z0-9-]+)*$/.test(ascii)) t.fail(`${JSON.stringify(s)} -> ${ascii}`);
      } catch (err) {
        refused++;
        if (!(err instanceof DomainQueryError)) t.fail(`${JSON.stringify(s)}: ${String(err)}`);
        else if (/[\p{Cc}\p{Cf}\p{Cs}]/u.test(err.message)) t.fail(`${JSON.stringify(s)}: raw control in ${err.message}`);
      }
    }
  }
  t.ok(accepted > 0 && refused > 0, `${accepted} accepted, ${refused} refused`);
});
