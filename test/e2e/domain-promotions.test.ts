// Promotions against an injected clock: the server runs in this process (createContext with a clock we
// move, listening on a real loopback socket); the promotions are made by the admin CLI in another
// process, on the same data directory. A promotion shows through its ending date (UTC) and is gone the
// day after, the best of several is shown, one ended from the CLI is gone at once, and a search shows
// the TLD's promotion on an available name.
import t from 'tap';
import { join } from 'node:path';
import { createContext } from '../../src/context.js';
import { startServer as listen } from '../../src/server.js';
import { S3EdgeClient, type Tld } from '../../src/client/index.js';
import { startRdapFixture } from '../helpers/rdap-fixture.js';
import { runCli } from '../helpers/server.js';
import { inProcessServerConfig, tempDir } from '../helpers/temp-data.js';

const fixture = await startRdapFixture();
t.teardown(() => fixture.close());
const dir = tempDir(t);
const bootstrap = fixture.writeBootstrap(join(dir, 'bootstrap.json'), ['com', 'cv']);
const dataDir = join(dir, 'data');
const config = inProcessServerConfig(dataDir, {
  'domains.rdap.bootstrapFile': bootstrap,
  'domains.rdap.allowPrivateAddresses': 'true',
});
let now = Date.parse('2026-12-30T12:00:00Z');
const ctx = await createContext(config, { clock: () => new Date(now) });
const server = await listen(ctx);
t.teardown(async () => {
  await server.close();
  await ctx.close();
});

async function cli(...args: string[]): Promise<unknown> {
  const r = await runCli(dataDir, args, { ...process.env, S3EDGE_LOG_LEVEL: 'silent' });
  if (r.code !== 0) throw new Error(`s3edge ${args.join(' ')}: ${r.stderr}`);
  return r.json;
}

await cli('users', 'create', 'promo');
const key = (await cli('api-keys', 'create', '--user', 'promo', '--scopes', 'domains:read')) as { token: string };
const client = new S3EdgeClient({ baseUrl: server.url, apiKey: key.token });

async function cv(): Promise<Tld> {
  return (await client.tlds()).find((x) => x.tld === '.cv') as Tld;
}

t.test('active through its ending date, gone the day after', async (t) => {
  await cli('promotions', 'create', 'cv', '--bonus-ngn', '5000', '--bonus-usd', '3.50', '--ends', '2026-12-31');
  t.match(await cv(), { bonusAmount: 5000, bonusAmountUSD: 3.5, bonusEndingDate: '2026-12-31' }, 'the day before its end');
  now = Date.parse('2026-12-31T23:59:59Z');
  t.match(await cv(), { bonusAmount: 5000, bonusEndingDate: '2026-12-31' }, 'the last second of its last day (UTC)');
  now = Date.parse('2027-01-01T00:00:00Z');
  t.match(await cv(), { bonusAmount: null, bonusAmountUSD: null, bonusEndingDate: null }, 'the day after: null');
  t.match(await client.searchTlds('cv'), [{ tld: '.cv', bonusAmount: null }], 'on every endpoint');
});

t.test('the best of several is shown; one ended from the CLI is gone at once', async (t) => {
  now = Date.parse('2027-02-01T08:00:00Z');
  await cli('promotions', 'create', 'cv', '--bonus-usd', '2.00', '--ends', '2027-03-31');
  const big = (await cli('promotions', 'create', 'cv', '--bonus-ngn', '9000', '--ends', '2027-02-28')) as { id: number };
  t.match(await cv(), { bonusAmount: 9000, bonusAmountUSD: null, bonusEndingDate: '2027-02-28' }, 'N9000 is worth more than $2 at N1550');
  await cli('promotions', 'end', String(big.id));
  t.match(await cv(), { bonusAmount: null, bonusAmountUSD: 2, bonusEndingDate: '2027-03-31' }, 'ended: the next best shows');
  // The CLI judges by its own (real) clock: only the ended one is certain here.
  t.match(await cli('promotions', 'list', '--tld', 'cv'), [{ endsOn: '2026-12-31' }, { endsOn: '2027-03-31' }, { id: big.id, state: 'ended' }]);
});

t.test('a search shows the TLD promotion on an available name only', async (t) => {
  now = Date.parse('2027-02-01T08:00:00Z');
  await cli('promotions', 'create', 'com', '--bonus-usd', '1.00', '--ends', '2027-02-01');
  fixture.set('promo.com', { kind: 'available' });
  fixture.set('gone.com', { kind: 'registered' });
  t.match((await client.searchDomains('promo.com')).results[0], { available: true, bonusAmountUSD: 1, bonusEndingDate: '2027-02-01' });
  t.match((await client.searchDomains('gone.com')).results[0], { available: false, bonusAmountUSD: null }, 'none on a registered name');
  now = Date.parse('2027-02-02T00:00:00Z');
  t.match((await client.searchDomains('promo.com')).results[0], { available: true, bonusAmountUSD: null }, 'the day after: gone');
});
