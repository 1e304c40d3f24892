// A throwaway self-signed certificate for 127.0.0.1 / localhost, made with openssl at test time.
// The same file is the server's certificate and the clients' CA bundle (aws cli `--ca-bundle`,
// boto3 `verify=`, curl `--cacert`, node `ca:`).
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
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
