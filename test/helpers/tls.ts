// A throwaway self-signed certificate for 127.0.0.1 / localhost, made with openssl at test time.
// The same file is the server's certificate and the clients' CA bundle (aws cli `--ca-bundle`,
// boto3 `verify=`, curl `--cacert`, node `ca:`). And certificates for project hostnames: a test CA,
// leaves for a DNS name with a chosen validity (expired too), CA-signed or self-signed, and stray keys.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** The certificate again, named for its use as a trust anchor by clients. */
  caFile: string;
}

// A config of our own so the host's openssl.cnf never changes what we generate.
const OPENSSL_CONFIG = `[req]
distinguished_name = dn
x509_extensions = v3
prompt = no

[dn]
CN = 127.0.0.1

[v3]
basicConstraints = critical, CA:TRUE
keyUsage = critical, digitalSignature, keyCertSign
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
`;

export async function generateSelfSignedCert(dir: string): Promise<TlsFiles> {
  const configFile = join(dir, 'openssl.cnf');
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  await writeFile(configFile, OPENSSL_CONFIG);
  try {
    await execFileAsync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', keyFile, '-out', certFile, '-days', '2', '-config', configFile,
    ]);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`openssl failed to make a test certificate: ${e.stderr ?? e.message}`);
  }
  return { certFile, keyFile, caFile: certFile };
}

// --- certificates for project hostnames (HTTPS of a hostname, issue 38) -------------------------------

/** A throwaway certificate authority: it signs the leaves of makeLeafCert, and clients trust it (node `ca:`). */
export interface TestCa {
  certFile: string;
  keyFile: string;
  /** The CA certificate, PEM. */
  pem: string;
}

export interface LeafCert {
  certFile: string;
  keyFile: string;
  /** The leaf, PEM; with `ca`, followed by the CA certificate (a chain, the leaf first). */
  chain: string;
  /** The leaf alone, PEM. */
  leaf: string;
  /** Its private key, PEM. */
  key: string;
}

const CA_CONFIG = `[req]
distinguished_name = dn
x509_extensions = v3
prompt = no

[dn]
CN = s3edge test CA

[v3]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
`;

async function openssl(args: string[], what: string): Promise<void> {
  try {
    await execFileAsync('openssl', args);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`openssl failed to make ${what}: ${e.stderr ?? e.message}`);
  }
}

/** A CA in `dir` (ca.pem, ca-key.pem), valid for two days. */
export async function makeTestCa(dir: string): Promise<TestCa> {
  const configFile = join(dir, 'ca.cnf');
  const certFile = join(dir, 'ca.pem');
  const keyFile = join(dir, 'ca-key.pem');
  await writeFile(configFile, CA_CONFIG);
  await openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '2', '-config', configFile], 'a test CA');
  return { certFile, keyFile, pem: await readFile(certFile, 'utf8') };
}

/** A new EC private key in `dir`/`name` (PEM): a key that belongs to no certificate. */
export async function makeKey(dir: string, name: string): Promise<{ keyFile: string; key: string }> {
  const keyFile = join(dir, name);
  await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', keyFile], 'a test key');
  return { keyFile, key: await readFile(keyFile, 'utf8') };
}

/**
 * A server certificate for `dnsName` (its subjectAltName) valid from now for `days` days; a negative
 * `days` makes one that expired that many days ago (OpenSSL 3.0's `x509 -days` takes it: notAfter before
 * notBefore). Signed by `ca` when given, else self-signed. Files `<prefix>.pem` and `<prefix>-key.pem` in `dir`.
 */
export async function makeLeafCert(dir: string, opts: { dnsName: string; days: number; ca?: TestCa; prefix?: string }): Promise<LeafCert> {
  const prefix = opts.prefix ?? opts.dnsName;
  const keyFile = join(dir, `${prefix}-key.pem`);
  const csrFile = join(dir, `${prefix}.csr`);
  const extFile = join(dir, `${prefix}.ext`);
  const certFile = join(dir, `${prefix}.pem`);
  await writeFile(extFile, `basicConstraints = critical, CA:FALSE\nkeyUsage = critical, digitalSignature\nextendedKeyUsage = serverAuth\nsubjectAltName = DNS:${opts.dnsName}\n`);
  await openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyFile, '-out', csrFile, '-subj', `/CN=${opts.dnsName}`], `a request for ${opts.dnsName}`);
  const signer = opts.ca ? ['-CA', opts.ca.certFile, '-CAkey', opts.ca.keyFile, '-set_serial', `0x${randomBytes(8).toString('hex')}`] : ['-key', keyFile];
  await openssl(['x509', '-req', '-in', csrFile, ...signer, '-days', String(opts.days), '-extfile', extFile, '-out', certFile], `a certificate for ${opts.dnsName}`);
  const leaf = await readFile(certFile, 'utf8');
  return { certFile, keyFile, leaf, chain: opts.ca ? leaf + opts.ca.pem : leaf, key: await readFile(keyFile, 'utf8') };
}
