// The notification dispatcher's deliveries go through the outbound client's address policy: a webhook on
// loopback (a real receiver, listening) gets nothing unless notifications.allowPrivateTargets is set,
// and the event is dead-lettered with the refusal as its error; with the setting, the same receiver
// gets the signed event and the outbox empties.
import t, { type Test } from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { encryptSecret } from '../../src/auth/secrets.js';
import { openDatabase } from '../../src/db/open.js';
import { createRepos } from '../../src/db/repos/index.js';
import { NotificationDispatcher } from '../../src/notifications/dispatcher.js';
import { signatureValid } from '../../src/notifications/event-record.js';
import { tempDir } from '../helpers/temp-data.js';

const received: Array<{ body: string; signature: string | undefined }> = [];
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const sig = req.headers['x-s3edge-signature-256'];
    received.push({ body: Buffer.concat(chunks).toString('utf8'), signature: typeof sig === 'string' ? sig : undefined });
    res.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

async function setup(t: Test, allowPrivateTargets: boolean) {
  const db = openDatabase(join(tempDir(t), 'meta.db'));
  t.teardown(() => db.close());
  const repos = createRepos(db);
  const masterKey = randomBytes(32);
  await repos.notificationTargets.insert({ id: 'local', url, secretEnc: encryptSecret(masterKey, 'a-secret-of-the-target') });
  await repos.notificationOutbox.insert([{ id: 'ev-1', targetId: 'local', body: '{"Records":[]}', createdAt: 1 }]);
  const dispatcher = new NotificationDispatcher({
    repos, masterKey, config: { allowPrivateTargets, timeoutMs: 2000, maxAttempts: 1 }, log: { info: () => undefined, warn: () => undefined }, now: () => Date.now(),
  });
  t.teardown(() => dispatcher.stop());
  return { repos, dispatcher };
}

t.test('a loopback webhook is refused by the address policy by default', async (t) => {
  received.length = 0;
  const { repos, dispatcher } = await setup(t, false);
  await dispatcher.drain();
  t.equal(received.length, 0, 'the receiver, listening on 127.0.0.1, got nothing');
  const [dead] = await repos.notificationOutbox.dead(10);
  t.equal(dead?.id, 'ev-1', 'dead-lettered (maxAttempts 1)');
  t.match(dead?.lastError, /^address-refused: .*loopback/, 'with the refusal as its error');
  t.same(dispatcher.stats(), { delivered: 0, failedAttempts: 1, deadLettered: 1 });
});

t.test('allowPrivateTargets lets the same receiver have it, signed', async (t) => {
  received.length = 0;
  const { repos, dispatcher } = await setup(t, true);
  await dispatcher.drain();
  t.equal(received.length, 1);
  t.ok(signatureValid(received[0]!.body, 'a-secret-of-the-target', received[0]!.signature));
  t.same(await repos.notificationOutbox.counts(), { pending: 0, dead: 0 }, 'delivered: gone from the outbox');
});
