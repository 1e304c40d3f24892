// An upstream that answers `Connection: close` and sends FIN right after the body (moto does this on
// every response; S3 on some) while our reader is slow, so undici's parser sits paused under
// backpressure when the socket ends. Unpatched undici 7 asserts there and kills the process
// (nodejs/undici#5360); patches/undici+7.30.2.patch backports the fix. Bodies must arrive whole,
// and a short body must still fail as an error.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { drain, rawPeer, storageOn, type RawPeer } from '../helpers/raw-upstream.js';

/** Every request gets `body` (declaring `declared` bytes), then FIN. */
function closingPeer(body: Buffer, declared = body.length): Promise<RawPeer> {
  return rawPeer((sock) =>
    sock.once('data', () => {
      sock.write(`HTTP/1.1 200 OK\r\nContent-Length: ${declared}\r\nConnection: close\r\n\r\n`);
      sock.end(body);
    }),
  );
}

// 64 KiB and just above fill undici's body buffer exactly as the FIN arrives; the others bracket it.
for (const kib of [1, 64, 65, 100, 1024]) {
  t.test(`${kib} KiB body read after the upstream has closed arrives whole`, async (t) => {
    const body = Buffer.alloc(kib * 1024, 0x61);
    const peer = await closingPeer(body);
    t.teardown(() => peer.close());
    const storage = storageOn(peer.endpoint, { attempts: 1 });
    t.teardown(() => storage.close());
    const stream = await storage.read('0123456789abcdefghij');
    await sleep(200);
    t.equal(await drain(stream), body.length);
  });
}

t.test('a body cut short before the FIN is an error, not a short success', async (t) => {
  const body = Buffer.alloc(64 * 1024, 0x62);
  const peer = await closingPeer(body, body.length + 5000);
  t.teardown(() => peer.close());
  const storage = storageOn(peer.endpoint, { attempts: 1 });
  t.teardown(() => storage.close());
  const stream = await storage.read('0123456789abcdefghij');
  await sleep(200);
  await t.rejects(drain(stream), { code: 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH' });
});
