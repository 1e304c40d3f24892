// Project hostnames' TLS rows (migration 028 / PostgreSQL 013) on both metadata stores: what the ACME
// job finds due (verified hostnames without a row, due retries and renewals, never an uploaded
// certificate nor one another process claims), one claim at a time across two processes, a stored
// certificate loaded with the route, failures with their reason and backoff, the issuance limits'
// counts, challenges answered only for their hostname and while they last, and a removed hostname
// taking its certificate and key with it.
import t from 'tap';
import { HostnameTlsRepo, type StoredCertificate } from '../../src/db/repos/hostname-tls.js';
import { ProjectsRepo } from '../../src/db/repos/projects.js';
import type { SqlExecutor } from '../../src/db/store/types.js';
import { storeMatrix } from '../helpers/stores.js';

const stores = storeMatrix(t);

async function user(db: SqlExecutor, id: string): Promise<void> {
  await db.run('INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)', [id, `name-${id}`, 1]);
}

const cert = (over: Partial<StoredCertificate> = {}): StoredCertificate => ({
  source: 'acme',
  pem: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
  keyEnc: 'v1:sealed',
  fingerprint: 'AA:BB',
  notBefore: 1_000,
  notAfter: 91_000,
  issuedAt: 1_000,
  ...over,
});

stores.each('due hostnames, claims, certificates with their routes, failures, limits, challenges, cascade', async (t, open) => {
  const db = await open(t);
  let now = 1_000;
  const projects = new ProjectsRepo(db, () => now);
  const tls = new HostnameTlsRepo(db, () => now);
  await user(db, 'u1');
  const p = await projects.createProject('u1', 'site');
  const a = await projects.addHostname(p.id, 'a.example.com', 'tok');
  const b = await projects.addHostname(p.id, 'b.example.com', 'tok');

  t.same(await tls.due(now, 10), [], 'unverified hostnames are never due');
  await projects.markVerified(a.id, 'operator');
  await projects.markVerified(b.id, 'dns');
  t.same(
    (await tls.due(now, 10)).map((d) => [d.hostname, d.userId]).sort(),
    [
      ['a.example.com', 'u1'],
      ['b.example.com', 'u1'],
    ],
    'verified ones without a row are due at once',
  );

  // A claim is exclusive until it lapses; a claimed hostname is not due.
  t.equal(await tls.claim(a.id, now + 600_000), true);
  t.equal(await tls.claim(a.id, now + 600_000), false, 'a second claim is refused');
  t.match(await tls.get(a.id), { state: 'issuing' });
  t.same((await tls.due(now, 10)).map((d) => d.hostname), ['b.example.com']);

  // Issued: the renewal is its next attempt; the route carries the certificate and the settings.
  await tls.storeCertificate(a.id, cert(), 61_000);
  t.match(await tls.get(a.id), { state: 'issued', failures: 0, lastError: null, nextAttemptAt: 61_000, certificate: { source: 'acme', fingerprint: 'AA:BB', notAfter: 91_000 } });
  t.equal(await tls.claim(a.id, now + 600_000), true, 'the claim was dropped with the store');
  await tls.storeCertificate(a.id, cert(), 61_000);
  await tls.setSettings(a.id, { redirectHttps: true, hstsMaxAge: 300, hstsIncludeSubdomains: true, minTls: '1.3' });
  const route = (await projects.routes()).find((r) => r.hostname === 'a.example.com');
  t.same(route?.tls, {
    redirectHttps: true,
    hsts: 'max-age=300; includeSubDomains',
    minTls: '1.3',
    certificate: { pem: cert().pem, keyEnc: 'v1:sealed', fingerprint: 'AA:BB', notAfter: 91_000 },
  });
  t.equal((await projects.routes()).find((r) => r.hostname === 'b.example.com')?.tls, null, 'no row: null');
  t.same((await tls.due(now, 10)).map((d) => d.hostname), ['b.example.com'], 'not due before its renewal');
  now = 61_000;
  t.same((await tls.due(now, 10)).map((d) => d.hostname).sort(), ['a.example.com', 'b.example.com'], 'due at its renewal time');

  // A failure: reason, count, next attempt; the certificate stays. A limit's wait counts no failure.
  await tls.claim(a.id, now + 600_000);
  await tls.recordFailure(a.id, 'connection refused', now + 60_000);
  t.match(await tls.get(a.id), { state: 'failed', lastError: 'connection refused', failures: 1, nextAttemptAt: 121_000, certificate: { fingerprint: 'AA:BB' } });
  await tls.recordFailure(a.id, 'Issuance limit: ...', now + 5_000, false);
  t.match(await tls.get(a.id), { state: 'pending', failures: 1, nextAttemptAt: 66_000 });
  t.match(await tls.counts(), { certificates: 1, failing: 0, soonestExpiry: 91_000 });

  // An uploaded certificate is never due; issue-now refuses it; removal makes the hostname due again.
  await tls.storeCertificate(b.id, cert({ source: 'uploaded', fingerprint: 'CC' }), null);
  now = 10_000_000;
  t.same((await tls.due(now, 10)).map((d) => d.hostname), ['a.example.com']);
  t.equal(await tls.dueNow(b.id), false);
  t.equal(await tls.removeCertificate(b.id, now), true);
  t.match(await tls.get(b.id), { certificate: null, state: 'pending', nextAttemptAt: now });
  t.equal(await tls.dueNow(b.id), true);

  // Orders in the last hour, per hostname and per user.
  await tls.addOrder('o1', a.id, 'u1', now - 4_000_000);
  await tls.addOrder('o2', a.id, 'u1', now - 1_000);
  await tls.addOrder('o3', b.id, 'u1', now - 500);
  t.same(await tls.ordersOfHostname(a.id, now - 3_600_000), { n: 1, oldest: now - 1_000 });
  t.same(await tls.ordersOfUser('u1', now - 3_600_000), { n: 2, oldest: now - 1_000 });

  // Challenges: for their hostname only, while they last.
  await tls.putChallenge('tok-1', 'a.example.com', 'tok-1.thumb', now + 1_000);
  t.equal(await tls.challenge('tok-1', 'a.example.com', now), 'tok-1.thumb');
  t.equal(await tls.challenge('tok-1', 'b.example.com', now), undefined, "another hostname's token is not answered");
  t.equal(await tls.challenge('tok-1', 'a.example.com', now + 1_000), undefined, 'expired');
  await tls.prune(now - 3_600_000, now + 1_000);
  t.same(await tls.ordersOfHostname(a.id, 0), { n: 1, oldest: now - 1_000 }, 'orders older than the window pruned');
  t.equal(await tls.challenge('tok-1', 'a.example.com', now), undefined, 'expired challenges pruned');

  // A removed hostname takes its certificate and sealed key with it.
  t.equal(await projects.deleteHostname(a.id), true);
  t.equal(await tls.get(a.id), undefined);
  t.equal(Number((await db.get<{ n: unknown }>('SELECT COUNT(*) AS n FROM hostname_tls WHERE hostname_id = ?', [a.id]))?.n), 0);
});

t.test('two processes claim one hostname: exactly one wins', async (t) => {
  for (const kind of ['sqlite', 'postgres'] as const) {
    const [one, two] = await stores.pair(t, kind);
    const now = 5_000;
    await user(one, 'u1');
    const projects = new ProjectsRepo(one, () => now);
    const p = await projects.createProject('u1', 'site');
    const h = await projects.addHostname(p.id, 'x.example.com', 'tok');
    await projects.markVerified(h.id, 'operator');
    const claims = await Promise.all([new HostnameTlsRepo(one, () => now).claim(h.id, now + 1_000), new HostnameTlsRepo(two, () => now).claim(h.id, now + 1_000)]);
    t.same(claims.filter(Boolean).length, 1, `${kind}: one claim of two`);
    t.equal(await new HostnameTlsRepo(two, () => now + 2_000).claim(h.id, now + 3_000), true, `${kind}: a lapsed claim can be taken`);
  }
});
