// Origins as a table: what users send -> the origin stored, or the sentence (naming the field) that refuses it.
import t from 'tap';
import { DEFAULT_INDEX_DOCUMENT, OriginError, parseOriginInput, type OriginInput } from '../../src/projects/origin.js';

const PUBLIC_ONLY = { allowPrivateAddresses: false };
const ANY_ADDRESS = { allowPrivateAddresses: true };

/** [input, stored] with the default policy (public addresses only). */
const ACCEPTED: [unknown, OriginInput][] = [
  [{ kind: 'url', url: 'https://origin.example.com' }, { kind: 'url', url: 'https://origin.example.com', preserveHost: false }],
  [{ url: 'https://origin.example.com' }, { kind: 'url', url: 'https://origin.example.com', preserveHost: false }], // kind inferred
  [{ kind: 'url', url: 'https://origin.example.com/' }, { kind: 'url', url: 'https://origin.example.com', preserveHost: false }],
  [{ kind: 'url', url: 'HTTPS://Origin.Example.COM:443' }, { kind: 'url', url: 'https://origin.example.com', preserveHost: false }],
  [{ kind: 'url', url: 'http://origin.example.com:80' }, { kind: 'url', url: 'http://origin.example.com', preserveHost: false }],
  [{ kind: 'url', url: 'http://origin.example.com:8080', preserveHost: true }, { kind: 'url', url: 'http://origin.example.com:8080', preserveHost: true }],
  [{ kind: 'url', url: ' https://origin.example.com. ' }, { kind: 'url', url: 'https://origin.example.com', preserveHost: false }],
  [{ kind: 'url', url: 'https://münchen.de' }, { kind: 'url', url: 'https://xn--mnchen-3ya.de', preserveHost: false }],
  [{ kind: 'url', url: 'https://8.8.8.8' }, { kind: 'url', url: 'https://8.8.8.8', preserveHost: false }],
  [{ kind: 'url', url: 'http://[2606:4700:4700::1111]:8080' }, { kind: 'url', url: 'http://[2606:4700:4700::1111]:8080', preserveHost: false }],
  [{ kind: 'url', url: 'http://origin' }, { kind: 'url', url: 'http://origin', preserveHost: false }], // resolved and checked at connect time
  [{ kind: 'bucket', bucket: 'site' }, { kind: 'bucket', bucket: 'site', indexDocument: DEFAULT_INDEX_DOCUMENT, errorDocument: null }],
  [{ bucket: 'site' }, { kind: 'bucket', bucket: 'site', indexDocument: 'index.html', errorDocument: null }],
  [
    { kind: 'bucket', bucket: 'site', indexDocument: 'default.htm', errorDocument: 'errors/404.html' },
    { kind: 'bucket', bucket: 'site', indexDocument: 'default.htm', errorDocument: 'errors/404.html' },
  ],
  [{ kind: 'bucket', bucket: 'site', errorDocument: null }, { kind: 'bucket', bucket: 'site', indexDocument: 'index.html', errorDocument: null }],
  [{ kind: 'bucket', bucket: 'site', errorDocument: 'k'.repeat(1024) }, { kind: 'bucket', bucket: 'site', indexDocument: 'index.html', errorDocument: 'k'.repeat(1024) }],
  [{ kind: 'bucket', bucket: 'site', indexDocument: 'índice.html' }, { kind: 'bucket', bucket: 'site', indexDocument: 'índice.html', errorDocument: null }],
];

for (const [input, stored] of ACCEPTED) {
  t.test(`accepts ${JSON.stringify(input).slice(0, 120)}`, async (t) => {
    t.same(parseOriginInput(input, PUBLIC_ONLY), stored);
  });
}

/** [input, message] with the default policy; messages name the field under `body/origin`. */
const REFUSED: [unknown, RegExp][] = [
  [null, /^body\/origin must be an object/],
  ['https://origin.example.com', /^body\/origin must be an object: \{ "kind": "url"/],
  [[], /must be an object/],
  [{}, /^body\/origin\/kind must be 'url' or 'bucket'/],
  [{ kind: 'ftp', url: 'ftp://x.example.com' }, /^body\/origin\/kind must be 'url' or 'bucket'/],
  [{ kind: 'url', url: 'https://a.example.com', bucket: 'site' }, /^body\/origin has a field 'bucket' that a url origin does not take/],
  [{ kind: 'url', url: 'https://a.example.com', path: '/x' }, /field 'path'/],
  [{ kind: 'bucket', bucket: 'site', preserveHost: true }, /field 'preserveHost' that a bucket origin does not take/],
  // url
  [{ kind: 'url' }, /^body\/origin\/url must be a URL such as https:\/\/origin\.example\.com/],
  [{ kind: 'url', url: 42 }, /^body\/origin\/url must be a URL/],
  [{ kind: 'url', url: '' }, /^body\/origin\/url must be a URL/],
  [{ kind: 'url', url: 'origin.example.com' }, /^body\/origin\/url must start with http:\/\/ or https:\/\//],
  [{ kind: 'url', url: 'ftp://origin.example.com' }, /must start with http:\/\/ or https:\/\//],
  [{ kind: 'url', url: 'file:///etc/passwd' }, /must start with http:\/\/ or https:\/\//],
  [{ kind: 'url', url: 'https://origin.example.com/app' }, /^body\/origin\/url must be scheme, host and port only: no path, query or fragment/],
  [{ kind: 'url', url: 'https://origin.example.com?x=1' }, /no path, query or fragment/],
  [{ kind: 'url', url: 'https://origin.example.com/?' }, /no path, query or fragment/],
  [{ kind: 'url', url: 'https://origin.example.com#x' }, /no path, query or fragment/],
  [{ kind: 'url', url: 'https://origin.example.com\\x' }, /no path, query or fragment/],
  [{ kind: 'url', url: 'https://user:pw@origin.example.com' }, /^body\/origin\/url must not carry a user name or password/],
  [{ kind: 'url', url: 'https://@origin.example.com' }, /user name or password/],
  [{ kind: 'url', url: 'https://origin.example.com:0' }, /port 0/],
  [{ kind: 'url', url: 'https://origin.example.com:99999' }, /is not a valid URL/],
  [{ kind: 'url', url: 'https://' }, /is not a valid URL/],
  [{ kind: 'url', url: 'https://origin example.com' }, /contains a space/],
  [{ kind: 'url', url: 'https://origin_1.example.com' }, /is not a valid host name/],
  [{ kind: 'url', url: `https://${'a'.repeat(64)}.example.com` }, /is not a valid host name/],
  [{ kind: 'url', url: `https://${'x'.repeat(1100)}.com` }, /too long \(at most 1024 characters\)/],
  [{ kind: 'url', url: 'https://origin.example.com', preserveHost: 'yes' }, /^body\/origin\/preserveHost must be true or false/],
  // addresses the policy refuses, at set time
  [{ kind: 'url', url: 'http://169.254.169.254' }, /^body\/origin\/url: 169\.254\.169\.254 is a link-local address; an origin must be reachable on the public internet/],
  [{ kind: 'url', url: 'http://127.0.0.1:8080' }, /127\.0\.0\.1 is a loopback address; .*allows it with --edge-allow-private-origins true, or S3EDGE_EDGE_ALLOW_PRIVATE_ORIGINS=true, on the server and the admin CLI/],
  [{ kind: 'url', url: 'http://0x7f.1' }, /127\.0\.0\.1 is a loopback address/], // WHATWG reads it as 127.0.0.1
  [{ kind: 'url', url: 'http://2130706433' }, /127\.0\.0\.1 is a loopback address/],
  [{ kind: 'url', url: 'http://10.0.0.5' }, /10\.0\.0\.5 is a private address/],
  [{ kind: 'url', url: 'http://192.168.1.1' }, /private address/],
  [{ kind: 'url', url: 'http://100.64.0.1' }, /cgnat address/],
  [{ kind: 'url', url: 'http://0.0.0.0' }, /unspecified address/],
  [{ kind: 'url', url: 'http://[::1]' }, /::1 is a loopback address/],
  [{ kind: 'url', url: 'http://[::ffff:169.254.169.254]' }, /link-local address/],
  [{ kind: 'url', url: 'http://[fd00::1]' }, /private address/],
  [{ kind: 'url', url: 'http://localhost:3000' }, /localhost is this machine \(loopback\); .*--edge-allow-private-origins true/],
  [{ kind: 'url', url: 'http://api.localhost' }, /this machine/],
  // bucket
  [{ kind: 'bucket' }, /^body\/origin\/bucket must be the name of one of your buckets/],
  [{ kind: 'bucket', bucket: '' }, /bucket must be the name/],
  [{ kind: 'bucket', bucket: 7 }, /bucket must be the name/],
  [{ kind: 'bucket', bucket: 'site', indexDocument: '' }, /^body\/origin\/indexDocument must be an object key/],
  [{ kind: 'bucket', bucket: 'site', indexDocument: 'docs/index.html' }, /indexDocument must be a file name without '\/'/],
  [{ kind: 'bucket', bucket: 'site', indexDocument: 'a\u0000b' }, /indexDocument contains a control character/],
  [{ kind: 'bucket', bucket: 'site', errorDocument: 'k'.repeat(1025) }, /^body\/origin\/errorDocument is longer than 1024 bytes/],
  [{ kind: 'bucket', bucket: 'site', errorDocument: 'é'.repeat(513) }, /longer than 1024 bytes/], // 1026 UTF-8 bytes
  [{ kind: 'bucket', bucket: 'site', errorDocument: 404 }, /errorDocument must be an object key/],
  [{ kind: 'bucket', bucket: 'site', errorDocument: 'line\nbreak' }, /control character/],
];

for (const [input, message] of REFUSED) {
  t.test(`refuses ${JSON.stringify(input)?.slice(0, 120)}`, async (t) => {
    t.throws(() => parseOriginInput(input, PUBLIC_ONLY, 'body/origin'), { name: 'OriginError', message });
  });
}

t.test('edge.allowPrivateOrigins lets loopback and private literals through (a loopback origin in tests)', async (t) => {
  for (const url of ['http://127.0.0.1:8080', 'http://169.254.169.254', 'http://[::1]:9000', 'http://localhost:3000', 'http://10.1.2.3']) {
    t.same(parseOriginInput({ kind: 'url', url }, ANY_ADDRESS), { kind: 'url', url, preserveHost: false }, url);
  }
  t.throws(() => parseOriginInput({ kind: 'url', url: 'http://user@127.0.0.1' }, ANY_ADDRESS), OriginError, 'the URL rules still apply');
});

t.test('without a prefix, messages name the field alone (the CLI)', async (t) => {
  t.throws(() => parseOriginInput({ kind: 'url', url: 'http://169.254.169.254' }, PUBLIC_ONLY), { message: /^url: 169\.254\.169\.254 is a link-local address/ });
  t.throws(() => parseOriginInput('x', PUBLIC_ONLY), { message: /^the origin must be an object/ });
  t.throws(() => parseOriginInput({ kind: 'bucket', bucket: 'b', indexDocument: '' }, PUBLIC_ONLY), { message: /^indexDocument must be an object key/ });
});
