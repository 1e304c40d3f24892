// Strict request validation for the management API. Fastify's default Ajv coerces types (`"name": 5`
// becomes "5") and silently drops fields that `additionalProperties: false` forbids; an API that takes
// credentials-shaping input should refuse both with a 400 instead. plugin.ts installs it for every route.
import { Ajv } from 'ajv';
import type { FastifySchemaCompiler, FastifySchemaValidationError, RouteShorthandOptions } from 'fastify';

// Fastify does not export these two from its entry point.
type SchemaErrorFormatter = NonNullable<RouteShorthandOptions['schemaErrorFormatter']>;
type SchemaErrorDataVar = Parameters<SchemaErrorFormatter>[1];

export interface StrictValidation {
  validatorCompiler: FastifySchemaCompiler<unknown>;
  schemaErrorFormatter: SchemaErrorFormatter;
}

/** Longest piece of client input (a field name) echoed in an error message. */
const MAX_ECHO = 64;

function echo(value: unknown): string {
  const s = String(value);
  return s.length > MAX_ECHO ? `${s.slice(0, MAX_ECHO)}...` : s;
}

/** One error in words a client can act on (Ajv's own text for the keywords it words well). */
function describe(e: FastifySchemaValidationError, dataVar: SchemaErrorDataVar): string {
  const where = dataVar + (e.instancePath || '');
  switch (e.keyword) {
    case 'additionalProperties':
      return `${where} has an unknown field '${echo(e.params['additionalProperty'])}'`;
    case 'enum': {
      const allowed = e.params['allowedValues'];
      return Array.isArray(allowed) ? `${where} must be one of: ${allowed.map(String).join(', ')}` : `${where} ${e.message ?? 'is invalid'}`;
    }
    case 'pattern':
      return `${where} contains characters that are not allowed`;
    default:
      return `${where} ${e.message ?? 'is invalid'}`;
  }
}

/** A validator compiler (its own Ajv: no coercion, no removal, no defaults) and its error formatter. */
export function strictValidation(): StrictValidation {
  const ajv = new Ajv({ coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false });
  return {
    validatorCompiler: ({ schema }) => ajv.compile(schema as object),
    schemaErrorFormatter: (errors, dataVar) => new Error(errors.map((e) => describe(e, dataVar)).join(', ')),
  };
}
