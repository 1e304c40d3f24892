// The only module that reads process.env. Sources, lowest first: config/default.json, an optional
// JSON file (--config / S3EDGE_CONFIG), S3EDGE_* environment variables, command-line flags.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { configSchema, SECRET_KEYS, type Config } from './schema.js';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Json = Record<string, unknown>;

const DEFAULT_FILE = fileURLToPath(new URL('../../../config/default.json', import.meta.url));

/** `tls.port` -> `S3EDGE_TLS_PORT`; `dataDir` -> `S3EDGE_DATA_DIR`. */
export function envName(path: string): string {
  return 'S3EDGE_' + path.split('.').map((p) => p.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_');
}

/** `tls.port` -> `tls-port`; `dataDir` -> `data-dir`. */
export function flagName(path: string): string {
  return path.split('.').map((p) => p.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()).join('-');
}

function readJson(file: string, what: string): Json {
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    return parsed as Json;
  } catch (err) {
    throw new ConfigError(`config: cannot read ${what} ${file}: ${(err as Error).message}`);
  }
}

/** Every leaf path of the defaults, e.g. ['dataDir', ..., 'tls.port']. */
function leafPaths(obj: Json, prefix = ''): string[] {
  return Object.entries(obj).flatMap(([k, v]) =>
    v && typeof v === 'object' && !Array.isArray(v) ? leafPaths(v as Json, `${prefix}${k}.`) : [`${prefix}${k}`],
  );
}

function setPath(obj: Json, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = obj;
  for (const p of parts.slice(0, -1)) {
    if (!node[p] || typeof node[p] !== 'object') node[p] = {};
    node = node[p] as Json;
  }
  node[parts[parts.length - 1] as string] = value;
}

function getPath(obj: Json, path: string): unknown {
  return path.split('.').reduce<unknown>((n, p) => (n && typeof n === 'object' ? (n as Json)[p] : undefined), obj);
}

function merge(base: Json, over: Json): Json {
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b)
        ? merge(b as Json, v as Json)
        : v;
  }
  return out;
}

/** A string from env or a flag, typed after the default's type; ajv validates the result. */
function coerce(raw: string, like: unknown): unknown {
  if (Array.isArray(like)) return raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (typeof like === 'number' || like === null) {
    if (like === null && (raw === '' || raw === 'null')) return null;
    return /^-?\d+(\.\d+)?$/.test(raw.trim()) ? Number(raw) : raw;
  }
  if (typeof like === 'boolean') return raw === 'true' || raw === '1' ? true : raw === 'false' || raw === '0' ? false : raw;
  return raw;
}

export interface LoadOptions {
  /** Values from command-line flags, by config path (`dataDir`, `tls.port`). */
  flags?: Record<string, string | undefined>;
  env?: NodeJS.ProcessEnv;
  configFile?: string;
}

const ajv = new Ajv({ allErrors: false, strict: true });
const validate = ajv.compile<Config>(configSchema);

/** Loads, merges and validates the configuration; throws ConfigError with one line naming the key. */
export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env;
  const defaults = readJson(DEFAULT_FILE, 'defaults');
  let cfg = defaults;
  const file = opts.configFile ?? env.S3EDGE_CONFIG;
  if (file) cfg = merge(cfg, readJson(file, 'config file'));

  for (const path of leafPaths(defaults)) {
    const like = getPath(defaults, path);
    const name = envName(path);
    let raw = env[name];
    if (raw === undefined && (SECRET_KEYS as readonly string[]).includes(path) && env[`${name}_FILE`]) {
      const secretFile = env[`${name}_FILE`] as string;
      try {
        raw = readFileSync(secretFile, 'utf8').trim();
      } catch {
        throw new ConfigError(`config: ${path}: cannot read ${name}_FILE`);
      }
    }
    if (raw !== undefined) setPath(cfg, path, coerce(raw, like));
    const flag = opts.flags?.[path];
    if (flag !== undefined) setPath(cfg, path, coerce(flag, like));
  }

  if (!validate(cfg)) {
    const e = validate.errors?.[0];
    const key = e ? (e.instancePath.replace(/^\//, '').replace(/\//g, '.') || (e.params as { additionalProperty?: string }).additionalProperty || '(root)') : '(root)';
    // A rejected secret is never echoed; any other value is, so the operator sees what was wrong.
    const shown = (SECRET_KEYS as readonly string[]).includes(key) ? '' : ` (got ${JSON.stringify(getPath(cfg, key))})`;
    throw new ConfigError(`config: ${key} ${e?.message ?? 'is invalid'}${shown}`);
  }
  return cfg;
}

/** Every config path that the CLI accepts as a flag, e.g. `data-dir` -> `dataDir`. */
export function configFlags(): Map<string, string> {
  return new Map(leafPaths(readJson(DEFAULT_FILE, 'defaults')).map((p) => [flagName(p), p]));
}
