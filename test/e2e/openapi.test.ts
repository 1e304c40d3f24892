// GET /api/v3/openapi.json on a real server: served without credentials, it is docs/openapi.json byte for
// byte (else: `npm run openapi`), and the server does what it says of every operation: each is there at
// its path, refuses a request without credentials with 401, and a key without the operation's scope
// with a 403 that names the scope the document gives it. test/unit/openapi.test.ts checks the
// document itself (OpenAPI 3.1, every route, SPEC.md's endpoints); test/unit/openapi-client.test.ts
// the client against it.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { apiUser } from '../helpers/api.js';
import { startServer } from '../helpers/server.js';

const CHECKED_IN = fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url));
const server = await startServer();
t.teardown(() => server.stop());

const get = (headers: Record<string, string> = {}) => fetch(new URL('/api/v3/openapi.json', server.url), { headers });
const first = await get();
const body = await first.text();
type Obj = Record<string, any>;
const doc = JSON.parse(body) as Obj;

t.test('served without credentials, as JSON', async (t) => {
  t.equal(first.status, 200);
  t.match(first.headers.get('content-type'), /^application\/json/);
  const again = await get({ authorization: 'Bearer not-a-key' });
  t.equal(again.status, 200, 'a bad token does not matter');
  t.equal(await again.text(), body, 'the same document every time');
});

t.test('docs/openapi.json is the served document', async (t) => {
  const copy = readFileSync(CHECKED_IN, 'utf8');
  if (copy === body) return t.pass('the same bytes');
  const a = copy.split('\n');
  const b = body.split('\n');
  const line = a.findIndex((l, i) => l !== b[i]);
  t.fail(
    `docs/openapi.json differs from what the server serves (first at line ${line + 1}: ${JSON.stringify(a[line])} where the server has ${JSON.stringify(b[line])}). ` +
      'Run `npm run openapi` and commit docs/openapi.json.',
  );
});

t.test('every operation is at its path: 401 without credentials, 403 naming its scope for a key without it', async (t) => {
  const metricsKey = await apiUser(server, ['metrics:read']);
  const usageKey = await apiUser(server, ['usage:read']);
  let checked = 0;
  for (const [path, item] of Object.entries(doc.paths as Obj)) {
    for (const [method, op] of Object.entries(item as Obj)) {
      const scopes = op['x-scopes'] as string[];
      if (scopes.length === 0) continue;
      const url = new URL(path.replace(/\{\w+\}/g, 'x'), server.url);
      const what = `${op.operationId} (${method.toUpperCase()} ${path})`;
      // Upper-cased: fetch normalises get, post, put, delete, head and options, but sends 'patch' as it is, which HTTP refuses.
      const anonymous = await fetch(url, { method: method.toUpperCase() });
      t.equal(anonymous.status, 401, `${what}: 401 without credentials`);
      t.match(await anonymous.json(), { success: false, code: 'unauthorized' });
      t.equal(scopes.length, 1, `${what}: one scope`);
      const other = scopes[0] === 'metrics:read' ? usageKey : metricsKey;
      const refused = await fetch(url, { method: method.toUpperCase(), headers: { authorization: `Bearer ${other.token}` } });
      t.equal(refused.status, 403, `${what}: 403 for a key without ${scopes[0]}`);
      t.match(await refused.json(), { success: false, code: 'forbidden', message: `'${scopes[0]}'` }, `${what}: the 403 names ${scopes[0]}`);
      checked++;
    }
  }
  t.ok(checked > 40, `${checked} operations`);
});

t.test('the client reads it', async (t) => {
  const { client } = await apiUser(server, ['assets:read']);
  t.same(await client.openApiDocument(), doc);
});
