#!/usr/bin/env node
// Writes docs/openapi.json: the document GET /api/v3/openapi.json serves (src/api/openapi), as a server on
// the default configuration serves it, from the build (dist/). `npm run openapi` builds and runs this;
// test/e2e/openapi.test.ts fails while the copy differs from what a server serves.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { loadConfig } = await import(join(root, 'dist/src/config/load.js'));
const { createContext } = await import(join(root, 'dist/src/context.js'));
const { buildManagement } = await import(join(root, 'dist/src/api/management-app.js'));
const { OPENAPI_PATH } = await import(join(root, 'dist/src/api/openapi/routes.js'));

const dataDir = await mkdtemp(join(tmpdir(), 's3edge-openapi-'));
// The defaults, whatever this shell's S3EDGE_* variables say (env: {}).
const config = loadConfig({ flags: { dataDir, port: '0', 'cdn.port': '0', logLevel: 'silent', 'integrity.scrubBytesPerSecond': '0' }, env: {} });
const ctx = await createContext(config);
const management = await buildManagement(ctx);
const server = createServer(management.listener);
try {
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const res = await fetch(`http://127.0.0.1:${server.address().port}${OPENAPI_PATH}`);
  if (res.status !== 200) throw new Error(`GET ${OPENAPI_PATH}: ${res.status} ${await res.text()}`);
  const out = join(root, 'docs/openapi.json');
  await writeFile(out, await res.text());
  process.stdout.write(`wrote ${out}\n`);
} finally {
  server.close();
  await management.close();
  await ctx.close();
  await rm(dataDir, { recursive: true, force: true });
}
