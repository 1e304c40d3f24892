// A project hostname as a user types it -> the name stored and served (lower-case ASCII, punycode for
// IDN, no port, no trailing dot), or one sentence saying what is wrong.
//
// Decisions (issue 17):
// - The name alone: a scheme, port, path, userinfo or query is refused, not stripped (the domain search
//   forgives pasted URLs; here the name is what the proxy will answer for, so it must be what was meant).
// - The syntax, IDN and public-suffix rules are the domain search's (src/domains/normalize.ts): an IP
//   address, a single label (`localhost`, `com`), a public suffix (`co.uk`), a name under an ending the
//   ICANN list does not know (`.local`, `.test`) and anything over 253 octets are refused. A subdomain of
//   a private-section suffix (`app.github.io`) is allowed: verification proves control of the name.
// - Wildcards (`*.example.com`) are not supported: each name is added and verified on its own.
// - The gateway's own names are refused: the CDN hostname, the S3 virtual-host domains, the hosts of the
//   configured public URLs, and every subdomain of them.
import { DomainQueryError, normalizeQuery, show } from '../domains/normalize.js';
import type { Config } from '../config/schema.js';

export class HostnameError extends Error {
  override name = 'HostnameError';
}

/** A host of a configured name or URL, lower-case, without port or trailing dot; '' when there is none. */
function hostPart(value: string): string {
  let host = value.trim().toLowerCase();
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//.exec(host);
  if (scheme) {
    try {
      host = new URL(host).hostname;
    } catch {
      return '';
    }
  }
  return host.replace(/:\d*$/, '').replace(/\.$/, '');
}

/** The gateway's own names, which no project may claim (nor any name under them). */
export function reservedHostnames(config: Pick<Config, 's3Domains' | 'publicUrl' | 'cdn'>): string[] {
  const names = [config.cdn.hostname, config.cdn.publicUrl, config.publicUrl, ...config.s3Domains].map(hostPart);
  return [...new Set(names.filter((n) => n !== ''))];
}

/** `raw` -> the stored form; HostnameError (a sentence about the name) when it cannot be a project hostname. */
export function normalizeHostname(raw: unknown, reserved: readonly string[]): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw new HostnameError('give a hostname such as app.example.com');
  const text = raw.trim();
  if (text.includes('*')) {
    throw new HostnameError(`${show(text)} is a wildcard; wildcard hostnames are not supported: add each name (app.example.com, www.example.com) on its own`);
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text) || text.startsWith('//')) {
    throw new HostnameError(`${show(text)} is a URL; give the hostname alone, such as app.example.com`);
  }
  if (/[/?#\\]/.test(text)) throw new HostnameError(`${show(text)} has a path or query; give the hostname alone, such as app.example.com`);
  if (text.includes('@')) throw new HostnameError(`${show(text)} has a user name; give the hostname alone, such as app.example.com`);
  if (text.startsWith('[') || (text.match(/:/g) ?? []).length >= 2) throw new HostnameError(`${show(text)} is an IP address, not a hostname`);
  if (text.includes(':')) throw new HostnameError(`${show(text)} has a port; give the hostname alone (the proxy answers on the gateway's ports)`);
  let query;
  try {
    query = normalizeQuery(text);
  } catch (err) {
    if (err instanceof DomainQueryError) throw new HostnameError(err.message.replace(/ a domain name\b/g, ' a hostname'));
    throw err;
  }
  if (query.kind !== 'domain') throw new HostnameError(`${show(text)} is a single label; give a full hostname such as ${query.ascii}.example.com`);
  const name = query.ascii;
  const own = reserved.find((r) => name === r || name.endsWith(`.${r}`));
  if (own !== undefined) {
    throw new HostnameError(`${show(name)} is ${name === own ? '' : 'under '}one of this gateway's own names (${own}); it cannot be a project hostname`);
  }
  return name;
}
