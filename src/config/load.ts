// The only module that reads process.env. Sources, lowest first: config/default.json, an optional
// JSON file (--config / S3EDGE_CONFIG), S3EDGE_* environment variables, command-line flags.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { ValidateFunction } from 'ajv';
import { validate as generatedValidate } from './config-validator.generated.js';
import { configSchema, DURATION_KEYS, HEADER_NAME_KEYS, SECRET_KEYS, SIZE_KEYS, type Config } from './schema.js';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Json = Record<string, unknown>;

/** The config/ folder shipped with the package: default.json and the data files other settings default to. */
export const CONFIG_DIR = fileURLToPath(new URL('../../../config/', import.meta.url));
const DEFAULT_FILE = join(CONFIG_DIR, 'default.json');

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

const SIZE_UNITS: Readonly<Record<string, number>> = {
  b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, tib: 1024 ** 4,
};
const DURATION_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const UNIT_NAMES: Readonly<Record<string, string>> = { ms: 'milliseconds', s: 'seconds', d: 'days' };

/** `256MiB` -> 268435456, `10GB` -> 1e10, `4096` -> 4096 (IEC units are 1024-based, SI ones 1000-based); undefined if not a size. */
export function parseSize(raw: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(raw);
  const unit = SIZE_UNITS[(m?.[2] || 'b').toLowerCase()];
  if (!m || unit === undefined) return undefined;
  const bytes = Number(m[1]) * unit;
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/** `1h30m` -> 5400000 ms; a bare number is in `unit`. Undefined if not a duration. */
export function parseDurationMs(raw: string, unit: string): number | undefined {
  const s = raw.trim().toLowerCase();
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s) * (DURATION_MS[unit] ?? 1);
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(s)) return undefined;
  let ms = 0;
  for (const [, n, u] of s.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)) ms += Number(n) * (DURATION_MS[u as string] ?? 0);
  return ms;
}

/** Sizes, durations and header names as users type them -> the number or form each setting holds. */
function normalizeForms(cfg: Json): void {
  for (const key of SIZE_KEYS) {
    const v = getPath(cfg, key);
    if (typeof v !== 'string') continue;
    const bytes = parseSize(v);
    if (bytes === undefined) throw new ConfigError(`config: ${key} must be a size like 256MiB, 10GB or a number of bytes (got ${JSON.stringify(v)})`);
    setPath(cfg, key, bytes);
  }
  for (const [key, unit] of Object.entries(DURATION_KEYS)) {
    const v = getPath(cfg, key);
    if (typeof v !== 'string') continue;
    const ms = parseDurationMs(v, unit);
    const unitName = UNIT_NAMES[unit] ?? unit;
    if (ms === undefined) throw new ConfigError(`config: ${key} must be a duration like 30s, 5m, 12h or 7d, or a number of ${unitName} (got ${JSON.stringify(v)})`);
    const value = ms / (DURATION_MS[unit] ?? 1);
    if (!Number.isInteger(value)) throw new ConfigError(`config: ${key} must be a whole number of ${unitName} (got ${JSON.stringify(v)})`);
    setPath(cfg, key, value);
  }
  for (const key of HEADER_NAME_KEYS) {
    const v = getPath(cfg, key);
    if (typeof v !== 'string') continue;
    const name = v.trim().toLowerCase();
    // Said here in the words users type: the schema's pattern is of the lowercased form.
    if (!/^([a-z0-9-]{1,64})?$/.test(name)) {
      throw new ConfigError(`config: ${key} must be a header name: letters (any case), digits and hyphens, at most 64, or empty for none (got ${JSON.stringify(v)})`);
    }
    setPath(cfg, key, name);
  }
}

export interface LoadOptions {
  /** Values from command-line flags, by config path (`dataDir`, `tls.port`). */
  flags?: Record<string, string | undefined>;
  env?: NodeJS.ProcessEnv;
  configFile?: string;
}

// Ajv's code for configSchema, generated ahead of time (config/validator-source.ts): compiling it at
// start cost every process, every command, a sixth of a second and 15 MB.
const validate = generatedValidate as ValidateFunction<Config>;

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

  normalizeForms(cfg);
  // Said in words rather than as the pattern, and without the value: a URL may hold a password.
  const metadata = cfg['metadata'];
  if (typeof metadata === 'string' && !new RegExp(configSchema.properties.metadata.pattern).test(metadata)) {
    throw new ConfigError("config: metadata must be 'sqlite' or a postgres:// or postgresql:// URL");
  }
  if (!validate(cfg)) {
    const e = validate.errors?.[0];
    const key = e ? (e.instancePath.replace(/^\//, '').replace(/\//g, '.') || (e.params as { additionalProperty?: string }).additionalProperty || '(root)') : '(root)';
    // A rejected secret is never echoed; any other value is, so the operator sees what was wrong.
    const shown = (SECRET_KEYS as readonly string[]).includes(key) ? '' : ` (got ${JSON.stringify(getPath(cfg, key))})`;
    // A choice names its choices (ajv's words for it do not).
    const allowed = e?.keyword === 'enum' ? (e.params as { allowedValues?: unknown[] }).allowedValues : undefined;
    const message = allowed ? `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}` : (e?.message ?? 'is invalid');
    const why = key === 'sqliteDriver' && getPath(cfg, key) === 'better-sqlite3' ? '; better-sqlite3 went with Node 20: node:sqlite is the driver (docs/RUNTIME.md)' : '';
    throw new ConfigError(`config: ${key} ${message}${shown}${why}`);
  }
  return cfg;
}

/** Whether `path` was given (a flag, an S3EDGE_* variable, the config file) rather than left at its default. */
export function givenExplicitly(path: string, opts: LoadOptions = {}): boolean {
  const env = opts.env ?? process.env;
  if (opts.flags?.[path] !== undefined || env[envName(path)] !== undefined) return true;
  const file = opts.configFile ?? env.S3EDGE_CONFIG;
  return file ? getPath(readJson(file, 'config file'), path) !== undefined : false;
}

/** Every config path that the CLI accepts as a flag, e.g. `data-dir` -> `dataDir`. */
export function configFlags(): Map<string, string> {
  return new Map(leafPaths(readJson(DEFAULT_FILE, 'defaults')).map((p) => [flagName(p), p]));
}
