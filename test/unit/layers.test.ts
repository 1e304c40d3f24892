// The layer rules of .dependency-cruiser.cjs (docs/ARCHITECTURE.md, "Layers"), run over src/ and bin/ as
// they are in the repository: an import that breaks a rule fails here, with the rule's advice; the imports
// that broke one when the checker came are listed in .dependency-cruiser-known-violations.json, to be
// burned down, and one of them that is gone fails too, so that the list only ever shrinks.
import t from 'tap';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const KNOWN_FILE = '.dependency-cruiser-known-violations.json';
/** Rules the known list may not excuse: the issue's bars, met when the checker came. */
const NO_EXCEPTIONS = ['no-cycles', 'not-s3-or-analytics-from-below'];

interface Violation {
  type: string;
  from: string;
  to: string;
  rule: { name: string };
  cycle?: { name: string }[];
}

const keyOf = (v: Violation) => `${v.rule.name}: ${v.from} -> ${v.to}${v.cycle ? ` (cycle ${v.cycle.map((c) => c.name).join(' -> ')})` : ''}`;

const cli = fileURLToPath(new URL('../../../node_modules/dependency-cruiser/bin/dependency-cruiser.mjs', import.meta.url));
const { stdout } = await promisify(execFile)(process.execPath, [cli, 'src', 'bin', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'], {
  cwd: ROOT,
  maxBuffer: 256 * 1024 * 1024,
}).catch((err: { stdout?: string; stderr?: string }) => {
  // depcruise exits non-zero when it finds violations; its JSON is still on stdout.
  if (err.stdout) return { stdout: err.stdout };
  throw new Error(`depcruise failed: ${err.stderr ?? String(err)}`);
});
const found = (JSON.parse(stdout) as { summary: { violations: Violation[]; totalCruised: number } }).summary;
const known = JSON.parse(await readFile(new URL(KNOWN_FILE, `file://${ROOT}`), 'utf8')) as Violation[];
const rules = (await import(`${ROOT}.dependency-cruiser.cjs`)) as { default: { forbidden: { name: string; comment: string }[] } };
const advice = new Map(rules.default.forbidden.map((r) => [r.name, r.comment]));

t.test('the checker reads the code', async (t) => {
  t.ok(found.totalCruised > 300, `${found.totalCruised} modules cruised`);
});

t.test('no import breaks a layer rule but the known ones', async (t) => {
  const knownKeys = new Set(known.map(keyOf));
  const added = found.violations.filter((v) => !knownKeys.has(keyOf(v)));
  t.same(
    added.map((v) => `${keyOf(v)}\n    ${advice.get(v.rule.name) ?? ''}`),
    [],
    'new violations (fix the import; docs/ARCHITECTURE.md "Layers" says where a shared piece goes)',
  );
});

t.test('every known violation still exists (fixed ones leave the list)', async (t) => {
  const foundKeys = new Set(found.violations.map(keyOf));
  t.same(known.filter((v) => !foundKeys.has(keyOf(v))).map(keyOf), [], `fixed: drop them from ${KNOWN_FILE} (npm run layers:baseline rewrites it)`);
});

t.test('no known exception for the rules that hold without any', async (t) => {
  t.same(known.filter((v) => NO_EXCEPTIONS.includes(v.rule.name)).map(keyOf), []);
});
