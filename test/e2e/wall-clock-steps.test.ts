// The wall clock stepped an hour forward and back (NTP, a VM resumed, `date -s`), under a server running
// in this process (createContext with a wall clock the test steps, listening on loopback) while the
// monotonic clock runs on: what means a date follows the wall clock at once.
//  - a presigned URL valid 15 minutes: expired an hour on, "not valid yet" an hour back, valid when the
//    clock is right again (the presigned memo does not keep an answer past its window);
//  - a header-signed request dated by a client's right clock: RequestTimeTooSkewed either way, and one
//    signed at the server's time accepted;
//  - a promotion ending today (UTC): gone an hour after midnight, shown again an hour back;
//  - Last-Modified of a write: the time of the stepped clock.
// What measures time elapsed steps elsewhere: the edge limiter, anomaly buckets (edge-reports), API
// rate-limit windows (cluster-shared-state, rate-limit-counters), the proxy's response cache
// (edge-response-cache), the RDAP cache (rdap-provider).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createContext } from '../../src/context.js';
import { startServer as listen } from '../../src/server.js';
import { S3EdgeClient, type Tld } from '../../src/client/index.js';
import { startRdapFixture } from '../helpers/rdap-fixture.js';
import { rawRequest } from '../helpers/raw-http.js';
import { RawS3 } from '../helpers/s3-client.js';
import { runCli } from '../helpers/server.js';
import { inProcessServerConfig, tempDir } from '../helpers/temp-data.js';
import { parseS3Error } from '../helpers/xml.js';

const HOUR = 3_600_000;
const fixture = await startRdapFixture();
t.teardown(() => fixture.close());
const dir = tempDir(t);
const dataDir = join(dir, 'data');
const rootKey = { accessKeyId: `STEPS${randomBytes(4).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(30).toString('base64url') };
const config = inProcessServerConfig(dataDir, {
  rootAccessKey: rootKey.accessKeyId,
  rootSecretKey: rootKey.secretAccessKey,
  'domains.rdap.bootstrapFile': fixture.writeBootstrap(join(dir, 'bootstrap.json'), ['com', 'cv']),
  'domains.rdap.allowPrivateAddresses': 'true',
});
// Half an hour before midnight UTC on the last day of a promotion; the clock runs from there.
const base = Date.parse('2026-12-31T23:30:00Z');
const started = performance.now();
let step = 0;
const wall = (): number => base + (performance.now() - started) + step;
const ctx = await createContext(config, { clock: () => new Date(wall()) });
const server = await listen(ctx);
t.teardown(async () => {
  await server.close();
  await ctx.close();
});

const s3 = new RawS3({ url: server.url }, rootKey);
/** A request signed now by the server's clock (a client whose clock follows the same source). */
const atServerTime = (): Date => new Date(wall());
const made = await s3.send({ method: 'PUT', bucket: 'steps', signingDate: atServerTime() });
if (made.status !== 200) throw new Error(`create bucket: ${made.status} ${made.text}`);
const put = await s3.send({ method: 'PUT', bucket: 'steps', key: 'a.txt', body: Buffer.from('hello'), signingDate: atServerTime() });
if (put.status !== 200) throw new Error(`put: ${put.status} ${put.text}`);

async function cli(...args: string[]): Promise<unknown> {
  const r = await runCli(dataDir, args, { ...process.env, S3EDGE_LOG_LEVEL: 'silent' });
  if (r.code !== 0) throw new Error(`s3edge ${args.join(' ')}: ${r.stderr}`);
  return r.json;
}

t.test('a presigned URL valid 15 minutes: expired an hour on, not valid yet an hour back, valid again', async (t) => {
  t.teardown(() => void (step = 0));
  const { target } = await s3.presignedTarget({ method: 'GET', bucket: 'steps', key: 'a.txt', expiresIn: 900, signingDate: atServerTime() });
  const get = async (): Promise<{ status: number; message: string | undefined; body: string }> => {
    const res = await rawRequest({ url: server.url }, { method: 'GET', target, headers: [['Host', s3.host]] });
    return { status: res.status, message: parseS3Error(res.text).message, body: res.text };
  };
  t.match(await get(), { status: 200, body: 'hello' }, 'valid (and now in the presigned memo)');
  step = HOUR;
  t.match(await get(), { status: 403, message: 'Request has expired' }, 'an hour on: expired, though the memo verified it a moment ago');
  step = -HOUR;
  t.match(await get(), { status: 403, message: 'Request is not valid yet' }, 'an hour back: not valid yet');
  step = 0;
  t.match(await get(), { status: 200, body: 'hello' }, 'the clock right again: valid');
});

t.test('header-signed requests: the allowed skew is measured against the stepped wall clock', async (t) => {
  t.teardown(() => void (step = 0));
  const signedAt = atServerTime();
  for (const by of [HOUR, -HOUR]) {
    step = by;
    const skewed = await s3.send({ method: 'GET', bucket: 'steps', key: 'a.txt', signingDate: signedAt });
    t.equal(skewed.status, 403, `stepped ${by / HOUR} h: a request dated by the client's clock is refused`);
    t.equal(parseS3Error(skewed.text).code, 'RequestTimeTooSkewed');
    const now = await s3.send({ method: 'GET', bucket: 'steps', key: 'a.txt', signingDate: atServerTime() });
    t.equal(now.status, 200, 'one signed at the server\'s time is accepted');
  }
});

t.test('a write\'s Last-Modified is the stepped clock\'s time', async (t) => {
  t.teardown(() => void (step = 0));
  step = HOUR;
  const at = wall();
  t.equal((await s3.send({ method: 'PUT', bucket: 'steps', key: 'later.txt', body: Buffer.from('x'), signingDate: atServerTime() })).status, 200);
  const head = await s3.send({ method: 'HEAD', bucket: 'steps', key: 'later.txt', signingDate: atServerTime() });
  const lastModified = Date.parse(head.headers['last-modified'] ?? '');
  t.ok(Math.abs(lastModified - at) < 5_000, `Last-Modified ${head.headers['last-modified']} is an hour on, with the clock`);
});

t.test('a promotion ending today: gone an hour after midnight, shown again an hour back', async (t) => {
  t.teardown(() => void (step = 0));
  await cli('users', 'create', 'steps');
  const key = (await cli('api-keys', 'create', '--user', 'steps', '--scopes', 'domains:read')) as { token: string };
  const client = new S3EdgeClient({ baseUrl: server.url, apiKey: key.token });
  const cv = async (): Promise<Tld> => (await client.tlds()).find((x) => x.tld === '.cv') as Tld;
  await cli('promotions', 'create', 'cv', '--bonus-usd', '3.50', '--ends', '2026-12-31');
  t.match(await cv(), { bonusAmountUSD: 3.5, bonusEndingDate: '2026-12-31' }, 'half an hour before midnight: shown');
  step = HOUR;
  t.match(await cv(), { bonusAmountUSD: null, bonusEndingDate: null }, 'stepped an hour on, past midnight: gone');
  step = 0;
  t.match(await cv(), { bonusAmountUSD: 3.5, bonusEndingDate: '2026-12-31' }, 'stepped back: shown again');
});
