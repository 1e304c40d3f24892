// The OpenAPI 3.1 document of the management API, made from its routes as Fastify registered them
// (api/openapi/routes.ts collects them): each route's own TypeBox schemas (params, body, response), the
// words of its schema (operationId, summary, tags, documentedQuery, documentedBody: route-module.ts), the
// scope of its requireScope hook and its rate limit. So the document cannot drift from the routes; only
// the words can be wrong. The schemas that src/api/v3/schemas.ts exports by name become components and
// are referred to; the error envelope is one component (ErrorBody) and each error status one response.
import { Kind, type TSchema } from '@sinclair/typebox';
import type { FastifySchema } from 'fastify';
import type { Scope } from '../../auth/api-keys.js';
import * as SCHEMAS from '../v3/schemas.js';
import { exampleOf } from './examples.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** A route of the management API as the document needs it. */
export interface DocumentedRoute {
  method: string;
  /** Fastify's path, `:name` for a parameter. */
  url: string;
  schema: FastifySchema | undefined;
  /** The scopes its requireScope hooks ask for; none for a public route. */
  scopes: readonly Scope[];
  rateLimit: { max: number; windowSeconds: number } | undefined;
}

export interface DocumentOptions {
  /** The scopes and what each allows (src/auth/api-keys.ts SCOPES). */
  scopes: Readonly<Record<string, string>>;
  /** The dashboard session cookie's name, when the dashboard is on (its session authenticates every scoped route). */
  sessionCookie: string | undefined;
}

export const BEARER = 'bearerAuth';
export const SESSION = 'sessionCookie';

/** Names of the schemas.ts exports that would read ambiguously alone. */
const RENAMED: Record<string, string> = { Kind: 'AssetKind', Visibility: 'AssetVisibility' };

/** Each error status: its component name, what it means here, and an example body's code and message. */
const ERRORS: Record<string, { name: string; description: string; code: string; message: string }> = {
  400: { name: 'InvalidRequest', description: 'The request is malformed or a value is wrong (the message names it).', code: 'invalid_request', message: 'Invalid request: body/name must NOT have fewer than 1 characters' },
  401: { name: 'Unauthorized', description: 'No valid API key (or dashboard session).', code: 'unauthorized', message: 'Missing or invalid API key' },
  402: { name: 'InsufficientCredits', description: 'The balance cannot pay for the upload: `requiredCredits` and `balance` say by how much.', code: 'insufficient_credits', message: 'Not enough credits for this upload' },
  403: { name: 'Forbidden', description: "The key lacks the route's scope (or the space is suspended, or a session's CSRF token is missing, or an upload would pass a storage quota: `quota_exceeded` with `quota`, `quotaBytes`, `storedBytes`, `reservedBytes`, `requiredBytes`).", code: 'forbidden', message: "This API key lacks the 'assets:read' scope" },
  404: { name: 'NotFound', description: "Not found: also another user's resource (existence is never revealed).", code: 'not_found', message: 'Not found' },
  409: { name: 'Conflict', description: 'The name is taken, or the state does not allow it (the code says which).', code: 'hostname_taken', message: 'That hostname belongs to a project already' },
  412: { name: 'PreconditionFailed', description: 'If-Match or If-Unmodified-Since failed.', code: 'precondition_failed', message: 'A precondition (If-Match / If-Unmodified-Since) failed' },
  413: { name: 'PayloadTooLarge', description: 'The upload is larger than the server takes (maxObjectSize).', code: 'payload_too_large', message: 'The file is larger than the maximum object size' },
  415: { name: 'UnsupportedMediaType', description: 'The body is not of a type this route takes.', code: 'unsupported_media_type', message: "Uploads must be multipart/form-data with a file part named 'file'" },
  416: { name: 'RangeNotSatisfiable', description: 'The Range asked for lies outside the bytes.', code: 'range_not_satisfiable', message: 'The requested range is not satisfiable' },
  429: { name: 'RateLimited', description: 'Over the rate limit of this route for this API key; `Retry-After` says when to retry.', code: 'rate_limited', message: 'Too many requests to this endpoint (at most 30 per window for one API key); retry in 1 minute' },
};

const DEFAULT_ERROR = {
  name: 'Error',
  description: 'Any other failure, in the same envelope: 503 `slow_down`, `storage_unavailable`, `busy` or `metadata_unavailable` (with `Retry-After`), 507 `storage_full`, 500 `internal_error`.',
  code: 'storage_unavailable',
  message: 'Storage is temporarily unavailable; retry later',
};

const SUCCESS: Record<string, string> = { 200: 'OK', 201: 'Created', 204: 'No content', 206: 'Partial content', 304: 'Not modified' };

const RATE_LIMIT_HEADERS: JsonObject = {
  'RateLimit-Limit': { description: 'Requests allowed per window for this API key.', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in this window.', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the window resets.', schema: { type: 'integer' } },
};

/** Keys whose values are data, not schemas: copied as they are. */
const DATA_KEYS = new Set(['const', 'enum', 'default', 'examples', 'example']);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The schemas.ts exports that are schemas, by object identity: the components. */
function namedSchemas(): Map<object, string> {
  const names = new Map<object, string>();
  for (const [name, value] of Object.entries(SCHEMAS)) {
    if (isObject(value) && Kind in value && !names.has(value)) names.set(value, RENAMED[name] ?? name);
  }
  return names;
}

function openApiPath(url: string): string {
  return url.replace(/:(\w+)/g, '{$1}');
}

/** Builds the document; the same routes give the same document, byte for byte once serialized. */
export function openApiDocument(routes: readonly DocumentedRoute[], opts: DocumentOptions): JsonObject {
  const names = namedSchemas();
  const components = new Map<string, object>();
  const errorResponses = new Map<string, JsonObject>();

  /** A schema as plain JSON, with the named schemas (but `top` itself) as $refs to their components. */
  const convert = (schema: unknown, top = false): Json => {
    if (Array.isArray(schema)) return schema.map((s) => convert(s));
    if (!isObject(schema)) return schema as Json;
    const name = top ? undefined : names.get(schema);
    if (name !== undefined) {
      components.set(name, schema);
      return { $ref: `#/components/schemas/${name}` };
    }
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(schema)) {
      if (key === '$id' || value === undefined) continue;
      out[key] = DATA_KEYS.has(key) ? (JSON.parse(JSON.stringify(value)) as Json) : convert(value);
    }
    return out;
  };

  const errorResponse = (status: string): Json => {
    const e = ERRORS[status] ?? DEFAULT_ERROR;
    if (!errorResponses.has(e.name)) {
      const headers: JsonObject = {};
      if (status === '401') headers['WWW-Authenticate'] = { description: '`Bearer`', schema: { type: 'string' } };
      if (status === '429') headers['Retry-After'] = { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } };
      const example: JsonObject = { success: false, message: e.message, code: e.code };
      if (status === '402') Object.assign(example, { requiredCredits: 2, balance: 0.5 });
      errorResponses.set(e.name, {
        description: e.description,
        ...(Object.keys(headers).length > 0 ? { headers } : {}),
        content: { 'application/json': { schema: convert(SCHEMAS.ErrorBody), example } },
      });
    }
    return { $ref: `#/components/responses/${e.name}` };
  };

  const responsesOf = (route: DocumentedRoute): JsonObject => {
    const out: JsonObject = {};
    const declared = (route.schema?.response ?? {}) as Record<string, unknown>;
    for (const status of Object.keys(declared).sort()) {
      const schema = declared[status];
      if (schema === SCHEMAS.ErrorBody) {
        out[status] = errorResponse(status);
        continue;
      }
      const response: JsonObject = { description: SUCCESS[status] ?? status };
      if (isObject(schema) && isObject(schema['content'])) {
        // Fastify's own form for a non-JSON answer: { description, content: { <media type>: { schema, example } } }.
        if (typeof schema['description'] === 'string') response['description'] = schema['description'];
        const content: JsonObject = {};
        for (const [media, entry] of Object.entries(schema['content'] as Record<string, Record<string, unknown>>)) {
          content[media] = { schema: convert(entry['schema']), example: 'example' in entry ? (entry['example'] as Json) : exampleOf(entry['schema']) };
        }
        response['content'] = content;
      } else if (isObject(schema) && Object.keys(schema).every((k) => k === 'description')) {
        // { description } alone: an answer without a body (304).
        if (typeof schema['description'] === 'string') response['description'] = schema['description'];
      } else if (schema !== undefined) {
        response['content'] = { 'application/json': { schema: convert(schema), example: exampleOf(schema) } };
      }
      if (route.rateLimit && status.startsWith('2')) response['headers'] = RATE_LIMIT_HEADERS;
      out[status] = response;
    }
    out['default'] = errorResponse('default');
    return out;
  };

  const parametersOf = (route: DocumentedRoute): Json[] => {
    const params: Json[] = [];
    const pathSchema = route.schema?.params as Record<string, unknown> | undefined;
    const pathProps = (pathSchema?.['properties'] ?? {}) as Record<string, unknown>;
    for (const [, name = ''] of route.url.matchAll(/:(\w+)/g)) {
      const schema = pathProps[name] ?? { type: 'string' };
      params.push({ name, in: 'path', required: true, schema: convert(schema), example: exampleOf(schema, name) });
    }
    const query = route.schema?.documentedQuery as Record<string, unknown> | undefined;
    const required = new Set((query?.['required'] ?? []) as string[]);
    for (const [name, schema] of Object.entries((query?.['properties'] ?? {}) as Record<string, Record<string, unknown>>)) {
      const { description, ...rest } = schema;
      params.push({
        name,
        in: 'query',
        required: required.has(name),
        ...(typeof description === 'string' ? { description } : {}),
        schema: convert(rest),
        example: exampleOf(schema, name),
      });
    }
    return params;
  };

  const requestBodyOf = (schema: FastifySchema | undefined): Json | undefined => {
    // A documented body says more than the validated one it stands beside (fields the service checks itself).
    const body: NonNullable<FastifySchema['documentedBody']> | undefined = schema?.documentedBody ?? (schema?.body !== undefined ? { schema: schema.body as TSchema } : undefined);
    if (!body) return undefined;
    return {
      required: body.required ?? true,
      content: { [body.contentType ?? 'application/json']: { schema: convert(body.schema), example: exampleOf(body.schema) } },
    };
  };

  const paths: Record<string, JsonObject> = {};
  const tags = new Set<string>();
  for (const route of [...routes].sort((a, b) => a.url.localeCompare(b.url) || a.method.localeCompare(b.method))) {
    const s = route.schema ?? {};
    const scopes = [...route.scopes];
    const security: JsonObject[] = [];
    if (scopes.length > 0) security.push({ [BEARER]: scopes });
    if (scopes.length > 0 && opts.sessionCookie) security.push({ [SESSION]: scopes });
    for (const tag of s.tags ?? []) tags.add(tag);
    const operation: JsonObject = {
      operationId: s.operationId ?? `${route.method.toLowerCase()}${route.url.replace(/[^A-Za-z0-9]+(\w)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
      summary: s.summary ?? `${route.method} ${route.url}`,
      ...(s.description ? { description: s.description } : {}),
      tags: [...(s.tags ?? [])],
      ...(s.aliasOf ? { 'x-alias-of': s.aliasOf } : {}),
      security,
      'x-scopes': scopes,
      ...(route.rateLimit ? { 'x-rate-limit': { max: route.rateLimit.max, windowSeconds: route.rateLimit.windowSeconds, per: 'api-key' } } : {}),
    };
    const parameters = parametersOf(route);
    if (parameters.length > 0) operation['parameters'] = parameters;
    const requestBody = requestBodyOf(route.schema);
    if (requestBody !== undefined) operation['requestBody'] = requestBody;
    operation['responses'] = responsesOf(route);
    (paths[openApiPath(route.url)] ??= {})[route.method.toLowerCase()] = operation;
  }

  // The components that the operations named, each with the others it names as $refs in turn.
  const schemas: JsonObject = {};
  for (let added = -1; added !== components.size; ) {
    added = components.size;
    for (const [name, schema] of [...components]) schemas[name] ??= convert(schema, true);
  }

  const scopeList = Object.entries(opts.scopes).map(([scope, allows]) => `- \`${scope}\`: ${allows}`).join('\n');
  const securitySchemes: JsonObject = {
    [BEARER]: {
      type: 'http',
      scheme: 'bearer',
      description: `An API key (\`s3e_...\`), made in the dashboard or with \`s3edge api-keys create\`. Each operation lists the scopes it needs (in \`security\` and \`x-scopes\`):\n\n${scopeList}`,
    },
  };
  if (opts.sessionCookie) {
    securitySchemes[SESSION] = {
      type: 'apiKey',
      in: 'cookie',
      name: opts.sessionCookie,
      description: "The account dashboard's session (POST /dashboard/session). A state change signed in by it also needs the session's CSRF token in `X-CSRF-Token`.",
    };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 's3edge management API',
      version: 'v3',
      description:
        'The management API of an s3edge gateway: CDN assets, usage and credits, proxy logs, bucket access keys, buckets, projects and hostnames, domains. ' +
        'Made from the routes of the server that serves it (`GET /api/v3/openapi.json`); docs/API.md tells the rest. ' +
        'Every answer but a download is JSON; a failure is `{ "success": false, "message", "code" }` (ErrorBody). ' +
        'Every GET also answers HEAD.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: '/', description: 'This server' }],
    tags: [...tags].sort().map((name) => ({ name })),
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      schemas: Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b))),
      responses: Object.fromEntries([...errorResponses].sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes,
    },
  };
}
