// An upstream that stops talking: it never answers (headers timeout), or stalls inside a body (idle
// body timeout). The backend must give up within its timeouts, as a 503 SlowDown before any byte
// was handed over and as a stream error after, never a hang or a short success.
import t from 'tap';
import { createServer, type Server, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { S3Storage } from '../../src/storage/upstream/s3-storage.js';

/** A raw TCP peer that hands every connection to `answer`; close() also drops live sockets. */
async function rawPeer(answer: (sock: Socket) => void): Promise<{ endpoint: string; close(): void }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((sock) => {
    sockets.add(sock);
    sock.on('error', () => undefined);
    sock.on('close', () => sockets.delete(sock));
    answer(sock);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return {
    endpoint: `http://127.0.0.1:${addr.port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

function storageOn(endpoint: string): S3Storage {
  return new S3Storage({
    endpoint,
    region: 'us-east-1',
    bucket: 'stalling',
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: 'secret',
    forcePathStyle: true,
    prefix: '',
    headersTimeoutMs: 300,
    bodyTimeoutMs: 300,
    attempts: 2,
    retryBaseMs: 10,
  });
}

async function drain(stream: Readable): Promise<number> {
  let n = 0;
  for await (const chunk of stream) n += (chunk as Buffer).length;
  return n;
}

t.test('no answer at all: the read gives up after the retries with 503 SlowDown', async (t) => {
  let connections = 0;
  const peer = await rawPeer(() => connections++);
  t.teardown(() => peer.close());
  const storage = storageOn(peer.endpoint);
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
  const storage = storageOn(peer.endpoint);
  t.teardown(() => storage.close());
  const stream = await storage.read('0123456789abcdefghij');
  await t.rejects(drain(stream), { code: 'UND_ERR_BODY_TIMEOUT' });
});

t.test('an upload whose answer never comes fails with 503 SlowDown', async (t) => {
  const peer = await rawPeer((sock) => sock.resume());
  t.teardown(() => peer.close());
  const storage = storageOn(peer.endpoint);
  t.teardown(() => storage.close());
  await t.rejects(storage.stage(Readable.from([Buffer.alloc(1000, 0x62)])), { code: 'SlowDown', status: 503 });
});
