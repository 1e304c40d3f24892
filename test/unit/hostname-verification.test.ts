// A DNS server that never answers: the verification lookup gives up after its timeout and says DNS
// failed, rather than hanging the request (a real UDP socket on loopback that reads and stays silent).
import t from 'tap';
import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { checkVerification, dnsTxtLookup, verificationRecord } from '../../src/projects/verification.js';

t.test('a silent DNS server: the lookup times out and verification reports a DNS failure', async (t) => {
  const silent = createSocket('udp4');
  let queries = 0;
  silent.on('message', () => queries++);
  await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
  t.teardown(() => silent.close());
  const { port } = silent.address() as AddressInfo;
  const lookup = dnsTxtLookup({ dnsServers: [`127.0.0.1:${port}`] }, 100);
  const outcome = await checkVerification(lookup, verificationRecord('app.example.com', 'token', '_s3edge-challenge'));
  t.match(outcome, { verified: false, reason: 'dns-error', message: /DNS lookup of _s3edge-challenge\.app\.example\.com failed \(ETIMEOUT\)/ });
  t.ok(queries >= 1, 'the configured server was asked');
});
