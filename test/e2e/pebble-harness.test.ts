// Proves the ACME test harness (test/helpers/pebble.ts, the A records of test/helpers/dns-fixture.ts)
// with a real exchange and no s3edge server: acme-client orders a certificate from Debian's pebble, which
// resolves the name through the loopback DNS fixture and fetches the HTTP-01 key authorization from a
// node:http server on the port it was given. A name whose address answers nothing fails the order with
// pebble's connection error in the message, as the server's ACME code will see it.
import t from 'tap';
import acme from 'acme-client';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Agent } from 'node:https';
import type { AddressInfo } from 'node:net';
import { startDnsFixture } from '../helpers/dns-fixture.js';
import { PEBBLE_MISSING, startPebble } from '../helpers/pebble.js';
import { tempDir } from '../helpers/temp-data.js';

const NAME = 'app.example.test';
const DOWN = 'down.example.test';

const dir = tempDir(t, 's3edge-pebble-');
const dns = await startDnsFixture();
t.teardown(() => dns.close());
dns.setA(NAME, '127.0.0.1');
// Loopback, but nothing listens there: the challenge server below is bound to 127.0.0.1 only.
dns.setA(DOWN, '127.0.0.2');

/** token -> key authorization, as challengeCreateFn hands them out. */
const tokens = new Map<string, string>();
const hits: { path: string; host: string; userAgent: string }[] = [];
const challengeServer = createServer((req, res) => {
  const path = req.url ?? '';
  hits.push({ path, host: req.headers.host ?? '', userAgent: req.headers['user-agent'] ?? '' });
  const token = /^\/\.well-known\/acme-challenge\/([A-Za-z0-9_-]+)$/.exec(path)?.[1];
  const keyAuthorization = token === undefined ? undefined : tokens.get(token);
  if (keyAuthorization === undefined) res.writeHead(404).end();
  else res.writeHead(200, { 'content-type': 'text/plain' }).end(keyAuthorization);
});
challengeServer.listen(0, '127.0.0.1');
await once(challengeServer, 'listening');
t.teardown(() => new Promise<void>((resolve) => challengeServer.close(() => resolve())));
const httpPort = (challengeServer.address() as AddressInfo).port;

const pebble = await startPebble({ dir, httpPort, dnsServer: dns.server, certificateValiditySeconds: 60, t });
acme.axios.defaults.httpsAgent = new Agent({ ca: readFileSync(pebble.caFile) });

/** One order for `name` with a new account and key, HTTP-01 only: the chain and the certificate's key. */
async function order(name: string): Promise<{ chain: string; key: Buffer }> {
  const client = new acme.Client({
    directoryUrl: pebble.directoryUrl,
    accountKey: await acme.crypto.createPrivateEcdsaKey(),
    // acme-client's default is 5 s between polls.
    backoffMin: 100,
    backoffMax: 500,
    backoffAttempts: 30,
  });
  const [key, csr] = await acme.crypto.createCsr({ commonName: name, altNames: [name] }, await acme.crypto.createPrivateEcdsaKey());
  const chain = await client.auto({
    csr,
    challengePriority: ['http-01'],
    termsOfServiceAgreed: true,
    // Its own check would ask the system's DNS and port 80: pebble's validation is the one under test.
    skipChallengeVerification: true,
    challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
      tokens.set(challenge.token, keyAuthorization);
    },
    challengeRemoveFn: async (_authz, challenge) => {
      tokens.delete(challenge.token);
    },
  });
  return { chain, key };
}

t.test("the DNS fixture's A records, read with node's resolver: a known name's other types are NODATA, an unknown name NXDOMAIN", async (t) => {
  const resolver = new Resolver({ timeout: 2_000, tries: 1 });
  resolver.setServers([dns.server]);
  t.same(await resolver.resolve4(NAME), ['127.0.0.1']);
  await t.rejects(resolver.resolve6(NAME), { code: 'ENODATA' });
  await t.rejects(resolver.resolveCaa(NAME), { code: 'ENODATA' });
  await t.rejects(resolver.resolve4('unknown.example.test'), { code: 'ENOTFOUND' });
  t.equal(dns.asked(NAME, 'aaaa'), 1, 'asked counts by type');
});

t.test('an order validated over loopback DNS and HTTP-01 gives a 60 s certificate chaining to pebble root', async (t) => {
  const askedBefore = { a: dns.asked(NAME, 'A'), aaaa: dns.asked(NAME, 'AAAA') };
  let issued: { chain: string; key: Buffer };
  try {
    issued = await order(NAME);
  } catch (err) {
    t.fail(`order failed: ${(err as Error).message}\n${pebble.log().slice(-4000)}`);
    return;
  }
  const pems = acme.crypto.splitPemChain(issued.chain);
  t.ok(pems.length >= 2, 'leaf and intermediate');
  const [leaf, intermediate] = pems.map((p) => new X509Certificate(p)) as [X509Certificate, X509Certificate];
  t.equal(leaf.subjectAltName, `DNS:${NAME}`);
  t.ok(leaf.checkPrivateKey(createPrivateKey(issued.key)), "the CSR's key");
  t.ok(leaf.checkIssued(intermediate) && leaf.verify(intermediate.publicKey), 'leaf signed by the intermediate');
  t.equal(intermediate.fingerprint256, new X509Certificate(await pebble.intermediatePem()).fingerprint256, 'intermediatePem() is the chain intermediate');
  const root = new X509Certificate(await pebble.rootPem());
  t.ok(intermediate.checkIssued(root) && intermediate.verify(root.publicKey), 'intermediate signed by rootPem()');
  t.notOk(leaf.verify(root.publicKey), 'not by the root directly');
  t.notOk(leaf.checkIssued(new X509Certificate(readFileSync(pebble.caFile))), "not by the listener's certificate");
  const seconds = (Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)) / 1000;
  t.ok(seconds >= 55 && seconds <= 65, `valid for about 60 s (${seconds} s)`);

  // Its VA asks AAAA, then A, in each of its 3 concurrent attempts, and dials the first address (AAAA first).
  const asked = { a: dns.asked(NAME, 'A') - askedBefore.a, aaaa: dns.asked(NAME, 'AAAA') - askedBefore.aaaa };
  t.ok(asked.a >= 1 && asked.aaaa >= 1, `pebble asked A and AAAA for ${NAME} (${asked.a} and ${asked.aaaa} times)`);
  const challengeHits = hits.filter((h) => h.path.startsWith('/.well-known/acme-challenge/'));
  t.ok(challengeHits.length >= 1, 'the challenge server was asked');
  t.equal(challengeHits[0]?.host, `${NAME}:${httpPort}`, 'Host: the name with the port');
  t.match(challengeHits[0]?.userAgent, /^LetsEncrypt-Pebble-VA/);
  t.equal(tokens.size, 0, 'challengeRemoveFn ran');
});

t.test('a name whose address answers nothing: the order fails with the connection error', async (t) => {
  const before = hits.length;
  await t.rejects(order(DOWN), /down\.example\.test.*connection refused/);
  t.ok(dns.asked(DOWN, 'A') >= 1, `pebble asked A for ${DOWN}`);
  t.equal(hits.length, before, 'nothing reached the challenge server');
});

t.test('without pebble on PATH: one line saying how to install it', async (t) => {
  const path = process.env.PATH;
  process.env.PATH = '/nonexistent';
  t.teardown(() => {
    process.env.PATH = path;
  });
  await t.rejects(startPebble({ dir, httpPort, dnsServer: dns.server }), { message: PEBBLE_MISSING });
  t.equal(PEBBLE_MISSING, 'pebble is not installed: sudo apt-get install -y pebble (.ci/run installs it)');
});
