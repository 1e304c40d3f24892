// Signed CDN URLs with an injected clock (no waiting), and the CDN's parsing of request targets.
import { hkdfSync } from 'node:crypto';
import t from 'tap';
import { parseCdnTarget } from '../../src/cdn/targets.js';
import { deriveSigningKey, MAX_EXPIRES_IN, SIGNING_INFO, UrlSigner } from '../../src/assets/signed-url.js';

const MASTER = Buffer.alloc(32, 7);
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const asset = { id: '0123456789abcdef0123456789abcdef', fileName: 'photo.png' };

function clockAt(ms: number): { now: () => Date; set(ms: number): void } {
  let t = ms;
  return { now: () => new Date(t), set: (v) => (t = v) };
}

t.test('the key is HKDF-SHA256 of the master key with the documented info', async (t) => {
  const expected = Buffer.from(hkdfSync('sha256', MASTER, Buffer.alloc(0), SIGNING_INFO, 32));
  t.same(deriveSigningKey(MASTER), expected);
  t.notSame(deriveSigningKey(MASTER), MASTER);
  t.notSame(deriveSigningKey(Buffer.alloc(32, 8)), expected, 'another master key, another signing key');
});

t.test('sign then verify, through the expiry second and not after', async (t) => {
  const clock = clockAt(T0);
  const signer = UrlSigner.fromMasterKey(MASTER, clock.now);
  const sig = signer.sign(asset, 3600);
  t.equal(sig.expires, T0 / 1000 + 3600);
  t.match(sig.signature, /^[A-Za-z0-9_-]{43}$/, 'base64url of 32 bytes');
  t.equal(UrlSigner.query(sig), `expires=${sig.expires}&signature=${sig.signature}`);
  t.ok(signer.verify(asset, String(sig.expires), sig.signature), 'valid now');
  clock.set((sig.expires) * 1000 + 999);
  t.ok(signer.verify(asset, String(sig.expires), sig.signature), 'valid during the expiry second');
  clock.set((sig.expires + 1) * 1000);
  t.notOk(signer.verify(asset, String(sig.expires), sig.signature), 'expired one second later');
});

t.test('anything altered is refused', async (t) => {
  const clock = clockAt(T0);
  const signer = UrlSigner.fromMasterKey(MASTER, clock.now);
  const sig = signer.sign(asset, 600);
  const e = String(sig.expires);
  t.notOk(signer.verify({ ...asset, fileName: 'other.png' }, e, sig.signature), 'other file name');
  t.notOk(signer.verify({ ...asset, id: 'f'.repeat(32) }, e, sig.signature), 'other asset');
  t.notOk(signer.verify(asset, String(sig.expires + 1), sig.signature), 'later expiry');
  const flipped = (sig.signature[0] === 'A' ? 'B' : 'A') + sig.signature.slice(1);
  t.notOk(signer.verify(asset, e, flipped), 'one character changed');
  for (const [exp, s] of [['', sig.signature], ['abc', sig.signature], ['-1', sig.signature], [`${e}.0`, sig.signature], [e, ''],
    [e, sig.signature.slice(1)], [e, `${sig.signature}=`], [e, sig.signature.replace(/./, '+')], ['1e10', sig.signature]] as const) {
    t.notOk(signer.verify(asset, exp, s), `malformed ${JSON.stringify([exp, s.slice(0, 6)])}`);
  }
  const other = UrlSigner.fromMasterKey(Buffer.alloc(32, 9), clock.now);
  t.notOk(other.verify(asset, e, sig.signature), 'another master key');
});

t.test('an expiry further out than ever issued is refused', async (t) => {
  const clock = clockAt(T0);
  const signer = UrlSigner.fromMasterKey(MASTER, clock.now);
  const max = signer.sign(asset, MAX_EXPIRES_IN);
  t.ok(signer.verify(asset, String(max.expires), max.signature), 'the maximum lifetime works');
  clock.set(T0 - 10_000);
  t.notOk(signer.verify(asset, String(max.expires), max.signature), 'seen from before its issue, it reaches too far');
});

t.test('CDN targets: /<id>/<name> with only expires and signature read', async (t) => {
  const id = asset.id;
  t.same(parseCdnTarget(`/${id}/photo.png`), { id, fileName: 'photo.png' });
  t.same(parseCdnTarget(`/${id}/r%C3%A9sum%C3%A9%20%F0%9F%93%84.pdf`), { id, fileName: 'résumé 📄.pdf' });
  t.same(parseCdnTarget(`/${id}/a.png?foo=1&expires=10&signature=abc&bar`), { id, fileName: 'a.png', expires: '10', signature: 'abc' });
  t.same(parseCdnTarget(`/${id}/a.png?expires=10&expires=11&signature=abc`), { id, fileName: 'a.png' }, 'a repeated expires is no signature');
  t.same(parseCdnTarget(`/${id}/a.png?expires=10`), { id, fileName: 'a.png' }, 'half a signature is none');
  for (const bad of [undefined, '', '/', `/${id}`, `/${id}/`, `/${id}/a/b`, `/${id.toUpperCase()}/a.png`, `/${id}0/a.png`, `/../${id}/a.png`,
    `//${id}/a.png`, `/${id}/%E0%A4%A`, `/${id}/..%2f..%2fetc`, `http://x/${id}/a.png`]) {
    const parsed = parseCdnTarget(bad);
    // `..%2f..%2fetc` decodes to a name containing '/', which no stored file name has: it parses but never matches.
    if (bad === `/${id}/..%2f..%2fetc`) t.equal(parsed?.fileName, '../../etc');
    else t.equal(parsed, undefined, `${JSON.stringify(bad)} is not a target`);
  }
});
