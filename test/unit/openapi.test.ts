// The OpenAPI document of the management API (src/api/openapi), as the API plugin makes it in this process
// on the default configuration: it is OpenAPI 3.1 by the official JSON Schema of OAS 3.1
// (test/fixtures/oas-3.1-schema-2022-10-07.json, https://spec.openapis.org/oas/3.1/schema/2022-10-07, run
// by ajv) and by openapi-spec-validator (Python's validator); it holds every route the plugin registers
// under /api/ and /storage/ and no other, every endpoint of SPEC.md §4 with SPEC.md §8's rate limits,
// and each operation is whole: its scopes, responses, examples, and examples that fit their schemas.
// test/e2e/openapi.test.ts checks that a server serves it, and that docs/openapi.json is the same.
import t from 'tap';
import Fastify from 'fastify';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SCOPES } from '../../src/auth/api-keys.js';
import { createContext } from '../../src/context.js';
import { managementApi } from '../../src/api/plugin.js';
import { OPENAPI_PATH } from '../../src/api/openapi/routes.js';
import { run } from '../helpers/conformance.js';
import { inProcessServerConfig, tempDir } from '../helpers/temp-data.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const work = tempDir(t);
const ctx = await createContext(inProcessServerConfig(join(work, 'data')));
t.teardown(() => ctx.close());

// The routes as Fastify registers them, seen by a hook of this test's own.
const app = Fastify();
const registered: string[] = [];
app.addHook('onRoute', (route) => {
  for (const method of [route.method].flat()) if (method !== 'HEAD' && /^\/(api|storage)\//.test(route.url)) registered.push(`${method} ${route.url}`);
});
await app.register(managementApi, { ctx });
await app.ready();
t.teardown(() => app.close());

const served = await app.inject({ method: 'GET', url: OPENAPI_PATH });
type Obj = Record<string, any>;
const doc = JSON.parse(served.body) as Obj;

interface Operation {
  method: string;
  path: string;
  op: Obj;
}
const operations: Operation[] = Object.entries(doc.paths as Obj).flatMap(([path, item]) =>
  Object.entries(item as Obj).map(([method, op]) => ({ method: method.toUpperCase(), path, op: op as Obj })),
);
const where = (o: Operation): string => `${o.method} ${o.path}`;

t.test('served without credentials, as JSON, the same bytes every time', async (t) => {
  t.equal(served.statusCode, 200);
  t.match(served.headers['content-type'], /^application\/json/);
  t.equal((await app.inject({ method: 'GET', url: OPENAPI_PATH })).body, served.body, 'made once, kept');
  t.equal(doc.openapi, '3.1.0');
});

t.test('OpenAPI 3.1 by the official schema of OAS 3.1 (ajv)', async (t) => {
  // Ajv takes $dynamicAnchor at a schema's root only: the schema's one dynamic reference ("#meta", the Schema
  // Object, which the schema-base variant extends) becomes the plain reference it is in this variant.
  const text = readFileSync(join(ROOT, 'test/fixtures/oas-3.1-schema-2022-10-07.json'), 'utf8');
  const oas = JSON.parse(text.replaceAll('"$dynamicRef": "#meta"', '"$ref": "#/$defs/schema"')) as Obj;
  t.not(text.indexOf('"$dynamicRef": "#meta"'), -1, 'the reference replaced');
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  const validate = ajv.compile(oas);
  t.ok(validate(doc), 'valid');
  t.same(validate.errors ?? [], [], 'no errors');
});

t.test('OpenAPI 3.1 by openapi-spec-validator', async (t) => {
  const file = join(work, 'openapi.json');
  writeFileSync(file, served.body);
  const r = await run('python3', ['-m', 'openapi_spec_validator', file], { timeoutMs: 60_000 });
  t.equal(r.code, 0, `${r.stdout}${r.stderr} (pip install openapi-spec-validator)`);
  t.match(r.stdout, /: OK/);
});

t.test('every route registered under /api/ and /storage/ is an operation, and every operation a route', async (t) => {
  const documented = operations.map((o) => `${o.method} ${o.path.replace(/\{(\w+)\}/g, ':$1')}`);
  t.same([...documented].sort(), [...registered].sort());
  t.ok(registered.length > 40, `${registered.length} routes`);
});

const spec = readFileSync(join(ROOT, 'docs/SPEC.md'), 'utf8');
const section = (n: number): string => spec.slice(spec.indexOf(`## ${n}.`), spec.indexOf(`## ${n + 1}.`));

t.test("every endpoint of SPEC.md §4's table is an operation", async (t) => {
  const endpoints = [...section(4).matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \|/gm)].map(([, method = '', path = '']) => ({ method, path }));
  t.equal(endpoints.length, 14, 'the fourteen rows of the table');
  for (const e of endpoints) {
    const op = doc.paths[e.path.replace(/:(\w+)/g, '{$1}')]?.[e.method.toLowerCase()] as Obj | undefined;
    t.ok(op, `${e.method} ${e.path}`);
  }
});

t.test("SPEC.md §8's rate limits are the operations' x-rate-limit", async (t) => {
  const limits = [...section(8).matchAll(/^\| `(GET|POST) ([^`]+)` \| (\d+) requests per minute \|/gm)];
  t.equal(limits.length, 4);
  for (const [, method = '', path = '', max] of limits) {
    const op = doc.paths[path]?.[method.toLowerCase()] as Obj | undefined;
    t.same(op?.['x-rate-limit'], { max: Number(max), windowSeconds: 60, per: 'api-key' }, `${method} ${path}`);
    t.ok(op?.responses?.['429'], `${method} ${path} documents its 429`);
  }
});

t.test('every operation is whole', async (t) => {
  const ids = operations.map((o) => o.op.operationId as string);
  t.same(ids.filter((id, i) => ids.indexOf(id) !== i), [], 'operationIds are unique');
  for (const o of operations) {
    const { op } = o;
    t.match(op.operationId, /^[a-z][A-Za-z0-9]+$/, `${where(o)} operationId`);
    t.ok(typeof op.summary === 'string' && !op.summary.startsWith(o.method), `${where(o)} has a summary of its own`);
    t.ok(op.tags.length > 0, `${where(o)} has a tag`);
    const scopes = op['x-scopes'] as string[];
    if (scopes.length === 0) t.same(op.security, [], `${where(o)} is public`);
    else t.same(op.security, [{ bearerAuth: scopes }, { sessionCookie: scopes }], `${where(o)}: bearer or session, with its scopes`);
    for (const s of scopes) t.ok(Object.hasOwn(SCOPES, s), `${where(o)}: ${s} is a scope`);
    const params = (op.parameters ?? []) as Obj[];
    for (const [, name] of o.path.matchAll(/\{(\w+)\}/g)) t.ok(params.some((p) => p.in === 'path' && p.name === name && p.required), `${where(o)} declares {${name}}`);
    const success = Object.entries(op.responses as Obj).filter(([status]) => /^2\d\d$/.test(status));
    t.ok(success.length > 0, `${where(o)} has a 2xx answer`);
    for (const [status, response] of success) {
      for (const [media, entry] of Object.entries((response.content ?? {}) as Obj)) t.ok('example' in entry, `${where(o)} ${status} ${media} has an example`);
    }
    t.same(op.responses.default, { $ref: '#/components/responses/Error' }, `${where(o)}: any other failure is the error envelope`);
    for (const [status, response] of Object.entries(op.responses as Obj)) {
      if (/^[45]/.test(status)) t.match(response.$ref, /^#\/components\/responses\/\w+$/, `${where(o)} ${status} is a shared error response`);
    }
  }
  t.same(operations.filter((o) => o.op['x-scopes'].length === 0).map((o) => o.op.operationId), ['getOpenApiDocument'], 'the document is the one public operation');
});

t.test('the error envelope is one component, and every error response is it', async (t) => {
  t.same(doc.components.schemas.ErrorBody.required, ['success', 'message', 'code']);
  for (const [name, response] of Object.entries(doc.components.responses as Obj)) {
    t.same(response.content['application/json'].schema, { $ref: '#/components/schemas/ErrorBody' }, name);
  }
});

t.test('every $ref resolves', async (t) => {
  const refs = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') for (const [k, sub] of Object.entries(v)) (k === '$ref' && typeof sub === 'string' ? refs.add(sub) : walk(sub));
  };
  walk(doc);
  for (const ref of refs) {
    const target = ref.replace(/^#\//, '').split('/').reduce<unknown>((node, key) => (node as Obj | undefined)?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    t.ok(target, ref);
  }
  t.ok(refs.size > 20, `${refs.size} refs`);
});

t.test('the bearer scheme names every scope', async (t) => {
  t.match(doc.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer' });
  for (const s of Object.keys(SCOPES)) t.match(doc.components.securitySchemes.bearerAuth.description, `\`${s}\``);
  t.match(doc.components.securitySchemes.sessionCookie, { type: 'apiKey', in: 'cookie' });
});

t.test('every schema compiles strictly as JSON Schema 2020-12, and every example fits its schema', async (t) => {
  const BASE = 'https://s3edge.invalid/components/';
  const local = (v: unknown): Obj => JSON.parse(JSON.stringify(v).replaceAll('"#/components/schemas/', `"${BASE}`)) as Obj;
  const ajv = new Ajv2020({ strict: true, allErrors: true, formats: { 'date-time': true } });
  for (const [name, schema] of Object.entries(doc.components.schemas as Obj)) ajv.addSchema({ ...local(schema), $id: `${BASE}${name}` });
  for (const name of Object.keys(doc.components.schemas as Obj)) t.doesNotThrow(() => ajv.getSchema(`${BASE}${name}`), `components/schemas/${name}`);

  let checked = 0;
  const check = (what: string, schema: unknown, example: unknown): void => {
    let validate;
    try {
      validate = ajv.compile(local(schema));
    } catch (err) {
      t.fail(`${what}: ${(err as Error).message}`);
      return;
    }
    checked++;
    if (!validate(example)) t.fail(`${what}: the example does not fit`, { errors: validate.errors, example });
  };
  const media = (what: string, content: Obj | undefined): void => {
    for (const [type, entry] of Object.entries(content ?? {})) check(`${what} ${type}`, entry.schema, entry.example);
  };
  for (const o of operations) {
    for (const p of (o.op.parameters ?? []) as Obj[]) check(`${where(o)} ${p.in} ${p.name}`, p.schema, p.example);
    media(`${where(o)} body`, o.op.requestBody?.content);
    for (const [status, response] of Object.entries(o.op.responses as Obj)) media(`${where(o)} ${status}`, response.content);
  }
  for (const [name, response] of Object.entries(doc.components.responses as Obj)) media(`responses/${name}`, response.content);
  t.ok(checked > 100, `${checked} examples checked`);
});
