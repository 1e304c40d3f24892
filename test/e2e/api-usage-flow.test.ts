// Uploads, downloads and deletes through the API feed the summary, the usage feed, the credit ledger
// and the proxy logs: the numbers the test reads are exactly the traffic it made.
import t from 'tap';
import { ApiClientError } from '../../src/client/index.js';
import { apiUser, eventually, PROVIDER_NAMES, query, ResponseRecorder } from '../helpers/api.js';
import { startServer } from '../helpers/server.js';

const MIB = 1024 * 1024;

t.test('usage flow', async (t) => {
  const server = await startServer({
    env: {
      S3EDGE_CREDITS_ENABLED: 'true',
      S3EDGE_CREDITS_FREE_MONTHLY_CREDITS: '100',
      S3EDGE_CREDITS_UPLOAD_CREDITS_PER_UNIT: '2',
      S3EDGE_CREDITS_STORAGE_CREDITS_PER_GB_DAY: '1000',
    },
  });
  t.teardown(() => server.stop());
  const recorder = new ResponseRecorder();
  const { client, name } = await apiUser(server, ['assets:read', 'assets:write', 'usage:read'], { recorder, name: 'flow' });

  // Nine uploads: 1 byte .. 9 bytes, and one of 1 MiB + 1 (two charging units).
  const small = [];
  for (let i = 1; i <= 9; i++) small.push(await client.upload({ file: Buffer.alloc(i, 97), fileName: `f${i}.txt`, contentType: 'text/plain' }));
  const big = await client.upload({ file: Buffer.alloc(MIB + 1, 1), fileName: 'big.bin' });
  const storedBytes = 45 + MIB + 1;

  await client.download(big.id);
  const partial = await client.download(big.id, { range: 'bytes=0-99' });
  t.equal(partial.status, 206);
  t.equal(partial.body.length, 100);
  const deleted = small[0];
  if (!deleted) throw new Error('no upload');
  await client.deleteAsset(deleted.id);
  const downloadEvents = (): unknown[] => query(server, "SELECT 1 FROM usage_events WHERE event_type = 'download'");
  await eventually(() => downloadEvents().length === 2, 'both download events');

  t.test('summary', async (t) => {
    const s = await client.summary();
    t.equal(s.totalFiles, 9);
    t.equal(s.storageBytes, storedBytes - 1);
    t.equal(s.uploadedBytes, storedBytes, 'upload events, including the deleted asset');
    t.equal(s.downloadedBytes, MIB + 1 + 100);
    t.equal(s.uploadsLast24h, 9);
    t.equal(s.recentAssets.length, 8, 'at most 8');
    t.equal(s.recentAssets[0]?.id, big.id, 'newest first');
    t.same(Object.keys(s.recentAssets[0] ?? {}).sort(), Object.keys(big).sort(), 'full Asset shape');
    t.match(s.analytics, { available: false, requests: 2, bytes: MIB + 1 + 100, cachedBytes: 0 });
    t.same(s.analytics.statusCodes, { '200': 1, '206': 1 });
    t.equal(s.analytics.series.reduce((n, p) => n + p.requests, 0), 2);
    // 100 free - 9 one-unit charges of 2 - one two-unit charge of 4.
    t.equal(s.credits.balance, 100 - 18 - 4);
    t.equal(s.credits.usedCredits, 22);
    t.equal(s.credits.projectedDailyStorageCredits, Math.round(((storedBytes - 1) / 1e9) * 1000 * 1000) / 1000);
  });

  t.test('usage feed and ledger', async (t) => {
    const u = await client.usage(500);
    // Newest first by event time; the last three requests may share a millisecond, so they are found by kind.
    t.same(u.events.slice(0, 3).map((e) => e.eventType).sort(), ['delete', 'download', 'download']);
    t.same(u.events.slice(3).map((e) => e.eventType), Array(10).fill('upload'));
    const times = u.events.map((e) => Date.parse(e.createdAt));
    t.ok(times.every((time, i) => i === 0 || time <= (times[i - 1] ?? time)), 'newest first');
    const del = u.events.find((e) => e.eventType === 'delete');
    const range = u.events.find((e) => e.eventType === 'download' && e.statusCode === 206);
    const full = u.events.find((e) => e.eventType === 'download' && e.statusCode === 200);
    t.match(del, { assetId: deleted.id, bytes: 1, source: 'api', statusCode: 200, metadata: { key: deleted.key } });
    t.match(range, { assetId: big.id, bytes: 100, statusCode: 206, source: 'api', hostname: '127.0.0.1' });
    t.match(full, { assetId: big.id, bytes: MIB + 1, statusCode: 200, country: '' });
    const upload = u.events.find((e) => e.assetId === big.id && e.eventType === 'upload');
    t.match(upload, { bytes: MIB + 1, statusCode: 201, userId: big.userId, metadata: { key: big.key } });
    t.same(Object.keys(upload ?? {}).sort(), ['assetId', 'bytes', 'country', 'createdAt', 'eventType', 'hostname', 'id', 'metadata', 'source', 'statusCode', 'userId']);
    const charges = u.creditLedger.filter((e) => e.eventType === 'upload');
    t.equal(charges.length, 10);
    t.match(charges[0], { assetId: big.id, bytes: MIB + 1, credits: 4, rate: 2, balanceAfter: 78, metadata: { key: big.key } });
    t.match(u.creditLedger[u.creditLedger.length - 1], { eventType: 'free_monthly_grant', credits: -100, balanceAfter: 100 });
    const limited = await client.usage(2);
    t.equal(limited.events.length, 2);
    t.equal(limited.creditLedger.length, 2);
  });

  t.test('proxy logs count the downloads', async (t) => {
    const p = await client.proxyLogs();
    t.match(p, { requests: { total: 2, allowed: 2, blocked: 0 }, geo: [{ country: 'Unknown', requests: 2, share: 1 }] });
    t.match(p['topSources'], [{ ip: '127.0.0.1', requests: 2, bytes: MIB + 1 + 100 }]);
  });

  t.test('an upload the balance cannot pay for is refused with 402 and stores nothing', async (t) => {
    const before = await client.summary();
    let refused: ApiClientError | undefined;
    try {
      await client.upload({ file: Buffer.alloc(40 * MIB, 2), fileName: 'huge.bin' });
    } catch (err) {
      if (err instanceof ApiClientError) refused = err;
      else throw err;
    }
    t.equal(refused?.status, 402);
    t.match(refused?.body, { success: false, code: 'insufficient_credits', requiredCredits: Number, balance: 78 });
    t.ok((refused?.body.requiredCredits ?? 0) > 78, 'requiredCredits is more than the balance');
    const after = await client.summary();
    t.equal(after.totalFiles, before.totalFiles);
    t.equal(after.credits.balance, 78);
  });

  t.test('a suspended space refuses uploads with 403', async (t) => {
    await server.admin(['spaces', 'suspend', '--user', name]);
    let refused: ApiClientError | undefined;
    try {
      await client.upload({ file: Buffer.from('x'), fileName: 'x.txt' });
    } catch (err) {
      if (err instanceof ApiClientError) refused = err;
      else throw err;
    }
    t.equal(refused?.status, 403);
    t.match(refused?.body, { success: false, code: 'space_suspended' });
    t.equal((await client.download(big.id)).status, 200, 'the owner can still take data out');
    await server.admin(['spaces', 'resume', '--user', name]);
    t.equal((await client.upload({ file: Buffer.from('x'), fileName: 'x.txt' })).size, 1);
  });

  t.test('no response carries an internal name', async (t) => {
    recorder.assertNoLeaks(t, [...PROVIDER_NAMES, server.dataDir]);
  });
});
