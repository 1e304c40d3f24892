// Two gateway processes on one data directory (issue 21: `--workers N`, nodes on one database) take
// uploads of one user at once: reservations live in the database, so exactly the affordable uploads
// succeed, whichever process took them, and the ledger adds up.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { request, type IncomingMessage } from 'node:http';
import { ApiClientError, type Asset } from '../../src/client/index.js';
import { apiClient, apiUser, eventually, query } from '../helpers/api.js';
import { startServer } from '../helpers/server.js';

const env = { S3EDGE_CREDITS_ENABLED: 'true', S3EDGE_CREDITS_FREE_MONTHLY_CREDITS: '0' };

const first = await startServer({ env });
t.teardown(() => first.stop());
const second = await startServer({ env, dataDir: first.dataDir });
t.teardown(() => second.stop());

function userIdOf(name: string): string {
  return query<{ id: string }>(first, 'SELECT id FROM users WHERE name = ?', name)[0]?.id ?? '';
}

t.test('an upload in progress in one process holds its credits against the other', async (t) => {
  const user = await apiUser(first, ['assets:read', 'assets:write']);
  const userId = userIdOf(user.name);
  await first.admin(['credits', 'grant', '--user', user.name, '--amount', '3']);

  // A chunked upload (no declared length) through the first process reserves all 3 credits and
  // stays open; its body is finished later.
  const boundary = `b${randomBytes(8).toString('hex')}`;
  const req = request(`${first.url}/api/v3/cdn/assets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${user.token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
  });
  const answered = once(req, 'response') as Promise<[IncomingMessage]>;
  req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  req.write(randomBytes(1000));
  const held = (): { milli: number }[] => query(first, 'SELECT milli FROM credit_reservations WHERE user_id = ?', userId);
  await eventually(() => held().length === 1, 'the open upload\'s reservation');
  t.same(held(), [{ milli: 3000 }], 'it holds everything available');

  const other = apiClient(second, user.token);
  const err = await other.upload({ file: randomBytes(1000), fileName: 'other.bin' }).catch((e: unknown) => e);
  t.ok(err instanceof ApiClientError && err.status === 402, 'the second process finds nothing available');

  req.end(`${randomBytes(1000).toString('hex')}\r\n--${boundary}--\r\n`);
  const [res] = await answered;
  res.resume();
  t.equal(res.statusCode, 201, 'the open upload completes');
  t.same(held(), [], 'its reservation is gone');
  t.ok(await other.upload({ file: randomBytes(1000), fileName: 'other.bin' }), 'now the second process can upload');
  const [account] = query<{ balance_milli: number }>(first, 'SELECT balance_milli FROM credit_accounts WHERE user_id = ?', userId);
  t.equal(account?.balance_milli, 1000, '3 - 1 (3000 bytes) - 1 (1000 bytes)');
});

t.test('two processes, one balance: only the affordable uploads succeed', async (t) => {
  const user = await apiUser(first, ['assets:read', 'assets:write']);
  const userId = userIdOf(user.name);
  // One charging unit (1 MiB, 1 credit) per upload of 1000 bytes: 10 are affordable.
  const grant = await first.admin(['credits', 'grant', '--user', user.name, '--amount', '10']);
  t.equal(grant['balance'], 10);

  const clients = [user.client, apiClient(second, user.token)];
  const results = await Promise.allSettled(
    Array.from({ length: 24 }, (_, i) => clients[i % 2]!.upload({ file: randomBytes(1000), fileName: `race-${i}.bin` })),
  );
  const ok = results.filter((r): r is PromiseFulfilledResult<Asset> => r.status === 'fulfilled');
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  t.equal(ok.length, 10, 'exactly 10 uploads succeed');
  t.equal(refused.length, 14, 'the other 14 are refused');
  for (const r of refused) {
    const err = r.reason as unknown;
    if (!(err instanceof ApiClientError)) throw err;
    t.equal(err.status, 402);
    t.match(err.body, { success: false, code: 'insufficient_credits', requiredCredits: 1 });
  }
  const ledger = query<{ event_type: string; credits_milli: number; balance_after_milli: number; asset_id: string }>(first,
    'SELECT event_type, credits_milli, balance_after_milli, asset_id FROM credit_ledger WHERE user_id = ? ORDER BY seq', userId);
  const charges = ledger.filter((e) => e.event_type === 'upload');
  t.same(charges.map((c) => c.asset_id).sort(), ok.map((r) => r.value.id).sort(), 'one charge per stored asset');
  t.ok(ledger.every((e) => e.balance_after_milli >= 0), 'the balance never went negative');
  const charged = charges.reduce((sum, c) => sum + c.credits_milli, 0);
  const [account] = query<{ balance_milli: number; used_milli: number }>(first, 'SELECT balance_milli, used_milli FROM credit_accounts WHERE user_id = ?', userId);
  t.same(account, { balance_milli: 10_000 - charged, used_milli: charged }, 'balance = grant - charges');
  t.equal(charged, 10_000);
  t.equal(query<{ n: number }>(first, 'SELECT count(*) AS n FROM assets WHERE user_id = ?', userId)[0]?.n, 10, '10 asset rows');
  t.equal(query<{ n: number }>(first, 'SELECT count(*) AS n FROM credit_reservations WHERE user_id = ?', userId)[0]?.n, 0, 'every reservation released');

  // The second process sees the first's charges too: nothing is left for either.
  for (const client of clients) {
    const err = await client.upload({ file: Buffer.from('one more'), fileName: 'more.txt' }).catch((e: unknown) => e);
    t.ok(err instanceof ApiClientError && err.status === 402, 'refused with a zero balance');
  }
});

t.test('neither server logged an error', async (t) => {
  for (const s of [first, second]) t.same(s.output().split('\n').filter((l) => /"level":(50|60)/.test(l)), []);
});
