// Where the running server gets its RDAP bootstrap: the operator's file (domains.rdap.bootstrapFile)
// when configured, else the copy a refresh stored in the settings table, else the file shipped in
// config/. The settings row is read again at most once a second, so `s3edge domains rdap refresh`
// (another process) reaches a running server within a second without a restart.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_DIR } from '../../config/load.js';
import type { OutboundClient } from '../../net/outbound-client.js';
import { Bootstrap, BootstrapError } from './bootstrap.js';

/** The settings key a refresh writes (JSON, the validated bootstrap file). */
export const BOOTSTRAP_SETTING = 'domains.rdapBootstrap';

/** IANA's DNS bootstrap as shipped with this release. */
export const SHIPPED_BOOTSTRAP_FILE = join(CONFIG_DIR, 'rdap-dns.json');

/** The part of SettingsRepo this module uses. */
export interface SettingsStore {
  get(name: string): Promise<string | undefined>;
  set(name: string, value: string): Promise<void>;
}

export interface BootstrapSourceOptions {
  /** domains.rdap.bootstrapFile; when set it is the only source, read once (and checked at start). */
  file?: string;
  settings?: Pick<SettingsStore, 'get'>;
  /** Default SHIPPED_BOOTSTRAP_FILE. */
  shippedFile?: string;
  /** Millisecond clock for the one-second re-read; default performance.now (monotonic: a wall-clock jump must not stop re-reads). */
  now?: () => number;
  /** Told once per stored value that does not validate; the shipped file serves meanwhile. */
  onInvalid?: (err: Error) => void;
}

const RECHECK_MS = 1000;

export function readBootstrapFile(path: string): Bootstrap {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new BootstrapError(`cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    return Bootstrap.parse(text);
  } catch (err) {
    throw new BootstrapError(`${path}: ${(err as Error).message.replace(/^RDAP bootstrap: /, '')}`);
  }
}

export class BootstrapSource {
  private readonly fixed: Bootstrap | undefined;
  private shipped: Bootstrap | undefined;
  private stored: { raw: string; bootstrap: Bootstrap | undefined } | undefined;
  private checkedAt = -Infinity;
  /** The settings read under way: the lookups of one search (many TLDs at once) wait for it together. */
  private reading: Promise<void> | undefined;
  private readonly now: () => number;

  constructor(private readonly opts: BootstrapSourceOptions = {}) {
    this.now = opts.now ?? (() => performance.now());
    // A configured file that is missing or broken is a configuration error: fail at start, not per search.
    if (opts.file) this.fixed = readBootstrapFile(opts.file);
  }

  /** The bootstrap to use now. */
  async current(): Promise<Bootstrap> {
    if (this.fixed) return this.fixed;
    return (await this.fromSettings()) ?? this.shippedBootstrap();
  }

  private async fromSettings(): Promise<Bootstrap | undefined> {
    const settings = this.opts.settings;
    if (!settings) return undefined;
    const now = this.now();
    if (this.reading === undefined && now - this.checkedAt >= RECHECK_MS) {
      this.checkedAt = now;
      this.reading = settings
        .get(BOOTSTRAP_SETTING)
        .then((raw) => {
          if (raw === undefined) this.stored = undefined;
          else if (raw !== this.stored?.raw) this.stored = { raw, bootstrap: this.parseStored(raw) };
        })
        .finally(() => (this.reading = undefined));
    }
    await this.reading;
    return this.stored?.bootstrap;
  }

  private parseStored(raw: string): Bootstrap | undefined {
    try {
      return Bootstrap.parse(raw);
    } catch (err) {
      this.opts.onInvalid?.(err as Error);
      return undefined;
    }
  }

  private shippedBootstrap(): Bootstrap {
    this.shipped ??= readBootstrapFile(this.opts.shippedFile ?? SHIPPED_BOOTSTRAP_FILE);
    return this.shipped;
  }
}

export interface RefreshSummary {
  url: string;
  publication: string;
  services: number;
  /** TLDs (and longer suffixes) that now have an RDAP server. */
  entries: number;
}

export interface RefreshOptions {
  /** IANA's file is about 70 KB; default cap 4 MiB. */
  maxAnswerBytes?: number;
  timeoutMs?: number;
}

/**
 * Downloads a bootstrap file through the outbound client, validates it and stores it in the settings
 * table, where every BootstrapSource reading those settings picks it up within a second. Throws
 * (BootstrapError, OutboundError) and stores nothing when the download or the file is not right.
 */
export async function refreshBootstrap(
  url: string,
  client: OutboundClient,
  settings: Pick<SettingsStore, 'set'>,
  opts: RefreshOptions = {},
): Promise<RefreshSummary> {
  const res = await client.get(url, {
    headers: { accept: 'application/json' },
    maxAnswerBytes: opts.maxAnswerBytes ?? 4 * 1024 * 1024,
    timeoutMs: opts.timeoutMs ?? 30_000,
    maxRedirects: 3,
  });
  if (res.status !== 200) throw new BootstrapError(`${url} answered HTTP ${res.status}`);
  const bootstrap = Bootstrap.parse(res.body.toString('utf8'));
  // A valid but empty file would turn every search into no-rdap-server: more likely a broken mirror.
  if (bootstrap.serviceCount === 0) throw new BootstrapError(`${url} lists no services`);
  await settings.set(BOOTSTRAP_SETTING, JSON.stringify(bootstrap.file));
  return { url: res.url, publication: bootstrap.publication, services: bootstrap.serviceCount, entries: bootstrap.entryCount };
}
