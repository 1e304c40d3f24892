// The configuration is validated by Ajv code generated ahead of time (src/config/config-validator.generated.ts,
// so no process compiles the schema at start): the committed file must be what the schema gives now, and
// it must judge as Ajv compiling the schema would.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { configValidatorSource } from '../../src/config/validator-source.js';
import { configSchema } from '../../src/config/schema.js';
import { validate } from '../../src/config/config-validator.generated.js';
import { loadConfig } from '../../src/config/load.js';

const generatedFile = new URL('../../../src/config/config-validator.generated.ts', import.meta.url);

t.test('the committed validator is the one the schema generates (else: node scripts/gen-config-validator.mjs)', async (t) => {
  t.equal(readFileSync(generatedFile, 'utf8'), configValidatorSource(), 'src/config/config-validator.generated.ts is up to date');
});

t.test('it judges as the compiled schema does, with the same first error', async (t) => {
  const compiled = new Ajv({ allErrors: false, strict: true }).compile(configSchema);
  const good = loadConfig({ env: {} });
  const cases: [string, unknown][] = [
    ['the defaults', good],
    ['a port out of range', { ...good, port: 70000 }],
    ['an unknown key', { ...good, nope: 1 }],
    ['a missing key', Object.fromEntries(Object.entries(good).filter(([k]) => k !== 'region'))],
    ['a bad nested value', { ...good, cdn: { ...good.cdn, cache: { ...good.cdn.cache, diskBytes: -1 } } }],
    ['a string too long in code points', { ...good, storageName: '\u{1F600}'.repeat(65) }],
    ['a string short enough in code points', { ...good, storageName: '\u{1F600}'.repeat(64) }],
    ['a bad pattern', { ...good, region: 'US EAST' }],
    ['not an object', 'config'],
  ];
  const check = validate as unknown as typeof compiled;
  for (const [what, data] of cases) {
    const want = compiled(data);
    t.equal(check(data), want, `${what}: ${want ? 'valid' : 'invalid'}`);
    t.same(check.errors?.[0] ?? null, compiled.errors?.[0] ?? null, `${what}: the same first error`);
  }
});
