// The TypeScript client (src/client, the package's `s3edge/client` export) against the OpenAPI document
// (docs/openapi.json, which test/e2e/openapi.test.ts holds to what a server serves): every operation has
// a client method (CALLS below; an alias, x-alias-of, is its first path's), and each method sends the
// operation's method to the operation's path and reads the operation's documented answer (its example),
// through an undici MockAgent that plays the server.
import t from 'tap';
import { MockAgent } from 'undici';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { S3EdgeClient } from '../../src/client/index.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
type Obj = Record<string, any>;
const doc = JSON.parse(readFileSync(join(ROOT, 'docs/openapi.json'), 'utf8')) as Obj;

type Method = { [K in keyof S3EdgeClient]: S3EdgeClient[K] extends (...args: any[]) => unknown ? K : never }[keyof S3EdgeClient];

/** operationId -> the client method and arguments that perform it. */
const CALLS: Record<string, [Method, ...unknown[]]> = {
  getOpenApiDocument: ['openApiDocument'],
  getSummary: ['summary'],
  listAssets: ['listAssets', { page: 2 }],
  uploadAsset: ['upload', { file: Buffer.from('hello'), fileName: 'hello.txt', visibility: 'public' }],
  downloadAsset: ['download', 'a1'],
  previewAsset: ['preview', 'a1'],
  deleteAsset: ['deleteAsset', 'a1'],
  createSignedUrl: ['signedUrl', 'a1', 60],
  purgeCache: ['purge', { all: true }],
  getUsage: ['usage', 10],
  listUsageEvents: ['usageEvents', { type: 'upload' }],
  listLedgerEntries: ['usageLedger'],
  getDailyUsage: ['usageDaily', 7],
  getStorageQuota: ['storageQuota'],
  getProxyLogs: ['proxyLogs', { hours: 6 }],
  listLoggedRequests: ['proxyLogRequests', { decision: 'blocked' }],
  listAnomalies: ['anomalies'],
  getAnomaly: ['anomaly', 'an1'],
  getCacheStats: ['cacheStats'],
  getMetrics: ['metrics'],
  listApiKeys: ['listApiKeys'],
  createApiKey: ['createApiKey', { name: 'ci', scopes: ['assets:read'] }],
  deleteApiKey: ['deleteApiKey', 'k1'],
  listAccessKeys: ['listAccessKeys', 'photos'],
  createAccessKey: ['createAccessKey', 'photos', { name: 'ci', permission: 'read' }],
  deleteAccessKey: ['deleteAccessKey', 'photos', 'AK1'],
  listBuckets: ['listBuckets'],
  createBucket: ['createBucket', 'photos'],
  setBucketPublic: ['setBucketPublic', 'photos', true],
  presignObjectRequest: ['presign', 'photos', { operation: 'get', key: 'a.txt' }],
  listTlds: ['tlds'],
  listPopularTlds: ['popularTlds'],
  searchTlds: ['searchTlds', 'io'],
  searchDomains: ['searchDomains', 'example.com'],
  listProjects: ['listProjects'],
  createProject: ['createProject', 'web'],
  getProject: ['project', 'p1'],
  deleteProject: ['deleteProject', 'p1'],
  listDeployments: ['listDeployments', 'p1'],
  createDeployment: ['createDeployment', 'p1', 'v1'],
  listHostnames: ['listHostnames', 'p1'],
  addHostname: ['addHostname', 'p1', { hostname: 'www.example.com' }],
  getHostname: ['hostname', 'p1', 'h1'],
  removeHostname: ['removeHostname', 'p1', 'h1'],
  setHostnameOrigin: ['setOrigin', 'p1', 'h1', { kind: 'url', url: 'https://origin.example.com' }],
  setHostnameRules: ['setRules', 'p1', 'h1', { blockCountries: ['KP'] }],
  verifyHostname: ['verifyHostname', 'p1', 'h1'],
  purgeHostname: ['purgeHostname', 'p1', 'h1'],
  getHostnameTls: ['hostnameTls', 'p1', 'www.example.com'],
  updateHostnameTls: ['updateHostnameTls', 'p1', 'h1', { redirectHttps: true, hstsMaxAge: 300 }],
  issueHostnameCertificate: ['issueHostnameCertificate', 'p1', 'h1'],
  uploadHostnameCertificate: ['uploadHostnameCertificate', 'p1', 'h1', { certificate: '-----BEGIN CERTIFICATE-----', privateKey: '-----BEGIN PRIVATE KEY-----' }],
  removeHostnameCertificate: ['removeHostnameCertificate', 'p1', 'h1'],
};

interface Operation {
  id: string;
  method: string;
  path: string;
  op: Obj;
}
const operations: Operation[] = Object.entries(doc.paths as Obj).flatMap(([path, item]) =>
  Object.entries(item as Obj).map(([method, op]) => ({ id: (op as Obj).operationId as string, method: method.toUpperCase(), path, op: op as Obj })),
);
const byId = new Map(operations.map((o) => [o.id, o]));

t.test('every operation has a client method', async (t) => {
  for (const o of operations) {
    const id = (o.op['x-alias-of'] as string | undefined) ?? o.id;
    const call = CALLS[id];
    if (!call) {
      t.fail(`no client method for ${id} (${o.method} ${o.path}): add one to src/client/index.ts and to CALLS here`);
      continue;
    }
    t.equal(typeof S3EdgeClient.prototype[call[0]], 'function', `${id}: S3EdgeClient.${call[0]}`);
  }
  t.same(Object.keys(CALLS).filter((id) => !byId.has(id)), [], 'no CALLS entry for an operation the document does not have');
});

t.test("each method sends its operation's request and reads its documented answer", async (t) => {
  const agent = new MockAgent();
  agent.disableNetConnect();
  t.teardown(() => agent.close());
  let answer: { status: number; body: string; type: string } = { status: 500, body: '', type: 'text/plain' };
  const seen: { method: string; path: string }[] = [];
  agent
    .get('http://api.test')
    .intercept({ path: () => true, method: () => true })
    .reply((req) => {
      seen.push({ method: req.method, path: req.path });
      return { statusCode: answer.status, data: answer.body, responseOptions: { headers: { 'content-type': answer.type } } };
    })
    .persist();
  const client = new S3EdgeClient({ baseUrl: 'http://api.test', apiKey: 's3e_test', dispatcher: agent });

  for (const [id, [method, ...args]] of Object.entries(CALLS)) {
    const o = byId.get(id);
    if (!o) continue;
    const [status, response] = Object.entries(o.op.responses as Obj).find(([s]) => /^2\d\d$/.test(s)) ?? ['200', {}];
    const [type, media] = Object.entries((response.content ?? {}) as Obj)[0] ?? ['application/json', { example: {} }];
    answer = { status: Number(status), body: typeof media.example === 'string' ? media.example : JSON.stringify(media.example), type };
    seen.length = 0;
    const fn = client[method] as (...a: unknown[]) => Promise<unknown>;
    const result = await fn.apply(client, args).catch((err: unknown) => err);
    t.notOk(result instanceof Error, `${id}: ${method}() reads the documented answer`, { result });
    t.equal(seen.length, 1, `${id}: one request`);
    const sent = seen[0];
    const template = new RegExp(`^${o.path.replace(/[.]/g, '\\.').replace(/\{\w+\}/g, '[^/?]+')}(\\?.*)?$`);
    t.equal(sent?.method, o.method, `${id}: ${o.method}`);
    t.match(sent?.path, template, `${id}: ${o.path}`);
  }
});
