// Country of an IP address from an MMDB database, read with the `maxmind` package. By default the
// database that installs with the `@ip-location-db/geo-whois-asn-country-mmdb` package (IPv4 + IPv6,
// records `{ country_code }`); `cdn.geoipDatabase` may name another MMDB, such as MaxMind's
// GeoLite2-Country (records `{ country: { iso_code } }`). Read whole into memory once (at startup when
// configured, at the first lookup for the bundled one: net/client-info.ts): a lookup is a tree walk of
// about a microsecond, on the request path, with no I/O.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { LRUCache } from 'lru-cache';
import type { CountryResponse, Reader } from 'maxmind';
import { ConfigError } from '../config/load.js';
import { isPublic, type Address } from './ip.js';

const BUNDLED_PACKAGE = '@ip-location-db/geo-whois-asn-country-mmdb';
const BUNDLED_FILE = `${BUNDLED_PACKAGE}/geo-whois-asn-country.mmdb`;

/** The bundled database's path, or undefined when the package is not installed. */
export function bundledDatabase(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve(BUNDLED_FILE);
  } catch {
    return undefined;
  }
}

function field(obj: unknown, name: string): unknown {
  return obj && typeof obj === 'object' ? (obj as Record<string, unknown>)[name] : undefined;
}

/** `{ country_code }` (ip-location-db), else `{ country: { iso_code } }` or `registered_country` (MaxMind). */
function codeOf(record: unknown): string {
  const code = field(record, 'country_code') ?? field(field(record, 'country'), 'iso_code') ?? field(field(record, 'registered_country'), 'iso_code');
  return typeof code === 'string' && /^[A-Za-z]{2}$/.test(code) ? code.toUpperCase() : '';
}

/** Addresses looked up at open: a database that is cut short or damaged fails here, not on a request. */
const PROBES = ['1.1.1.1', '8.8.8.8', '193.0.6.139', '2001:4860:4860::8888', '2a00:1450:4001::1'];

export class GeoIp {
  private readonly answers = new LRUCache<string, string>({ max: 10_000 });

  private constructor(private readonly reader: Reader<CountryResponse>) {}

  /** Opens `file`, or the bundled database when it is ''; a missing or unreadable database is a ConfigError. */
  static open(file: string): GeoIp {
    const path = file === '' ? bundledDatabase() : file;
    if (path === undefined) {
      throw new ConfigError(`config: cdn.geoipDatabase is empty and the bundled GeoIP database (${BUNDLED_PACKAGE}) is not installed`);
    }
    const what = file === '' ? `the bundled GeoIP database ${path}` : `cdn.geoipDatabase ${path}`;
    let data: Buffer;
    try {
      data = readFileSync(path);
    } catch (err) {
      throw new ConfigError(`config: cannot read ${what}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    try {
      // The reader's package loads with the first database.
      const { Reader: MmdbReader } = createRequire(import.meta.url)('maxmind') as typeof import('maxmind');
      const reader = new MmdbReader<CountryResponse>(data);
      for (const ip of PROBES) reader.get(ip);
      return new GeoIp(reader);
    } catch (err) {
      throw new ConfigError(`config: ${what} is not a readable MMDB database (${(err as Error).message})`);
    }
  }

  /**
   * ISO 3166 alpha-2 code, or '' for special-purpose addresses and addresses the database does not
   * place. Answers are kept per address: clients repeat, and the range check and tree walk showed in
   * the CDN's small-file profile.
   */
  country(ip: Address): string {
    let code = this.answers.get(ip.address);
    if (code === undefined) {
      code = this.lookup(ip);
      this.answers.set(ip.address, code);
    }
    return code;
  }

  private lookup(ip: Address): string {
    if (!isPublic(ip)) return '';
    try {
      return codeOf(this.reader.get(ip.address));
    } catch {
      // A damaged region of the file: no country rather than a failed request.
      return '';
    }
  }
}
