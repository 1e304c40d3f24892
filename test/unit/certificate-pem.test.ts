// Certificate checks (src/certificates/certificate-pem.ts) on real certificates made by openssl: the
// name, the validity, the key and the chain order, each refusal saying what to fix; and the ACME
// schedule's arithmetic (renewal at two-thirds, backoff doubling from a minute to a day).
import t from 'tap';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { checkCertificate, covers } from '../../src/certificates/certificate-pem.js';
import { backoffMs, renewalTime } from '../../src/certificates/issuance.js';
import { tempDir } from '../helpers/temp-data.js';

const run = promisify(execFile);
const dir = tempDir(t, 's3edge-certpem-');

/** A self-signed leaf for `san` (and its key), valid for two days from now. */
async function leaf(name: string, san: string): Promise<{ cert: string; key: string }> {
  const conf = join(dir, `${name}.cnf`);
  await writeFile(conf, `[req]\ndistinguished_name = dn\nx509_extensions = v3\nprompt = no\n[dn]\nCN = ${san}\n[v3]\nsubjectAltName = DNS:${san}\n`);
  const certFile = join(dir, `${name}.pem`);
  const keyFile = join(dir, `${name}.key`);
  await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyFile, '-out', certFile, '-config', conf, '-days', '2']);
  return { cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8') };
}

const now = Date.now();
const good = await leaf('good', 'app.example.com');
const other = await leaf('other', 'other.example.com');

t.test('a current certificate for the name with its key is accepted', async (t) => {
  const c = checkCertificate(good.cert, good.key, 'app.example.com', now);
  t.same(c.names, ['app.example.com']);
  t.ok(c.notAfter > now && c.notBefore <= now);
  t.match(c.fingerprint, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
  t.match(c.keyPem, /^-----BEGIN PRIVATE KEY-----/, 'the key kept as PKCS#8');
});

t.test('each refusal says what to fix', async (t) => {
  t.throws(() => checkCertificate(good.cert, good.key, 'www.example.com', now), { name: 'CertificateError', message: /is for app\.example\.com, not www\.example\.com: give a certificate whose subjectAltName names www\.example\.com/ });
  t.throws(() => checkCertificate(good.cert, other.key, 'app.example.com', now), { message: /private key does not belong to the certificate/ });
  t.throws(() => checkCertificate('hello', good.key, 'app.example.com', now), { message: /No certificate found/ });
  t.throws(() => checkCertificate(good.cert, 'not a key', 'app.example.com', now), { message: /not a PEM private key/ });
  t.throws(() => checkCertificate(`${good.cert}${other.cert}`, good.key, 'app.example.com', now), { message: /Certificate 2 of the chain did not issue certificate 1/ });
  t.throws(() => checkCertificate('x'.repeat(70 * 1024), good.key, 'app.example.com', now), { message: /over 64 KiB/ });
  const later = now + 10 * 86_400_000;
  t.throws(() => checkCertificate(good.cert, good.key, 'app.example.com', later), { message: /expired on \d{4}-\d\d-\d\dT[0-9:.]+Z: give a current one/ });
  t.throws(() => checkCertificate(good.cert, good.key, 'app.example.com', now - 86_400_000), { message: /not valid before/ });
});

t.test('wildcards cover one leftmost label', async (t) => {
  t.ok(covers(['*.example.com'], 'a.example.com'));
  t.notOk(covers(['*.example.com'], 'a.b.example.com'));
  t.notOk(covers(['*.example.com'], 'example.com'));
  t.ok(covers(['example.com'], 'example.com'));
});

t.test('renewal at two-thirds; backoff from a minute, doubling, at most a day', async (t) => {
  t.equal(renewalTime(0, 90_000), 60_000);
  t.equal(renewalTime(1_000, 7_776_001_000), 5_184_001_000, '90 days: renewed after 60');
  t.same([1, 2, 3, 4].map(backoffMs), [60_000, 120_000, 240_000, 480_000]);
  t.equal(backoffMs(30), 86_400_000);
});
