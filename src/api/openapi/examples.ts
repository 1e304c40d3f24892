// Examples for the OpenAPI document, made from a JSON schema: a schema's own `examples[0]` (or `const`,
// `enum[0]`, `default`) where it has one, else a value of its type that its field's name makes plausible
// (`createdAt` a time, `publicUrl` a URL, `size` some bytes). Deterministic, so the document is too;
// test/unit/openapi.test.ts checks that every example validates against its schema.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Schema = Record<string, unknown>;

const TIME = '2026-05-04T09:30:00.000Z';

/** Plausible strings by field name (the last property name on the way down; an array's items take the array's). */
const STRINGS: Record<string, string> = {
  id: '6f1c2a9e4b7d4e0f9a3b5c7d1e2f3a4b',
  userId: 'u_3b1f0c2d9e8a',
  assetId: '6f1c2a9e4b7d4e0f9a3b5c7d1e2f3a4b',
  projectId: 'p_7c2e1a',
  hostnameId: 'h_91b0d4',
  keyId: 'SEXOX3CMVGZIW6SFHIKV',
  accessKeyId: 'SEXOX3CMVGZIW6SFHIKV',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  token: 's3e_0123456789abcdef0123456789abcdef_Q2hhbmdlLW1lLXRoaXMtaXMtYW4tZXhhbXBsZS10b2tlbg',
  csrfToken: 'b64csrfExampleToken',
  name: 'example',
  fileName: 'logo.png',
  'file-name': 'logo.png',
  key: 'logo.png',
  contentType: 'image/png',
  storageName: 's3edge',
  publicUrl: 'https://cdn.example.com/u_3b1f0c2d9e8a/logo.png',
  url: 'https://cdn.example.com/u_3b1f0c2d9e8a/logo.png?expires=1777887000&signature=3f1a',
  endpoint: 'https://s3.example.com',
  region: 'us-east-1',
  bucket: 'photos',
  prefix: 'holidays/',
  sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  etag: '"9e107d9d372bb6826bd81d3542a419d6"',
  hostname: 'www.example.com',
  host: 'www.example.com',
  domain: 'example.com',
  domainUnicode: 'example.com',
  query: 'example.com',
  q: 'io',
  tld: 'com',
  extension: '.com',
  country: 'DE',
  code: 'DE',
  countryName: 'Germany',
  topCountry: 'DE',
  ip: '203.0.113.7',
  clientIp: '203.0.113.7',
  method: 'GET',
  path: '/index.html',
  userAgent: 'curl/8.5.0',
  decision: 'allowed',
  eventType: 'upload',
  type: 'upload',
  source: 'api',
  message: 'Done',
  scopes: 'assets:read',
  cursor: 'eyJ0IjoxNzc3ODg3MDAwMDAwLCJpZCI6NDJ9',
  nextCursor: 'eyJ0IjoxNzc3ODg3MDAwMDAwLCJpZCI6NDJ9',
  search: 'logo',
  date: '2026-05-04',
  bonusEndingDate: '2026-06-30',
  value: 's3edge-verify=5b0c1d2e',
  text: 'Open to everyone.',
  indexDocument: 'index.html',
  description: 'Read assets and their summary',
  delimiter: '/',
  continuationToken: '1/holidays/2026.jpg',
  cacheStatus: 'HIT',
  checkedBy: 'rdap.example.net',
  reason: 'registered',
  note: 'monthly grant',
  kind: 'file',
};

/** Plausible whole numbers by field name; anything else is 1 (or the schema's minimum). */
const INTEGERS: Record<string, number> = {
  size: 48213,
  bytes: 48213,
  bytesSent: 48213,
  bytesIn: 0,
  page: 1,
  limit: 20,
  total: 1,
  pages: 1,
  status: 200,
  statusCode: 200,
  requests: 120,
  hours: 24,
  days: 30,
  minYears: 1,
  maxYears: 10,
  purged: 3,
  expiresIn: 3600,
  maxKeys: 100,
  bucketSeconds: 3600,
};

const NUMBERS: Record<string, number> = {
  cacheHitRatio: 0.75,
  share: 0.5,
  durationMs: 12.5,
};

/** An example value of `schema`; `name` is the property it is the value of. */
export function exampleOf(schema: unknown, name = ''): Json {
  if (typeof schema !== 'object' || schema === null) return null;
  const s = schema as Schema;
  if (Array.isArray(s['examples']) && s['examples'].length > 0) return s['examples'][0] as Json;
  if ('const' in s) return s['const'] as Json;
  if (Array.isArray(s['enum']) && s['enum'].length > 0) return s['enum'][0] as Json;
  if ('default' in s) return s['default'] as Json;
  for (const k of ['anyOf', 'oneOf'] as const) {
    const options = s[k];
    if (Array.isArray(options)) {
      // The first option that is not null: an example shows a value where it can.
      const chosen = options.find((o: Schema) => o['type'] !== 'null') ?? options[0];
      return exampleOf(chosen, name);
    }
  }
  if (Array.isArray(s['allOf'])) {
    return Object.assign({}, ...s['allOf'].map((part) => exampleOf(part, name)).filter((v) => typeof v === 'object' && v !== null)) as Json;
  }
  switch (s['type']) {
    case 'object':
      return objectExample(s, name);
    case 'array': {
      const min = typeof s['minItems'] === 'number' ? s['minItems'] : 1;
      const item = exampleOf(s['items'], name);
      return Array.from({ length: Math.max(1, min) }, () => item);
    }
    case 'string':
      return stringExample(s, name);
    case 'integer':
      return numberExample(s, INTEGERS[name] ?? 1);
    case 'number':
      return numberExample(s, NUMBERS[name] ?? INTEGERS[name] ?? 1.5);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return {};
  }
}

/** Keys of an example map (a `patternProperties` object) by the map's name. */
const MAP_KEYS: Record<string, string> = { statusCodes: '200', countries: 'Germany', blockedBy: 'blockIps' };

function objectExample(s: Schema, name: string): Json {
  const out: Record<string, Json> = {};
  const properties = (s['properties'] ?? {}) as Record<string, unknown>;
  for (const [key, sub] of Object.entries(properties)) out[key] = exampleOf(sub, key);
  const patterns = s['patternProperties'] as Record<string, unknown> | undefined;
  if (patterns) for (const sub of Object.values(patterns)) out[MAP_KEYS[name] ?? 'example'] = exampleOf(sub, '');
  return out;
}

function stringExample(s: Schema, name: string): string {
  if (/At$|^(time|timestamp|start|from|to|checkedAt)$/.test(name)) return TIME;
  const known = STRINGS[name];
  if (known !== undefined) return known;
  if (s['contentMediaType'] !== undefined) return 'the bytes';
  const min = typeof s['minLength'] === 'number' ? s['minLength'] : 0;
  return 'string'.padEnd(min, 'x');
}

function numberExample(s: Schema, preferred: number): number {
  const min = typeof s['minimum'] === 'number' ? s['minimum'] : undefined;
  const max = typeof s['maximum'] === 'number' ? s['maximum'] : undefined;
  if (min !== undefined && preferred < min) return min;
  if (max !== undefined && preferred > max) return max;
  return preferred;
}
