// A hand-written upstream for the S3 backend's tests of peer misbehaviour: a raw TCP server whose
// answers (or silences) the test writes byte by byte, and an S3Storage pointed at it.
import { createServer, type Server, type Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { S3Storage, type S3StorageOptions } from '../../src/storage/upstream/s3-storage.js';

export interface RawPeer {
  endpoint: string;
  /** Stops listening and drops live connections. */
  close(): void;
}

/** Hands every connection to `answer`. */
export async function rawPeer(answer: (sock: Socket) => void): Promise<RawPeer> {
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

export function storageOn(endpoint: string, tuning: Partial<S3StorageOptions> = {}): S3Storage {
  return new S3Storage({
    endpoint,
    region: 'us-east-1',
    bucket: 'raw-peer',
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: 'secret',
    forcePathStyle: true,
    prefix: '',
    ...tuning,
  });
}

/** Reads a stream to its end; the byte count. */
export async function drain(stream: Readable): Promise<number> {
  let n = 0;
  for await (const chunk of stream) n += (chunk as Buffer).length;
  return n;
}
