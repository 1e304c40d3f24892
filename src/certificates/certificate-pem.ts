// Reading and checking a certificate chain and its key (an upload, or what the CA issued) with node's own
// X509Certificate: the leaf must name the hostname, be within its validity, and match the key; every
// failure says what to fix.
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';

/** Largest PEM accepted (a leaf and a few intermediates are a few kB). */
export const MAX_PEM_BYTES = 64 * 1024;

export class CertificateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CertificateError';
  }
}

export interface CheckedCertificate {
  /** The chain as PEM, leaf first, normalised (one block after another). */
  pem: string;
  /** The private key as PKCS#8 PEM. */
  keyPem: string;
  fingerprint: string;
  notBefore: number;
  notAfter: number;
  /** The leaf's subjectAltName DNS names. */
  names: string[];
}

const BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The DNS names of a certificate's subjectAltName (`DNS:a.example, DNS:*.example`). */
export function dnsNames(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.startsWith('DNS:'))
    .map((s) => s.slice(4).toLowerCase());
}

/** Whether `name` is covered by a SAN entry: exact, or a wildcard for exactly one leftmost label. */
export function covers(names: readonly string[], name: string): boolean {
  return names.some((n) => n === name || (n.startsWith('*.') && name.endsWith(n.slice(1)) && !name.slice(0, -n.length + 1).includes('.')));
}

function parseKey(keyPem: string): KeyObject {
  try {
    return createPrivateKey(keyPem);
  } catch {
    throw new CertificateError('The private key is not a PEM private key (PKCS#8, PKCS#1 or SEC1, unencrypted)');
  }
}

/**
 * Checks a chain and key for `hostname` at `now`: the first certificate is the leaf, names the hostname
 * in its subjectAltName, is valid now, and its public key is the key's; each following certificate
 * issued the one before it.
 */
export function checkCertificate(chainPem: string, keyPem: string, hostname: string, now: number): CheckedCertificate {
  if (chainPem.length > MAX_PEM_BYTES || keyPem.length > MAX_PEM_BYTES) throw new CertificateError(`A certificate or key over ${MAX_PEM_BYTES / 1024} KiB is not accepted`);
  const blocks = chainPem.match(BLOCK) ?? [];
  if (blocks.length === 0) throw new CertificateError('No certificate found: give the PEM chain (-----BEGIN CERTIFICATE-----), the hostname\'s certificate first');
  let chain: X509Certificate[];
  try {
    chain = blocks.map((b) => new X509Certificate(b));
  } catch {
    throw new CertificateError('A certificate of the chain could not be read: give PEM certificates as the CA issued them');
  }
  const leaf = chain[0] as X509Certificate;
  const names = dnsNames(leaf);
  if (!covers(names, hostname)) {
    const shown = names.length > 0 ? names.slice(0, 5).join(', ') : 'no DNS name';
    throw new CertificateError(`The certificate is for ${shown}, not ${hostname}: give a certificate whose subjectAltName names ${hostname}`);
  }
  const notBefore = Date.parse(leaf.validFrom);
  const notAfter = Date.parse(leaf.validTo);
  if (!(notAfter > now)) throw new CertificateError(`The certificate expired on ${new Date(notAfter).toISOString()}: give a current one`);
  if (notBefore > now) throw new CertificateError(`The certificate is not valid before ${new Date(notBefore).toISOString()}`);
  const key = parseKey(keyPem);
  if (!leaf.checkPrivateKey(key)) throw new CertificateError('The private key does not belong to the certificate: give the key the certificate was issued for');
  for (let i = 1; i < chain.length; i++) {
    if (!(chain[i - 1] as X509Certificate).checkIssued(chain[i] as X509Certificate)) {
      throw new CertificateError(`Certificate ${i + 1} of the chain did not issue certificate ${i}: give the chain in order, the hostname's certificate first`);
    }
  }
  return {
    pem: blocks.join('\n') + '\n',
    keyPem: key.export({ type: 'pkcs8', format: 'pem' }).toString(),
    fingerprint: leaf.fingerprint256,
    notBefore,
    notAfter,
    names,
  };
}
