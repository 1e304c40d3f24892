// An upstream that stops talking: it never answers (headers timeout), or stalls inside a body (idle
// body timeout). The backend must give up within its timeouts, as a 503 SlowDown before any byte
// was handed over and as a stream error after, never a hang or a short success.
import t from 'tap';
import { Readable } from 'node:stream';
import { drain, rawPeer, storageOn } from '../helpers/raw-upstream.js';

const tuning = { headersTimeoutMs: 300, bodyTimeoutMs: 300, attempts: 2, retryBaseMs: 10 };

t.test('no answer at all: the read gives up after the retries with 503 SlowDown', async (t) => {
  let connections = 0;
  const peer = await rawPeer(() => connections++);
  t.teardown(() => peer.close());
  const storage = storageOn(peer.endpoint, tuning);
  t.teardown(() => storage.close());
  await t.rejects(storage.read('0123456789abcdefghij'), { code: 'SlowDown', status: 503, headers: { 'Retry-After': '1' } });
  t.equal(connections, 2, 'one connection per attempt');
});

t.test('a body that stalls half way errors the stream (never ends short)', async (t) => {
  const peer = await rawPeer((sock) =>
    sock.once('data', () => {
      sock.write('HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n');
      sock.write(Buffer.alloc(100_000, 0x61));
    }),
  );
  t.teardown(() => peer.close());
  const storage = storageOn(peer.endpoint, tuning);
  t.teardown(() => storage.close());
  const stream = await storage.read('0123456789abcdefghij');
  await t.rejects(drain(stream), { code: 'UND_ERR_BODY_TIMEOUT' });
});

t.test('an upload whose answer never comes fails with 503 SlowDown', async (t) => {
  const peer = await rawPeer((sock) => sock.resume());
  t.teardown(() => peer.close());
  const storage = storageOn(peer.endpoint, tuning);
  t.teardown(() => storage.close());
  await t.rejects(storage.stage(Readable.from([Buffer.alloc(1000, 0x62)])), { code: 'SlowDown', status: 503 });
});
