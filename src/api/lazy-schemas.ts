// Route schemas compiled at a route's first use instead of when the API is built. Fastify compiles every
// route's request validators (Ajv) and response serializers (fast-json-stringify) as the instance
// becomes ready: for this API about 0.4 s of CPU (profiled: serializers ~0.3 s, validators ~0.07 s), all
// of it on the event loop of the process the first management request reached, whose S3 and CDN
// requests waited behind it. Deferred, a route's own schemas cost its first request a few ms, and a
// route nobody asks compiles (and holds) nothing. test/unit/openapi.test.ts builds the API eagerly, so a
// schema that does not compile still fails the suite.
import type { FastifySchemaCompiler } from 'fastify';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type Validator = ReturnType<FastifySchemaCompiler<unknown>>;

/** `compile`'s validator, made on its first call; Ajv's errors are read from the returned function, as fastify does. */
export function lazyValidatorCompiler(compile: FastifySchemaCompiler<unknown>): FastifySchemaCompiler<unknown> {
  return (route) => {
    let validator: Validator | undefined;
    const validate = ((data: unknown) => {
      validator ??= compile(route);
      const result = validator(data);
      validate.errors = validator.errors;
      return result;
    }) as Validator;
    return validate;
  };
}

type SerializerFactory = ReturnType<typeof SerializerSelector>;

/** Fastify's own serializer factory (fast-json-stringify), each route's serializer built on its first response. */
export function lazySerializerFactory(): SerializerFactory {
  const select = SerializerSelector();
  return (externalSchemas, options) => {
    const compile = select(externalSchemas, options);
    return (route) => {
      let serialize: ((doc: unknown) => string) | undefined;
      return (doc: unknown) => (serialize ??= compile(route))(doc);
    };
  };
}
