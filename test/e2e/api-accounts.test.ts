// The account side of the management API over a real socket: API keys (CLI and API), scopes and the
// 401/403/404 rules, the summary, usage and proxy-log shapes, spaces and credit grants via the CLI.
import t from 'tap';
import { ApiClientError } from '../../src/client/index.js';
import { apiClient, apiUser, PROVIDER_NAMES, ResponseRecorder } from '../helpers/api.js';
import { startServer } from '../helpers/server.js';

const SUMMARY_FIELDS = [
  'analytics', 'configured', 'credits', 'downloadedBytes', 'recentAssets', 'space', 'storageBytes', 'storageName', 'totalFiles',
  'uploadedBytes', 'uploadsLast24h',
];
const ANALYTICS_FIELDS = ['available', 'bytes', 'cacheHitRatio', 'cachedBytes', 'countries', 'enabled', 'hostname', 'requests', 'series', 'statusCodes'];
const CREDITS_FIELDS = [
  'atZero', 'balance', 'deliveryGraceHours', 'deliverySuspended', 'deliverySuspendsAt', 'depletedAt', 'enabled', 'freeMonthlyCredits', 'low',
  'lowCreditThreshold', 'projectedDailyStorageCredits', 'storageCreditsPerGbDay', 'transferCreditsPerGb', 'uploadCreditUnitBytes',
  'uploadCreditsPerUnit', 'usedCredits',
];

async function rejection(p: Promise<unknown>): Promise<ApiClientError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiClientError) return err;
    throw err;
  }
  throw new Error('expected the request to fail');
}

t.test('management API accounts', async (t) => {
  const server = await startServer({
    env: { S3EDGE_CREDITS_ENABLED: 'true', S3EDGE_CREDITS_FREE_MONTHLY_CREDITS: '50', S3EDGE_STORAGE_NAME: 'Edge Storage' },
  });
  t.teardown(() => server.stop());
  const recorder = new ResponseRecorder();

  t.test('CLI: api-keys create, list, delete and their errors', async (t) => {
    await server.admin(['users', 'create', 'cli-user']);
    const created = await server.admin(['api-keys', 'create', '--user', 'cli-user', '--scopes', 'assets:read,usage:read', '--name', 'ci']);
    t.match(created, { user: 'cli-user', name: 'ci', scopes: 'assets:read,usage:read' });
    t.match(created['token'], /^s3e_[0-9a-f]{32}_/);
    const listed = (await server.cli(['api-keys', 'list', '--user', 'cli-user'])).json as Record<string, unknown>[];
    t.equal(listed.length, 1);
    t.same(Object.keys(listed[0] ?? {}).sort(), ['createdAt', 'id', 'name', 'scopes', 'user'], 'never the token');
    const bad = await server.cli(['api-keys', 'create', '--user', 'cli-user', '--scopes', 'assets:read,root']);
    t.equal(bad.code, 1);
    t.match(bad.json, { error: { code: 'InvalidScope' } });
    const none = await server.cli(['api-keys', 'create', '--user', 'cli-user']);
    t.equal(none.code, 2, '--scopes is required');
    const gone = await server.cli(['api-keys', 'delete', 'ffffffffffffffffffffffffffffffff']);
    t.match(gone.json, { error: { code: 'NoSuchApiKey' } });

    // A key deleted by the CLI (another process) stops working within the verifier's 1 s cache.
    const client = apiClient(server, created['token'] as string, recorder);
    t.equal((await client.summary()).totalFiles, 0);
    await server.admin(['api-keys', 'delete', created['id'] as string]);
    let status = 200;
    for (let i = 0; i < 40 && status === 200; i++) {
      status = (await client.raw('GET', '/api/v3/cdn/summary')).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 100));
    }
    t.equal(status, 401, 'the deleted key is refused');
  });

  t.test('401 for missing or invalid bearer tokens, with the JSON envelope', async (t) => {
    const { token } = await apiUser(server, ['assets:read'], { recorder });
    const probe = apiClient(server, token, recorder);
    const cases: [string, Record<string, string>][] = [
      ['no header', { authorization: '' }],
      ['basic scheme', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
      ['garbage', { authorization: 'Bearer nope' }],
      ['wrong secret', { authorization: `Bearer ${token.slice(0, -2)}xx` }],
    ];
    for (const [what, headers] of cases) {
      const r = await probe.raw('GET', '/api/v3/cdn/summary', { headers });
      t.equal(r.status, 401, what);
      t.same(JSON.parse(r.body.toString()), { success: false, message: 'Missing or invalid API key', code: 'unauthorized' }, what);
      t.equal(r.headers.get('www-authenticate'), 'Bearer');
    }
  });

  t.test('403 without the scope, for every route', async (t) => {
    const { client } = await apiUser(server, ['domains:read'], { recorder });
    const routes: [string, string][] = [
      ['GET', '/api/v3/cdn/summary'], ['GET', '/api/v3/cdn/usage'], ['GET', '/api/v3/cdn/proxy-logs'], ['GET', '/api/v3/api-keys'],
      ['GET', '/api/v3/cdn/assets'], ['POST', '/api/v3/cdn/assets'], ['DELETE', '/api/v3/cdn/assets/abc'],
      ['GET', '/api/v3/cdn/assets/abc/download'], ['GET', '/storage/buckets/b/access-keys'],
    ];
    for (const [method, path] of routes) {
      const r = await client.raw(method, path);
      t.equal(r.status, 403, `${method} ${path}`);
      const body = JSON.parse(r.body.toString()) as Record<string, unknown>;
      t.equal(body['success'], false);
      t.equal(body['code'], 'forbidden');
      t.match(body['message'], /lacks the '[a-z-]+:[a-z]+' scope/);
    }
  });

  t.test('API keys through the API: subsets only, own keys only, deletion is immediate', async (t) => {
    const admin = await apiUser(server, ['api-keys:manage', 'assets:read', 'usage:read'], { recorder, name: 'keys-owner' });
    const other = await apiUser(server, ['api-keys:manage'], { recorder, name: 'keys-other' });
    const made = await admin.client.createApiKey({ name: 'deploy', scopes: ['assets:read'] });
    t.same(made.scopes, ['assets:read']);
    t.match(made.token, /^s3e_/);
    const child = apiClient(server, made.token, recorder);
    t.equal((await child.summary()).space.name, 'keys-owner', 'the new key acts for the same user');
    const escalate = await rejection(admin.client.createApiKey({ scopes: ['assets:write'] }));
    t.equal(escalate.status, 403, 'cannot grant a scope the caller lacks');
    const invalid = await rejection(admin.client.createApiKey({ scopes: ['everything'] }));
    t.equal(invalid.status, 400);
    t.equal(invalid.body.code, 'invalid_request');
    const listed = await admin.client.listApiKeys();
    t.equal(listed.length, 2);
    // The secret is what follows `s3e_<id>_` (base64url: it may hold '_' itself, so not split('_')[2],
    // which could be a fragment short enough to occur in the listing by chance).
    t.notOk(JSON.stringify(listed).includes(made.token.slice('s3e_'.length + 32 + 1)), 'listing never shows a token');
    t.same(Object.keys(listed[0] ?? {}).sort(), ['createdAt', 'id', 'name', 'scopes']);
    t.same((await other.client.listApiKeys()).length, 1, "another user sees only its own key");
    const foreign = await rejection(other.client.deleteApiKey(made.id));
    t.equal(foreign.status, 404, "another user's key is not found");
    await admin.client.deleteApiKey(made.id);
    t.equal((await child.raw('GET', '/api/v3/cdn/summary')).status, 401, 'refused at once after deletion');
  });

  t.test('summary, usage and proxy logs of a fresh user: exact shapes', async (t) => {
    const { client, name } = await apiUser(server, ['assets:read', 'usage:read'], { recorder, name: 'fresh' });
    const s = await client.summary();
    t.same(Object.keys(s).sort(), SUMMARY_FIELDS);
    t.same(Object.keys(s.analytics).sort(), ANALYTICS_FIELDS);
    t.same(Object.keys(s.credits).sort(), CREDITS_FIELDS);
    t.same(Object.keys(s.space).sort(), ['id', 'name', 'status', 'suspendedAt']);
    t.match(s, {
      totalFiles: 0, storageBytes: 0, uploadedBytes: 0, downloadedBytes: 0, uploadsLast24h: 0, recentAssets: [],
      configured: true, storageName: 'Edge Storage', space: { name, status: 'active', suspendedAt: null },
    });
    t.match(s.analytics, { enabled: true, available: false, hostname: 'cdn.localhost', requests: 0, bytes: 0, cachedBytes: 0, cacheHitRatio: 0 });
    t.same(s.analytics.statusCodes, {});
    t.equal(s.analytics.series.length, 24);
    t.equal(s.credits.balance, 50, 'the free monthly grant');
    t.equal(s.credits.enabled, true);
    t.match(s.credits, { low: true, atZero: 'refuse-uploads', deliveryGraceHours: 72, depletedAt: null, deliverySuspendsAt: null, deliverySuspended: false }, 'below the default threshold of 100: low; nothing stopped');

    const u = await client.usage();
    t.same(u.events, []);
    t.equal(u.creditLedger.length, 1);
    t.same(Object.keys(u.creditLedger[0] ?? {}).sort(), ['assetId', 'balanceAfter', 'bytes', 'createdAt', 'credits', 'eventType', 'id', 'metadata', 'rate', 'userId']);
    t.match(u.creditLedger[0], { eventType: 'free_monthly_grant', credits: -50, balanceAfter: 50 });
    for (const limit of ['abc', '-1', '0', '100000']) {
      t.equal((await client.raw('GET', `/api/v3/cdn/usage?limit=${limit}`)).status, 200, `limit=${limit} falls back, no error`);
    }
    const p = await client.proxyLogs();
    t.same(Object.keys(p).sort(), [
      'anomalies', 'available', 'bytes', 'from', 'geo', 'geoConcentration', 'hostname', 'hostnames', 'hours', 'requests', 'risk', 'series', 'to',
      'topSources', 'topSourcesByBytes',
    ]);
    t.match(p, { requests: { total: 0, allowed: 0, blocked: 0 }, risk: { index: 0, rating: 'low' }, geo: [], topSources: [], anomalies: [] });
  });

  t.test('spaces suspend/resume and credit grants through the CLI show in the API', async (t) => {
    const { client, name } = await apiUser(server, ['assets:read', 'usage:read'], { recorder, name: 'suspendee' });
    const suspended = await server.admin(['spaces', 'suspend', '--user', name]);
    t.match(suspended, { user: name, status: 'suspended' });
    let s = await client.summary();
    t.equal(s.space.status, 'suspended');
    t.match(s.space.suspendedAt, /^\d{4}-\d\d-\d\dT/);
    t.equal(s.space.suspendedAt, suspended['suspendedAt']);
    await server.admin(['spaces', 'resume', '--user', name]);
    s = await client.summary();
    t.same([s.space.status, s.space.suspendedAt], ['active', null]);

    const granted = await server.admin(['credits', 'grant', '--user', name, '--amount', '12.5']);
    t.match(granted, { user: name, credits: 12.5, balance: 62.5 });
    const u = await client.usage(1);
    t.equal(u.creditLedger.length, 1, 'limit applies');
    t.match(u.creditLedger[0], { eventType: 'grant', credits: -12.5, balanceAfter: 62.5 });
    t.equal(u.credits.balance, 62.5);
    // A repeated parameter means its first value here as on the asset list (SPEC.md §7: never an error).
    const repeated = await client.raw('GET', '/api/v3/cdn/usage?limit=1&limit=3');
    t.equal(repeated.status, 200);
    t.equal((JSON.parse(repeated.body.toString()) as { creditLedger: unknown[] }).creditLedger.length, 1, 'limit=1&limit=3: the first value');
    for (const amount of ['0', '-3', '1.2345', 'ten']) {
      const r = await server.cli(['credits', 'grant', '--user', name, `--amount=${amount}`]);
      t.match(r.json, { error: { code: 'InvalidAmount' } }, `--amount ${amount}`);
    }
    const nobody = await server.cli(['spaces', 'suspend', '--user', 'nobody']);
    t.match(nobody.json, { error: { code: 'NoSuchUser' } });
  });

  t.test('unknown management paths and bad JSON are JSON errors', async (t) => {
    const { client } = await apiUser(server, ['api-keys:manage'], { recorder });
    const r = await client.raw('GET', '/api/v3/nothing-here');
    t.equal(r.status, 404);
    t.same(JSON.parse(r.body.toString()), { success: false, message: 'Not found', code: 'not_found' });
    for (const path of ['/storage/buckets/%ZZ/access-keys', `/storage/buckets/${'a'.repeat(150)}/access-keys`]) {
      const malformed = await client.raw('GET', path);
      t.ok(malformed.status === 400 || malformed.status === 414, `${path.slice(0, 40)}: a 4xx`);
      t.same(JSON.parse(malformed.body.toString()), { success: false, message: 'Malformed request URL', code: 'invalid_request' });
    }
    // fastify reads a body before it knows no route takes it: an unknown path stays a 404 whatever the body.
    for (const [body, type] of [['', 'application/json'], ['{bad', 'application/json'], ['x', 'application/x-unknown']] as const) {
      for (const path of ['/api/v3/nothing-here', '/storage/nothing-here', '/dashboard/nothing-here']) {
        const unknown = await client.raw('POST', path, { body, headers: { 'content-type': type } });
        t.equal(unknown.status, 404, `POST ${path} (${type}, ${JSON.stringify(body)})`);
        t.same(JSON.parse(unknown.body.toString()), { success: false, message: 'Not found', code: 'not_found' });
      }
    }
    const bad = await client.raw('POST', '/api/v3/api-keys', { body: '{"scopes":', headers: { 'content-type': 'application/json' } });
    t.equal(bad.status, 400);
    t.match(JSON.parse(bad.body.toString()), { success: false, code: 'invalid_request' });
  });

  t.test('no response carries an internal name', async (t) => {
    recorder.assertNoLeaks(t, [...PROVIDER_NAMES, server.dataDir]);
  });
});
