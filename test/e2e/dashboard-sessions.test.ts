// Dashboard sign-in and sessions end to end: the compiled server on a real socket, users and passwords
// made by the admin CLI (passwords on its standard input), requests by undici. Each subtest signs in
// from a loopback address of its own (127.0.0.N), so the per-IP sign-in limit of one is not spent by
// another; the per-account limit is 3 and the per-IP limit 5 for the whole file, so no name signs in
// more than 3 times but in the subtest of the limits. Expiry runs against a server in this process
// with an injected clock.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { Agent, FormData, request, type Dispatcher } from 'undici';
import { createContext } from '../../src/context.js';
import { startServer as listen } from '../../src/server.js';
import { DASHBOARD_CSP, WEB_ROOT } from '../../src/web/static.js';
import { childProcessEnv, nodeCommand } from '../helpers/child-env.js';
import { S3EDGE_BIN, startServer } from '../helpers/server.js';
import { RawS3 } from '../helpers/s3-client.js';
import { inProcessServerConfig, tempDir } from '../helpers/temp-data.js';
import { parseS3Error } from '../helpers/xml.js';

const PER_ACCOUNT = 3;
const PER_IP = 5;
const TRUSTED_PROXY = '127.0.0.250';
const server = await startServer({
  tls: true,
  env: {
    S3EDGE_DASHBOARD_SIGN_IN_PER_ACCOUNT: String(PER_ACCOUNT),
    S3EDGE_DASHBOARD_SIGN_IN_PER_IP: String(PER_IP),
    // A load balancer in front of the gateway (the limits subtest connects from it).
    S3EDGE_CDN_TRUSTED_PROXIES: TRUSTED_PROXY,
  },
});
t.teardown(() => server.stop());

// ------------------------------------------------------------------------------------------- helpers

/** The CLI's environment: this process's, without any S3EDGE_* setting of the host. */
const CLI_ENV = childProcessEnv();

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `s3edge <args> --data-dir DIR` with `input` on standard input (how passwords are given). */
function cli(dataDir: string, args: string[], input = ''): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(...nodeCommand([S3EDGE_BIN, ...args, '--data-dir', dataDir]), { env: CLI_ENV, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(input);
  });
}

/** A --json command that must succeed; its output. */
async function admin(dataDir: string, args: string[], input = ''): Promise<Record<string, unknown>> {
  const r = await cli(dataDir, [...args, '--json'], input);
  if (r.code !== 0) throw new Error(`s3edge ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

/** The password of user `name` in this file (12+ characters, never reused across users). */
function passwordOf(name: string): string {
  return `the passphrase of ${name}`;
}

async function createUser(dataDir: string, name: string, withPassword = true): Promise<string> {
  const user = await admin(dataDir, ['users', 'create', name, ...(withPassword ? ['--password-stdin'] : [])], withPassword ? `${passwordOf(name)}\n` : '');
  return user['id'] as string;
}

let lastPeer = 1;
/** A client from a loopback address of its own: the server sees another IP. */
function peer(t: Test): Dispatcher {
  const agent = new Agent({ localAddress: `127.0.0.${++lastPeer}` });
  t.teardown(() => agent.close());
  return agent;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: Record<string, unknown>;
}

interface CallOptions {
  /** The session cookie's value. */
  cookie?: string;
  csrf?: string;
  origin?: string;
  bearer?: string;
  forwardedFor?: string;
  /** Sent as application/json. */
  json?: unknown;
  body?: string | FormData;
  contentType?: string;
}

async function call(base: string, dispatcher: Dispatcher, method: Dispatcher.HttpMethod, path: string, o: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (o.cookie !== undefined) headers['cookie'] = `s3edge_session=${o.cookie}`;
  if (o.csrf !== undefined) headers['x-csrf-token'] = o.csrf;
  if (o.origin !== undefined) headers['origin'] = o.origin;
  if (o.bearer !== undefined) headers['authorization'] = `Bearer ${o.bearer}`;
  if (o.forwardedFor !== undefined) headers['x-forwarded-for'] = o.forwardedFor;
  if (o.json !== undefined) headers['content-type'] = 'application/json';
  if (o.contentType !== undefined) headers['content-type'] = o.contentType;
  const body = o.json !== undefined ? JSON.stringify(o.json) : o.body;
  const res = await request(`${base}${path}`, { method, headers, dispatcher, ...(body === undefined ? {} : { body }) });
  const text = await res.body.text();
  let json: Record<string, unknown> = {};
  if (text !== '' && String(res.headers['content-type'] ?? '').startsWith('application/json')) json = JSON.parse(text) as Record<string, unknown>;
  return { status: res.statusCode, headers: res.headers, text, json };
}

function setCookies(a: Answer): string[] {
  const v = a.headers['set-cookie'];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

interface Session {
  cookie: string;
  csrf: string;
}

async function signIn(base: string, dispatcher: Dispatcher, name: string, password = passwordOf(name)): Promise<{ answer: Answer; session?: Session }> {
  const answer = await call(base, dispatcher, 'POST', '/dashboard/session', { json: { name, password } });
  const cookie = /^s3edge_session=([^;]*)/.exec(setCookies(answer)[0] ?? '')?.[1];
  const csrf = answer.json['csrfToken'];
  if (answer.status !== 200 || cookie === undefined || typeof csrf !== 'string') return { answer };
  return { answer, session: { cookie, csrf } };
}

/** Signs in or fails the file: the subtests that need a session, not the ones about signing in. */
async function mustSignIn(dispatcher: Dispatcher, name: string, password?: string): Promise<Session> {
  const { answer, session } = await signIn(server.url, dispatcher, name, password);
  if (!session) throw new Error(`sign-in of ${name}: ${answer.status} ${answer.text}`);
  return session;
}

/** A JSON error of the API's envelope. */
function isError(t: Test, a: Answer, status: number, code: string, what: string): void {
  t.equal(a.status, status, `${what}: ${status}`);
  t.match(a.json, { success: false, code, message: String }, `${what}: JSON ${code}`);
}

const api = (d: Dispatcher, method: Dispatcher.HttpMethod, path: string, o?: CallOptions): Promise<Answer> => call(server.url, d, method, path, o);

async function keyNames(d: Dispatcher, auth: CallOptions): Promise<string[]> {
  const a = await api(d, 'GET', '/api/v3/api-keys', auth);
  if (a.status !== 200) throw new Error(`GET /api/v3/api-keys: ${a.status} ${a.text}`);
  return (a.json['apiKeys'] as { name: string }[]).map((k) => k.name).sort();
}

function upload(d: Dispatcher, auth: CallOptions, name: string, bytes: string): Promise<Answer> {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type: 'text/plain' }), name);
  return api(d, 'POST', '/api/v3/cdn/assets', { ...auth, body: form });
}

// --------------------------------------------------------------------------------------------- setup

// Users: ana and bo sign in to the dashboard and have API keys; cy, dee, rl, rl2 are for one subtest
// each; nopw has no password; eve is the user of the expiry subtest's own server (data dir made here).
const dir = server.dataDir;
const expiryDataDir = join(tempDir(t), 'data');

async function userWithKey(name: string, scopes: string): Promise<{ id: string; token: string }> {
  const id = await createUser(dir, name);
  const key = await admin(dir, ['api-keys', 'create', '--user', name, '--name', `${name}-key`, '--scopes', scopes]);
  return { id, token: key['token'] as string };
}

const [anaUser, boUser] = await Promise.all([
  userWithKey('ana', 'assets:read,api-keys:manage'),
  userWithKey('bo', 'assets:read,assets:write,api-keys:manage'),
  createUser(dir, 'nopw', false),
  ...['cy', 'dee', 'rl', 'rl2'].map((n) => createUser(dir, n)),
  createUser(expiryDataDir, 'eve'),
]);
const anaId = anaUser.id;
const anaToken = anaUser.token;
const boToken = boUser.token;

// ana's and bo's sessions, opened by the first subtest and used by the ones after it.
let ana: Session | undefined;
let bo: Session | undefined;
function signedIn(s: Session | undefined, name: string): Session {
  if (!s) throw new Error(`${name} is not signed in (see the first subtest)`);
  return s;
}
const anaSession = (): Session => signedIn(ana, 'ana');
const boSession = (): Session => signedIn(bo, 'bo');

// ------------------------------------------------------------------------------------------ sign-in

t.test('sign-in: the right password opens a session in an HttpOnly SameSite=Strict cookie; wrong ones do not', async (t) => {
  const d = peer(t);
  const first = await signIn(server.url, d, 'ana');
  const a = first.answer;
  t.equal(a.status, 200, 'signed in', { body: a.text });
  t.match(a.json, { success: true, user: { id: anaId, name: 'ana' }, csrfToken: /^[A-Za-z0-9_-]{43}$/ });
  t.equal(a.headers['cache-control'], 'no-store', 'the CSRF token is not cached');
  const cookies = setCookies(a);
  t.equal(cookies.length, 1, 'one cookie');
  const attrs = (cookies[0] ?? '').split(';').map((s) => s.trim());
  t.match(attrs[0], /^s3edge_session=[A-Za-z0-9_-]{43}$/, 'the session token');
  const lower = attrs.slice(1).map((s) => s.toLowerCase());
  t.ok(lower.includes('httponly'), 'HttpOnly');
  t.ok(lower.includes('samesite=strict'), 'SameSite=Strict');
  t.ok(lower.includes('path=/'), 'Path=/');
  t.notOk(lower.includes('secure'), 'no Secure on plain http');
  t.ok(lower.includes('max-age=43200'), 'lives at most sessionMaxSeconds');
  t.notOk(a.text.includes(passwordOf('ana')), 'the password is not echoed');
  ana = first.session;
  const token = attrs[0]?.split('=')[1] ?? '';
  t.notOk(a.text.includes(token), 'the cookie token is not in the body');

  // Over the TLS listener the same sign-in sets a Secure cookie.
  const tls = new Agent({ connect: { ca: readFileSync(server.caFile ?? '') } });
  t.teardown(() => tls.close());
  const overTls = await signIn(server.tlsUrl ?? '', tls, 'ana');
  t.equal(overTls.answer.status, 200, 'signed in over TLS');
  t.ok(setCookies(overTls.answer)[0]?.split(';').map((s) => s.trim().toLowerCase()).includes('secure'), 'over TLS: Secure');

  const who = await api(d, 'GET', '/dashboard/session', { cookie: anaSession().cookie });
  t.equal(who.status, 200);
  t.match(who.json, { success: true, user: { id: anaId, name: 'ana' }, csrfToken: anaSession().csrf }, 'GET /dashboard/session: who is signed in, and the CSRF token again');

  const [boIn, wrong, unknown, noPassword] = await Promise.all([
    signIn(server.url, d, 'bo'),
    signIn(server.url, d, 'bo', 'not the passphrase of bo'),
    signIn(server.url, d, 'nobody-here', 'a passphrase of nobody'),
    signIn(server.url, d, 'nopw', 'any passphrase at all'),
  ]);
  bo = boIn.session;
  t.ok(bo, 'bo signs in too');
  t.not(boSession().cookie, anaSession().cookie);
  t.not(boSession().csrf, anaSession().csrf);
  for (const [what, r] of [['wrong password', wrong], ['unknown user', unknown], ['user without a password', noPassword]] as const) {
    isError(t, r.answer, 401, 'invalid_credentials', what);
    t.same(setCookies(r.answer), [], `${what}: no cookie`);
  }
  t.equal(unknown.answer.text, wrong.answer.text, 'an unknown user and a wrong password: the same body');
  t.equal(noPassword.answer.text, wrong.answer.text, 'a user without a password: the same body');

  isError(t, await api(d, 'GET', '/dashboard/session'), 401, 'unauthorized', 'GET /dashboard/session without a cookie');
  isError(t, await api(d, 'GET', '/dashboard/session', { cookie: 'A'.repeat(43) }), 401, 'unauthorized', 'with a made-up cookie');
});

t.test('sign-in: another origin and bad bodies are clear 4xx JSON errors, never a 500, and open no session', async (t) => {
  const d = peer(t);
  const right = { name: 'nopw', password: 'any passphrase at all' };
  // ana's right password: refused all the same (and not counted: the origin is checked first).
  const anas = { name: 'ana', password: passwordOf('ana') };
  const form = new FormData();
  form.append('name', 'nopw');
  form.append('password', 'any passphrase at all');
  const cases: [string, CallOptions, number, string][] = [
    ["another site's page (Origin)", { json: anas, origin: 'https://evil.example' }, 403, 'csrf_failed'],
    ['Origin null (a sandboxed frame)', { json: anas, origin: 'null' }, 403, 'csrf_failed'],
    ['no password', { json: { name: 'nopw' } }, 400, 'invalid_request'],
    ['no name', { json: { password: 'any passphrase at all' } }, 400, 'invalid_request'],
    ['an extra field', { json: { ...right, remember: true } }, 400, 'invalid_request'],
    ['a number for a name', { json: { name: 42, password: 'any passphrase at all' } }, 400, 'invalid_request'],
    ['an empty name', { json: { name: '', password: 'any passphrase at all' } }, 400, 'invalid_request'],
    ['a 257-character name', { json: { name: 'n'.repeat(257), password: 'any passphrase at all' } }, 400, 'invalid_request'],
    ['a 5000-character password', { json: { name: 'nopw', password: 'p'.repeat(5000) } }, 400, 'invalid_request'],
    ['a JSON array', { json: [right] }, 400, 'invalid_request'],
    ['malformed JSON', { body: '{"name":', contentType: 'application/json' }, 400, 'invalid_request'],
    ['an empty JSON body', { body: '', contentType: 'application/json' }, 400, 'invalid_request'],
    ['no body at all', {}, 400, 'invalid_request'],
    ['JSON sent as text/plain', { body: JSON.stringify(right), contentType: 'text/plain' }, 400, 'invalid_request'],
    ['a form post', { body: 'name=nopw&password=any+passphrase+at+all', contentType: 'application/x-www-form-urlencoded' }, 415, 'unsupported_media_type'],
    ['a multipart form', { body: form }, 415, 'unsupported_media_type'],
  ];
  for (const [what, o, status, code] of cases) {
    const a = await api(d, 'POST', '/dashboard/session', o);
    isError(t, a, status, code, what);
    t.same(setCookies(a), [], `${what}: no cookie`);
  }
  // Not one of those counted as a sign-in attempt of this address (they were refused before the limit).
  const after = await signIn(server.url, d, 'nopw', 'any passphrase at all');
  isError(t, after.answer, 401, 'invalid_credentials', 'a well-formed attempt is still judged on its password');
});

// ------------------------------------------------------------------------------ the cookie on /api/v3

t.test('the cookie authenticates /api/v3 as its user; state changes need the CSRF token and this origin', async (t) => {
  const d = peer(t);
  const s = anaSession();
  const cookie = { cookie: s.cookie };
  t.same(await keyNames(d, cookie), ['ana-key'], "GET /api/v3/api-keys: ana's keys, not bo's");
  const summary = await api(d, 'GET', '/api/v3/cdn/summary', cookie);
  t.equal(summary.status, 200, 'GET /api/v3/cdn/summary', { body: summary.text });
  t.match(summary.json, { success: true, data: { totalFiles: 0 } });

  const create = (o: CallOptions): Promise<Answer> => api(d, 'POST', '/api/v3/api-keys', { ...cookie, json: { name: 'made-in-dashboard', scopes: ['assets:read'] }, ...o });
  const refused: [string, CallOptions][] = [
    ['no X-CSRF-Token', {}],
    ['a made-up token', { csrf: randomBytes(32).toString('base64url') }],
    ["another session's token (bo's)", { csrf: boSession().csrf }],
    ['the cookie token as CSRF token', { csrf: s.cookie }],
    ['an empty token', { csrf: '' }],
    ['the right token from another origin', { csrf: s.csrf, origin: 'https://evil.example' }],
    ['the right token from another port of this host', { csrf: s.csrf, origin: server.url.replace(/:(\d+)$/, (_, p: string) => `:${Number(p) + 1}`) }],
    ['the right token with Origin null', { csrf: s.csrf, origin: 'null' }],
  ];
  for (const [what, o] of refused) isError(t, await create(o), 403, 'csrf_failed', `POST /api/v3/api-keys, ${what}`);
  t.same(await keyNames(d, cookie), ['ana-key'], 'no key was created by a refused request');

  const made = await create({ csrf: s.csrf });
  t.equal(made.status, 201, 'with the right token: created', { body: made.text });
  t.match(made.json, { success: true, apiKey: { name: 'made-in-dashboard', scopes: ['assets:read'], token: /^s3e_/ } });
  const sameOrigin = await create({ csrf: s.csrf, origin: server.url });
  t.equal(sameOrigin.status, 201, 'with the Origin of this very host');
  t.same(await keyNames(d, cookie), ['ana-key', 'made-in-dashboard', 'made-in-dashboard']);
  t.same(await keyNames(d, { bearer: anaToken }), ['ana-key', 'made-in-dashboard', 'made-in-dashboard'], "they are ana's, as her API key sees");

  for (const created of [made, sameOrigin]) {
    const id = (created.json['apiKey'] as { id: string }).id;
    isError(t, await api(d, 'DELETE', `/api/v3/api-keys/${id}`, cookie), 403, 'csrf_failed', 'DELETE without the token');
    isError(t, await api(d, 'DELETE', `/api/v3/api-keys/${id}`, { ...cookie, csrf: boSession().csrf }), 403, 'csrf_failed', "DELETE with bo's token");
    t.equal((await keyNames(d, cookie)).length, created === made ? 3 : 2, 'still there');
    const del = await api(d, 'DELETE', `/api/v3/api-keys/${id}`, { ...cookie, csrf: s.csrf });
    t.equal(del.status, 200, 'DELETE with the token', { body: del.text });
  }
  t.same(await keyNames(d, cookie), ['ana-key']);

  isError(t, await api(d, 'GET', '/api/v3/api-keys', { cookie: 'A'.repeat(43) }), 401, 'unauthorized', 'an unknown cookie');
  isError(t, await api(d, 'GET', '/api/v3/api-keys', { cookie: `${s.cookie}x` }), 401, 'unauthorized', 'a damaged cookie');
  isError(t, await api(d, 'POST', '/api/v3/api-keys', { json: { scopes: ['assets:read'] }, csrf: s.csrf }), 401, 'unauthorized', 'the CSRF token without the cookie');
});

t.test('a bearer API key works as before, and a request with both is judged by the bearer token', async (t) => {
  const d = peer(t);
  const s = anaSession();
  t.same(await keyNames(d, { bearer: anaToken }), ['ana-key'], "ana's key alone");
  t.same(await keyNames(d, { cookie: s.cookie, bearer: boToken }), ['bo-key'], "ana's cookie + bo's key: bo's keys");
  // A bearer request needs no CSRF token, and is bo's whatever cookie comes with it.
  const made = await api(d, 'POST', '/api/v3/api-keys', { cookie: s.cookie, bearer: boToken, json: { name: 'by-bearer', scopes: ['assets:read'] } });
  t.equal(made.status, 201, 'created without a CSRF token', { body: made.text });
  t.same(await keyNames(d, { bearer: boToken }), ['bo-key', 'by-bearer'], 'created for bo');
  t.same(await keyNames(d, { cookie: s.cookie }), ['ana-key'], 'not for ana');
  const id = (made.json['apiKey'] as { id: string }).id;
  t.equal((await api(d, 'DELETE', `/api/v3/api-keys/${id}`, { bearer: boToken })).status, 200);

  isError(t, await api(d, 'GET', '/api/v3/api-keys', { cookie: s.cookie, bearer: 's3e_not_a_real_token' }), 401, 'unauthorized', 'a bad bearer token is not rescued by the cookie');
  // ana's key lacks assets:write: the cookie (every scope) does not lend it one.
  isError(t, await upload(d, { cookie: s.cookie, csrf: s.csrf, bearer: anaToken }, 'x.txt', 'x'), 403, 'forbidden', "an upload with ana's read-only key and her cookie");
  t.same((await api(d, 'GET', '/api/v3/cdn/assets', { bearer: anaToken })).json['assets'], [], 'nothing was uploaded');
});

t.test("one user's session never sees another user's data", async (t) => {
  const d = peer(t);
  const s = anaSession();
  const cookie = { cookie: s.cookie };
  const bos = await upload(d, { bearer: boToken }, 'bo-private.txt', "bo's own bytes");
  t.equal(bos.status, 201, 'bo uploads with his API key', { body: bos.text });
  const boAsset = (bos.json['asset'] as { id: string }).id;
  const anas = await upload(d, { ...cookie, csrf: s.csrf }, 'ana.txt', "ana's bytes");
  t.equal(anas.status, 201, 'ana uploads with her cookie and CSRF token, as the dashboard does', { body: anas.text });
  const anaAsset = (anas.json['asset'] as { id: string }).id;

  const own = await api(d, 'GET', `/api/v3/cdn/assets/${anaAsset}/download`, cookie);
  t.equal(own.status, 200, "ana's own asset downloads with her cookie");
  t.equal(own.text, "ana's bytes");

  const theirs = `/api/v3/cdn/assets/${boAsset}`;
  isError(t, await api(d, 'GET', `${theirs}/download`, cookie), 404, 'not_found', "bo's asset: download");
  t.equal((await api(d, 'HEAD', `${theirs}/download`, cookie)).status, 404, "bo's asset: HEAD of the download");
  isError(t, await api(d, 'POST', `${theirs}/signed-url`, { ...cookie, csrf: s.csrf, json: {} }), 404, 'not_found', "bo's asset: signed URL");
  isError(t, await api(d, 'DELETE', theirs, { ...cookie, csrf: s.csrf }), 404, 'not_found', "bo's asset: delete");
  const list = await api(d, 'GET', '/api/v3/cdn/assets', cookie);
  t.same((list.json['assets'] as { id: string }[]).map((a) => a.id), [anaAsset], "ana's list: her asset only");
  const summary = await api(d, 'GET', '/api/v3/cdn/summary', cookie);
  t.match(summary.json, { data: { totalFiles: 1 } }, "ana's summary counts hers only");
  t.notOk(summary.text.includes(boAsset) || list.text.includes(boAsset), "bo's asset id appears nowhere");
  const boList = await api(d, 'GET', '/api/v3/cdn/assets', { bearer: boToken });
  t.same((boList.json['assets'] as { id: string }[]).map((a) => a.id), [boAsset], "bo's asset is still there");
  t.equal((await api(d, 'DELETE', `/api/v3/cdn/assets/${anaAsset}`, { ...cookie, csrf: s.csrf })).status, 200, 'ana deletes her own');
});

// ------------------------------------------------------------------------------------ how it ends

t.test('sign-out: needs the CSRF token; then the cookie is cleared and no longer works', async (t) => {
  const d = peer(t);
  const s = anaSession();
  isError(t, await api(d, 'DELETE', '/dashboard/session', { cookie: s.cookie }), 403, 'csrf_failed', 'without the token');
  isError(t, await api(d, 'DELETE', '/dashboard/session', { cookie: s.cookie, csrf: s.csrf, origin: 'https://evil.example' }), 403, 'csrf_failed', 'from another origin');
  t.equal((await api(d, 'GET', '/dashboard/session', { cookie: s.cookie })).status, 200, 'still signed in');

  const out = await api(d, 'DELETE', '/dashboard/session', { cookie: s.cookie, csrf: s.csrf });
  t.equal(out.status, 200, 'signed out', { body: out.text });
  t.match(out.json, { success: true });
  const cleared = setCookies(out);
  t.equal(cleared.length, 1);
  t.match(cleared[0], /^s3edge_session=;/, 'the cookie is emptied');
  t.match(cleared[0], /Expires=Thu, 01 Jan 1970 00:00:00 GMT|Max-Age=0/i, 'and expired');
  t.match(cleared[0], /Path=\//);
  isError(t, await api(d, 'GET', '/api/v3/api-keys', { cookie: s.cookie }), 401, 'unauthorized', 'the old cookie on /api/v3');
  isError(t, await api(d, 'GET', '/dashboard/session', { cookie: s.cookie }), 401, 'unauthorized', 'the old cookie on /dashboard/session');
  t.equal((await api(d, 'GET', '/dashboard/session', { cookie: boSession().cookie })).status, 200, "bo's session goes on");
  t.same(await keyNames(d, { bearer: anaToken }), ['ana-key'], "ana's API key goes on");
});

t.test('users passwd and users signout end every live session of the user, whose next request is 401', async (t) => {
  const forCy = peer(t);
  const forDee = peer(t);
  const [cy1, cy2, dee] = await Promise.all([mustSignIn(forCy, 'cy'), mustSignIn(forCy, 'cy'), mustSignIn(forDee, 'dee')]);
  for (const s of [cy1, cy2, dee]) t.equal((await api(forCy, 'GET', '/api/v3/api-keys', { cookie: s.cookie })).status, 200, 'signed in');

  const [passwd, signout, nobody] = await Promise.all([
    cli(dir, ['users', 'passwd', 'cy'], 'a new passphrase for cy\n'),
    admin(dir, ['users', 'signout', 'dee']),
    cli(dir, ['users', 'signout', 'nobody', '--json']),
  ]);
  t.equal(passwd.code, 0, 'users passwd cy', { stderr: passwd.stderr });
  t.match(passwd.stdout, /^sessionsEnded:\s+2$/m, 'users passwd: the human output says how many sessions ended');
  t.same(signout, { name: 'dee', sessionsEnded: 1 }, 'users signout --json: how many sessions ended');
  t.equal(nobody.code, 1, 'users signout of an unknown user: exit 1');
  t.same(JSON.parse(nobody.stdout), { error: { code: 'NoSuchUser', message: "no user named 'nobody'" } });
  t.match(nobody.stderr, /no user named 'nobody'/);

  for (const [what, s] of [['cy, old password', cy1], ['cy, old password, the other session', cy2], ['dee, signed out', dee]] as const) {
    isError(t, await api(forCy, 'GET', '/api/v3/api-keys', { cookie: s.cookie }), 401, 'unauthorized', `${what}: GET`);
    isError(t, await api(forCy, 'POST', '/api/v3/api-keys', { cookie: s.cookie, csrf: s.csrf, json: { scopes: ['assets:read'] } }), 401, 'unauthorized', `${what}: POST with its CSRF token`);
    isError(t, await api(forCy, 'GET', '/dashboard/session', { cookie: s.cookie }), 401, 'unauthorized', `${what}: GET /dashboard/session`);
  }
  t.equal((await api(forCy, 'GET', '/dashboard/session', { cookie: boSession().cookie })).status, 200, "another user's session goes on");

  const [cyAgain, deeAgain] = await Promise.all([mustSignIn(forCy, 'cy', 'a new passphrase for cy'), mustSignIn(forDee, 'dee')]);
  t.equal((await api(forCy, 'GET', '/dashboard/session', { cookie: cyAgain.cookie })).status, 200, 'the new password signs in');
  t.equal((await api(forDee, 'GET', '/dashboard/session', { cookie: deeAgain.cookie })).status, 200, 'users signout keeps the password');
});

// ------------------------------------------------------------------------------------- rate limits

t.test(`sign-in limits: ${PER_ACCOUNT} attempts per account name, ${PER_IP} per address, in the window; 429 with Retry-After`, async (t) => {
  const x = peer(t);
  const y = peer(t);
  const z = peer(t);
  const limited = (a: Answer, what: string, per: RegExp): void => {
    isError(t, a, 429, 'rate_limited', what);
    const retry = Number(a.headers['retry-after']);
    t.ok(Number.isInteger(retry) && retry > 0 && retry <= 900, `${what}: Retry-After in seconds within the window (${String(a.headers['retry-after'])})`);
    t.match(a.json['message'], per, `${what}: says which limit`);
    t.same(setCookies(a), [], `${what}: no cookie`);
  };
  isError(t, (await signIn(server.url, x, 'rl', 'wrong passphrase 1')).answer, 401, 'invalid_credentials', 'rl, attempt 1 (wrong)');
  isError(t, (await signIn(server.url, x, 'rl', 'wrong passphrase 2')).answer, 401, 'invalid_credentials', 'rl, attempt 2 (wrong)');
  t.equal((await signIn(server.url, x, 'rl')).answer.status, 200, 'rl, attempt 3 (right)');
  limited((await signIn(server.url, x, 'rl')).answer, 'rl, attempt 4, right password', /for this account/);
  // Attempt 5 of this address, with another name: allowed.
  t.equal((await signIn(server.url, x, 'rl2')).answer.status, 200, 'rl2 from the same address');
  limited((await signIn(server.url, x, 'rl2')).answer, `attempt ${PER_IP + 1} of the address`, /from this address/);
  t.equal((await signIn(server.url, y, 'rl2')).answer.status, 200, 'rl2 from another address');
  limited((await signIn(server.url, y, 'rl')).answer, 'rl from another address: the account limit follows the name', /for this account/);
  limited((await signIn(server.url, z, 'RL')).answer, 'the name in capitals is the same account', /for this account/);

  // Behind a trusted proxy the address is the client it forwards: two clients, two budgets.
  const proxy = new Agent({ localAddress: TRUSTED_PROXY });
  t.teardown(() => proxy.close());
  const via = (client: string, i: number): Promise<Answer> =>
    call(server.url, proxy, 'POST', '/dashboard/session', { json: { name: `nobody-${i}`, password: 'not a password at all' }, forwardedFor: client });
  for (let i = 1; i <= PER_IP; i++) isError(t, await via('198.51.100.1', i), 401, 'invalid_credentials', `client 198.51.100.1 through the proxy, attempt ${i}`);
  limited(await via('198.51.100.1', PER_IP + 1), `client 198.51.100.1, attempt ${PER_IP + 1}`, /from this address/);
  isError(t, await via('198.51.100.2', 1), 401, 'invalid_credentials', 'client 198.51.100.2 through the same proxy: its own budget');
});

// ------------------------------------------------------------------------------ expiry (injected clock)

/** A server in this process on eve's data dir, with `flags` and the clock `now`; stopped by `stop` or at the end of `t`. */
async function inProcess(t: Test, now: () => number, flags: Record<string, string>): Promise<{ url: string; stop: () => Promise<void> }> {
  const ctx = await createContext(inProcessServerConfig(expiryDataDir, flags), { clock: () => new Date(now()) });
  const running = await listen(ctx);
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await running.close();
    await ctx.close();
  };
  t.teardown(stop);
  return { url: running.url, stop };
}

t.test('expiry (idle and absolute) and the dashboard turned off, on servers in this process with an injected clock', async (t) => {
  let now = Date.parse('2026-11-25T12:00:00Z');
  const running = await inProcess(t, () => now, { 'dashboard.sessionIdleSeconds': '60', 'dashboard.sessionMaxSeconds': '120' });
  const d = peer(t);
  const get = (s: Session): Promise<Answer> => call(running.url, d, 'GET', '/api/v3/api-keys', { cookie: s.cookie });
  const open = async (): Promise<Session> => {
    const { answer, session } = await signIn(running.url, d, 'eve');
    if (!session) throw new Error(`sign-in: ${answer.status} ${answer.text}`);
    return session;
  };

  const busy = await open();
  now += 59_000;
  t.equal((await get(busy)).status, 200, '59 s after sign-in (idle 60 s)');
  now += 59_000;
  t.equal((await get(busy)).status, 200, '118 s after sign-in, 59 s after its last use');
  now += 2_000;
  isError(t, await get(busy), 401, 'unauthorized', '120 s after sign-in (max 120 s), though used 2 s ago');

  const idle = await open();
  now += 59_000;
  t.equal((await call(running.url, d, 'GET', '/dashboard/session', { cookie: idle.cookie })).status, 200, 'in use 59 s after sign-in');
  now += 60_000;
  isError(t, await get(idle), 401, 'unauthorized', '60 s unused');
  isError(t, await call(running.url, d, 'GET', '/dashboard/session', { cookie: idle.cookie }), 401, 'unauthorized', 'GET /dashboard/session too');
  isError(t, await call(running.url, d, 'DELETE', '/api/v3/api-keys/any', { cookie: idle.cookie, csrf: idle.csrf }), 401, 'unauthorized', 'its CSRF token opens nothing');

  // The same data dir with the dashboard turned off: a session opened before it is worth nothing.
  const kept = await open();
  t.equal((await get(kept)).status, 200, 'a live session');
  await running.stop();
  const off = await inProcess(t, () => now, { 'dashboard.enabled': 'false' });
  isError(t, await call(off.url, d, 'GET', '/api/v3/api-keys', { cookie: kept.cookie }), 401, 'unauthorized', 'dashboard off: the cookie on /api/v3');
  isError(t, await call(off.url, d, 'POST', '/api/v3/api-keys', { cookie: kept.cookie, csrf: kept.csrf, json: { scopes: ['assets:read'] } }), 401, 'unauthorized', 'dashboard off: with its CSRF token');
  isError(t, await call(off.url, d, 'POST', '/dashboard/session', { json: { name: 'eve', password: passwordOf('eve') } }), 404, 'not_found', 'dashboard off: no sign-in');
  isError(t, await call(off.url, d, 'GET', '/dashboard/'), 404, 'not_found', 'dashboard off: no dashboard files');
});

// ----------------------------------------------------------------------------- the dashboard's files

t.test('the dashboard files: security headers, caching of hashed files and index.html, /dashboard redirects', async (t) => {
  const d = peer(t);
  const redirect = await api(d, 'GET', '/dashboard');
  t.equal(redirect.status, 302, 'GET /dashboard redirects');
  t.equal(redirect.headers['location'], '/dashboard/', 'to /dashboard/');

  const index = await api(d, 'GET', '/dashboard/');
  t.equal(index.status, 200, 'GET /dashboard/');
  t.match(index.headers['content-type'], /^text\/html/, 'is the HTML page');
  t.equal(index.headers['cache-control'], 'no-cache', 'index.html is revalidated');
  const csp = String(index.headers['content-security-policy']);
  t.equal(csp, DASHBOARD_CSP, 'the CSP of src/web/static.ts');
  for (const directive of ["default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) t.ok(csp.split('; ').includes(directive), directive);
  t.notMatch(csp, /unsafe-inline|unsafe-eval|\*/, 'no inline script or style, no wildcard');

  const hashed = readdirSync(join(WEB_ROOT, 'assets')).filter((f) => /-[A-Z0-9]{8}\.(js|css)$/.test(f));
  t.ok(hashed.length > 0, 'the build made content-hashed files');
  const answers: [string, Answer][] = [['/dashboard/', index]];
  for (const file of hashed) {
    const a = await api(d, 'GET', `/dashboard/assets/${file}`);
    t.equal(a.status, 200, file);
    t.equal(a.headers['cache-control'], 'public, max-age=31536000, immutable', `${file}: cached for a year`);
    answers.push([file, a]);
  }
  // Sent compressed to a browser that accepts it, and whole to one that does not.
  const script = hashed.find((f) => f.startsWith('app-')) ?? '';
  const plain = readFileSync(join(WEB_ROOT, 'assets', script));
  for (const [accept, encoding, decode] of [['br, gzip', 'br', brotliDecompressSync], ['gzip', 'gzip', gunzipSync]] as const) {
    const res = await request(`${server.url}/dashboard/assets/${script}`, { headers: { 'accept-encoding': accept }, dispatcher: d });
    const body = Buffer.from(await res.body.arrayBuffer());
    t.equal(res.headers['content-encoding'], encoding, `${script} for "${accept}": ${encoding}`);
    t.match(res.headers['vary'], /accept-encoding/i, 'varies with Accept-Encoding');
    t.match(res.headers['content-type'], /javascript/, 'still JavaScript');
    t.ok(body.length < plain.length, `smaller on the wire (${body.length} of ${plain.length} bytes)`);
    t.ok(decode(body).equals(plain), 'the same file once decoded');
  }
  const identity = await request(`${server.url}/dashboard/assets/${script}`, { headers: { 'accept-encoding': 'identity' }, dispatcher: d });
  t.equal(identity.headers['content-encoding'], undefined, 'no encoding asked: none used');
  t.ok(Buffer.from(await identity.body.arrayBuffer()).equals(plain), 'the file as built');
  const missing = await api(d, 'GET', '/dashboard/assets/no-such-file-0123ABCD.js');
  t.equal(missing.status, 404, 'a missing file is a 404');
  answers.push(['a missing file', missing]);
  for (const [what, a] of answers) {
    t.equal(a.headers['content-security-policy'], DASHBOARD_CSP, `${what}: CSP`);
    t.equal(a.headers['x-frame-options'], 'DENY', `${what}: no framing`);
    t.equal(a.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`);
    t.equal(a.headers['referrer-policy'], 'no-referrer', `${what}: no referrer`);
  }
  const outside = await api(d, 'GET', '/dashboard/..%2f..%2fpackage.json');
  t.ok(outside.status >= 400 && outside.status < 500, `no file outside dist/web (${outside.status})`);
  t.notMatch(outside.text, /"name": "s3edge"/);
});

t.test('a path-style S3 request for the bucket "dashboard" is refused as a reserved name', async (t) => {
  const s3 = new RawS3({ url: server.url }, server.rootKey);
  const made = await s3.createBucket('dashboard');
  t.equal(made.status, 400, 'CreateBucket: 400', { body: made.text });
  t.equal(parseS3Error(made.text).code, 'InvalidBucketName', 'CreateBucket: InvalidBucketName');
  t.match(made.headers['content-type'], /xml/, 'an S3 error, in XML');
  const put = await s3.putObject('dashboard', 'index.html', Buffer.from('<p>x</p>'));
  t.equal(put.status, 404, 'PutObject: 404', { body: put.text });
  t.equal(parseS3Error(put.text).code, 'NoSuchBucket', 'PutObject: no such bucket');
  const list = await s3.send({ method: 'GET', path: '/' });
  t.equal(list.status, 200, 'ListBuckets');
  t.notMatch(list.text, /<Name>dashboard<\/Name>/, 'no bucket was made');
  // The same path without S3 credentials is the dashboard's.
  t.equal((await api(peer(t), 'GET', '/dashboard')).status, 302, 'GET /dashboard without S3 credentials: the redirect');
});
