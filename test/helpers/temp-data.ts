// Temporary data directories and configs for tests; removed when the test ends.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';

interface Teardown {
  teardown(fn: () => void): void;
}

/** A fresh directory under os.tmpdir(), removed in t.teardown. */
export function tempDir(t: Teardown, prefix = 's3edge-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Defaults + the given flags, ignoring the real environment. */
export function testConfig(flags: Record<string, string>): Config {
  return loadConfig({ flags, env: {} });
}

/**
 * The config of a server a test runs in its own process (createContext + listen, an injected clock):
 * free ports, quiet, no scrub, plus `flags`.
 */
export function inProcessServerConfig(dataDir: string, flags: Record<string, string> = {}): Config {
  return testConfig({ dataDir, port: '0', 'cdn.port': '0', logLevel: 'silent', 'integrity.scrubBytesPerSecond': '0', ...flags });
}
