// Project hostnames as a table: what users type -> the stored name, or the sentence that refuses it.
import t from 'tap';
import { HostnameError, normalizeHostname, reservedHostnames } from '../../src/projects/hostname.js';

const CONFIG = {
  cdn: { hostname: 'cdn.example.net', publicUrl: 'https://files.example.org' },
  publicUrl: 'https://s3.example.io:9443',
  s3Domains: ['s3.example.com', 'storage.example.dev:9000'],
} as const;

const RESERVED = reservedHostnames(CONFIG as unknown as Parameters<typeof reservedHostnames>[0]);

t.test('the gateway\'s own names: CDN hostname, public URL hosts, S3 domains (no port)', async (t) => {
  t.same(RESERVED.sort(), ['cdn.example.net', 'files.example.org', 's3.example.com', 's3.example.io', 'storage.example.dev']);
  t.same(reservedHostnames({ cdn: { hostname: 'cdn.localhost', publicUrl: '' }, publicUrl: '', s3Domains: [] } as unknown as Parameters<typeof reservedHostnames>[0]), ['cdn.localhost']);
});

/** [typed, stored] */
const ACCEPTED: [string, string][] = [
  ['app.example.com', 'app.example.com'],
  ['example.com', 'example.com'],
  ['APP.Example.COM', 'app.example.com'],
  ['  www.example.com  ', 'www.example.com'],
  ['app.example.com.', 'app.example.com'],
  ['shop.example.co.uk', 'shop.example.co.uk'],
  ['example.com.ng', 'example.com.ng'],
  ['a.b.c.example.org', 'a.b.c.example.org'],
  ['münchen.de', 'xn--mnchen-3ya.de'],
  ['www.MÜNCHEN.de', 'www.xn--mnchen-3ya.de'],
  ['xn--mnchen-3ya.de', 'xn--mnchen-3ya.de'],
  ['пример.рф', 'xn--e1afmkfd.xn--p1ai'],
  ['app.github.io', 'app.github.io'], // under a private-section suffix: DNS verification decides
  ['123.com', '123.com'],
  ['x-y.example.com', 'x-y.example.com'],
  [`${'a'.repeat(63)}.example.com`, `${'a'.repeat(63)}.example.com`],
  // like the gateway's names, but not them nor under them
  ['mycdn.example.net', 'mycdn.example.net'],
  ['example.net', 'example.net'],
  ['s3.example.com.au', 's3.example.com.au'],
];

for (const [typed, stored] of ACCEPTED) {
  t.test(`accepts ${JSON.stringify(typed)}`, async (t) => {
    t.equal(normalizeHostname(typed, RESERVED), stored);
  });
}

const long = `${Array.from({ length: 4 }, () => 'a'.repeat(63)).join('.')}.com`; // 4 x 63 + 3 dots + '.com' = 259

const REFUSED: [unknown, RegExp][] = [
  // not a name at all
  ['', /give a hostname such as app\.example\.com/],
  ['   ', /give a hostname/],
  [42, /give a hostname/],
  [null, /give a hostname/],
  // a URL or more than the name
  ['https://app.example.com', /is a URL; give the hostname alone/],
  ['http://app.example.com/', /is a URL/],
  ['//app.example.com', /is a URL/],
  ['app.example.com/path', /has a path or query/],
  ['app.example.com?x=1', /has a path or query/],
  ['app.example.com#top', /has a path or query/],
  ['app.example.com\\x', /has a path or query/],
  ['user@app.example.com', /has a user name/],
  ['app.example.com:8080', /has a port/],
  ['app.example.com:', /has a port/],
  // wildcards
  ['*.example.com', /wildcard hostnames are not supported/],
  ['app.*.example.com', /wildcard/],
  // IP addresses
  ['1.2.3.4', /is an IP address, not a hostname/],
  ['127.0.0.1', /is an IP address/],
  ['169.254.169.254', /is an IP address/],
  ['0x7f.1', /is an IP address/],
  ['[::1]', /is an IP address/],
  ['::1', /is an IP address/],
  ['2001:db8::1', /is an IP address/],
  // single labels, suffixes, unknown endings
  ['localhost', /is a single label; give a full hostname such as localhost\.example\.com/],
  ['com', /single label/],
  ['co.uk', /is a domain extension, not a hostname/],
  ['com.ng', /is a domain extension/],
  ['.com', /is a domain extension/],
  ['app.localhost', /not a domain we can look up/],
  ['cdn.localhost', /not a domain we can look up/],
  ['printer.local', /not a domain we can look up/],
  ['app.example.test', /not a domain we can look up/],
  ['app.internal', /not a domain we can look up/],
  // syntax
  ['app..example.com', /empty label/],
  ['-app.example.com', /starts or ends with a hyphen/],
  ['app_1.example.com', /contains "_"/],
  ['app example.com', /contains a space/],
  [`${'a'.repeat(64)}.example.com`, /label of 64 characters/],
  [long, /too long: 259 characters in its ASCII form, at most 253/],
  ['ab--c.example.com', /reserved for punycode/],
  // the gateway's own names and names under them
  ['cdn.example.net', /one of this gateway's own names \(cdn\.example\.net\)/],
  ['CDN.EXAMPLE.NET.', /own names \(cdn\.example\.net\)/],
  ['img.cdn.example.net', /is under one of this gateway's own names \(cdn\.example\.net\)/],
  ['files.example.org', /own names \(files\.example\.org\)/],
  ['s3.example.io', /own names \(s3\.example\.io\)/],
  ['s3.example.com', /own names \(s3\.example\.com\)/],
  ['photos.s3.example.com', /under one of this gateway's own names \(s3\.example\.com\)/],
  ['bucket.storage.example.dev', /under one of this gateway's own names \(storage\.example\.dev\)/],
];

for (const [typed, message] of REFUSED) {
  t.test(`refuses ${JSON.stringify(typed)}`, async (t) => {
    t.throws(() => normalizeHostname(typed, RESERVED), { name: 'HostnameError', message });
    try {
      normalizeHostname(typed, RESERVED);
    } catch (err) {
      t.ok(err instanceof HostnameError, 'a HostnameError');
      t.ok((err as Error).message.length < 400, 'one short sentence');
    }
  });
}
