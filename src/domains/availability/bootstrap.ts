// The RDAP bootstrap for domain names (RFC 9224, IANA's https://data.iana.org/rdap/dns.json): which
// registry RDAP servers answer for which TLDs. The only source of the servers the provider asks; a
// user's query never names one.

/** `[[entries...], [base URLs...]]` as RFC 9224 §3 writes a service. */
export type BootstrapService = [string[], string[]];

export interface BootstrapFile {
  version: string;
  publication: string;
  description?: string;
  services: BootstrapService[];
}

export class BootstrapError extends Error {
  constructor(message: string) {
    super(`RDAP bootstrap: ${message}`);
    this.name = 'BootstrapError';
  }
}

// An entry is one or more LDH labels (A-labels for IDNs, so `xn--` passes); held lowercase.
const ENTRY = /^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function baseUrl(raw: unknown, where: string): URL {
  if (typeof raw !== 'string') throw new BootstrapError(`${where}: a URL must be a string`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new BootstrapError(`${where}: not a URL: ${raw.slice(0, 100)}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new BootstrapError(`${where}: not http(s): ${raw.slice(0, 100)}`);
  if (url.username || url.password || url.search || url.hash) throw new BootstrapError(`${where}: a base URL has no credentials, query or fragment`);
  // RFC 9224 §3: base URLs end with '/'; a missing one would make `domain/<name>` replace the last segment.
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

/** Validates a parsed bootstrap file; throws BootstrapError naming the first problem. */
export function validateBootstrap(json: unknown): BootstrapFile {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new BootstrapError('not a JSON object');
  const o = json as Record<string, unknown>;
  if (o.version !== '1.0') throw new BootstrapError(`unsupported version ${JSON.stringify(o.version)}`);
  if (typeof o.publication !== 'string' || !RFC3339.test(o.publication)) throw new BootstrapError('publication is not an RFC 3339 date-time');
  if (o.description !== undefined && typeof o.description !== 'string') throw new BootstrapError('description is not a string');
  if (!Array.isArray(o.services)) throw new BootstrapError('services is not an array');
  const services: BootstrapService[] = o.services.map((s: unknown, i) => {
    const where = `services[${i}]`;
    if (!Array.isArray(s) || s.length !== 2 || !Array.isArray(s[0]) || !Array.isArray(s[1])) {
      throw new BootstrapError(`${where}: not a pair of arrays`);
    }
    const [entries, urls] = s as [unknown[], unknown[]];
    if (entries.length === 0 || urls.length === 0) throw new BootstrapError(`${where}: no entries or no URLs`);
    const names = entries.map((e) => {
      const name = typeof e === 'string' ? e.toLowerCase() : '';
      if (!ENTRY.test(name)) throw new BootstrapError(`${where}: bad entry ${JSON.stringify(e)?.slice(0, 100)}`);
      return name;
    });
    return [names, urls.map((u) => baseUrl(u, where).href)];
  });
  return { version: o.version, publication: o.publication, ...(typeof o.description === 'string' ? { description: o.description } : {}), services };
}

/** A validated bootstrap, indexed for lookups. */
export class Bootstrap {
  private readonly byEntry = new Map<string, string[]>();

  constructor(readonly file: BootstrapFile) {
    for (const [entries, urls] of file.services) {
      // RFC 9224 §3: prefer HTTPS where a service lists both; plain http only when it is all there is.
      const ordered = [...urls.filter((u) => u.startsWith('https:')), ...urls.filter((u) => !u.startsWith('https:'))];
      for (const entry of entries) {
        // An entry listed twice is a publication error; the first service keeps it.
        if (!this.byEntry.has(entry)) this.byEntry.set(entry, ordered);
      }
    }
  }

  /** Parses and validates text (a file, a settings value, a download). */
  static parse(text: string): Bootstrap {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new BootstrapError('not JSON');
    }
    return new Bootstrap(validateBootstrap(json));
  }

  get publication(): string {
    return this.file.publication;
  }

  get serviceCount(): number {
    return this.file.services.length;
  }

  /** Entries (TLDs and longer suffixes) with a server. */
  get entryCount(): number {
    return this.byEntry.size;
  }

  /**
   * Base URLs (https first) for a domain name or public suffix, by the longest entry that matches whole
   * labels from the right (RFC 9224 §4): `example.co.uk` tries `example.co.uk`, `co.uk`, then `uk`.
   * Empty when no entry matches: the registry publishes no RDAP server.
   */
  serversFor(name: string): string[] {
    const labels = name.toLowerCase().replace(/\.$/, '').split('.');
    for (let i = 0; i < labels.length; i++) {
      const urls = this.byEntry.get(labels.slice(i).join('.'));
      if (urls) return urls;
    }
    return [];
  }
}
