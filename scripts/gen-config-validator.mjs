#!/usr/bin/env node
// Writes src/config/config-validator.generated.ts from the built configSchema (dist/): run after a change
// to src/config/schema.ts and a build (`npx tsc -p tsconfig.json`), then build again.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { configValidatorSource } = await import(join(root, 'dist/src/config/validator-source.js'));
const out = join(root, 'src/config/config-validator.generated.ts');
writeFileSync(out, configValidatorSource());
process.stdout.write(`wrote ${out}\n`);
