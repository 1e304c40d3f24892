// Route schemas compiled at a route's first request (src/api/lazy-schemas.ts), on a real fastify with the
// management API's strict validator: nothing compiles when the instance gets ready, a route compiles its
// own once, and what it answers is what the eager compilers answer.
import t, { type Test } from 'tap';
import Fastify, { type FastifySchemaCompiler } from 'fastify';
import { lazySerializerFactory, lazyValidatorCompiler } from '../../src/api/lazy-schemas.js';
import { strictValidation } from '../../src/api/strict-validation.js';

const Body = { type: 'object', additionalProperties: false, required: ['name'], properties: { name: { type: 'string', maxLength: 8 } } };
const Reply = { 200: { type: 'object', properties: { name: { type: 'string' }, size: { type: 'integer' } } } };

async function build(t: Test): Promise<{ app: ReturnType<typeof Fastify>; compiled: () => number }> {
  const strict = strictValidation();
  let compiles = 0;
  const counting: FastifySchemaCompiler<unknown> = (route) => {
    compiles++;
    return strict.validatorCompiler(route);
  };
  const app = Fastify({ schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory() } } });
  app.setValidatorCompiler(lazyValidatorCompiler(counting));
  app.setSchemaErrorFormatter(strict.schemaErrorFormatter);
  app.post('/named', { schema: { body: Body, response: Reply } }, async (req) => ({ ...(req.body as object), size: 3, secret: 'not in the schema' }));
  // A response schema fast-json-stringify refuses: compiling it throws.
  app.get('/unasked', { schema: { response: { 200: { type: 'object', properties: { x: { $ref: '#/nowhere' } } } } } }, async () => ({ x: 1 }));
  await app.ready();
  t.teardown(() => app.close());
  return { app, compiled: () => compiles };
}

t.test('nothing compiles at ready; a route compiles its validator once, at its first request', async (t) => {
  const { app, compiled } = await build(t);
  t.equal(compiled(), 0, 'ready compiled no validator (the broken route too: ready did not throw)');
  const ok = await app.inject({ method: 'POST', url: '/named', payload: { name: 'ann' } });
  t.equal(ok.statusCode, 200);
  t.same(JSON.parse(ok.body), { name: 'ann', size: 3 }, 'the response went through its schema: the field it lacks is not sent');
  t.equal(compiled(), 1);
  await app.inject({ method: 'POST', url: '/named', payload: { name: 'bob' } });
  t.equal(compiled(), 1, 'compiled once');
});

t.test("a refused body gets the strict validator's own words", async (t) => {
  const { app } = await build(t);
  const unknown = await app.inject({ method: 'POST', url: '/named', payload: { name: 'ann', extra: 1 } });
  t.equal(unknown.statusCode, 400);
  t.match(JSON.parse(unknown.body).message, "body has an unknown field 'extra'");
  const long = await app.inject({ method: 'POST', url: '/named', payload: { name: 'far too long a name' } });
  t.equal(long.statusCode, 400);
  t.match(JSON.parse(long.body).message, 'body/name must NOT have more than 8 characters');
  const typed = await app.inject({ method: 'POST', url: '/named', payload: { name: 5 } });
  t.equal(typed.statusCode, 400, 'no coercion of 5 to "5"');
});

t.test('a schema that cannot compile fails its own route only, when asked', async (t) => {
  const { app } = await build(t);
  const res = await app.inject({ method: 'GET', url: '/unasked' });
  t.equal(res.statusCode, 500);
  const ok = await app.inject({ method: 'POST', url: '/named', payload: { name: 'ann' } });
  t.equal(ok.statusCode, 200, 'the other routes serve on');
});
