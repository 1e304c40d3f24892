// The notification repositories (targets, the outbox) on both metadata stores: the outbox's claim (an
// attempt taken once, even by two processes), due order, retries, dead letters and their counts.
import t from 'tap';
import { NotificationOutboxRepo, NotificationTargetsRepo } from '../../src/db/repos/notifications.js';
import { ConstraintError } from '../../src/db/repos/index.js';
import { storeMatrix } from '../helpers/stores.js';

const stores = storeMatrix(t);

stores.each('notification targets: insert, get, list, duplicate ids, delete', async (t, open) => {
  const db = await open(t);
  const targets = new NotificationTargetsRepo(db, () => 1000);
  await targets.insert({ id: 'b-hook', url: 'https://b.example/hook', secretEnc: 'sealed-b' });
  await targets.insert({ id: 'a-hook', url: 'https://a.example/hook', secretEnc: 'sealed-a' });
  t.same(await targets.get('a-hook'), { id: 'a-hook', url: 'https://a.example/hook', secretEnc: 'sealed-a', createdAt: 1000 });
  t.same((await targets.list()).map((x) => x.id), ['a-hook', 'b-hook'], 'by id');
  await t.rejects(targets.insert({ id: 'a-hook', url: 'https://x.example', secretEnc: 's' }), new ConstraintError('duplicate', "notification target 'a-hook' already exists"));
  t.equal(await targets.delete('a-hook'), true);
  t.equal(await targets.delete('a-hook'), false);
  t.equal(await targets.get('a-hook'), undefined);
});

stores.each('notification outbox: due order, one claim per attempt, retries, dead letters, counts', async (t, open) => {
  const db = await open(t);
  const outbox = new NotificationOutboxRepo(db);
  await outbox.insert([
    { id: 'e2', targetId: 'hook', body: '{"n":2}', createdAt: 200 },
    { id: 'e1', targetId: 'hook', body: '{"n":1}', createdAt: 100 },
    { id: 'e3', targetId: 'hook', body: '{"n":3}', createdAt: 300 },
  ]);
  t.same((await outbox.due(250, 10)).map((e) => e.id), ['e1', 'e2'], 'due by now, the longest waiting first');
  const [e1] = await outbox.due(250, 1);
  t.same(e1, { id: 'e1', targetId: 'hook', body: '{"n":1}', attempts: 0, dueAt: 100, createdAt: 100, lastError: null });

  t.equal(await outbox.claim(e1!, 5000), true, 'taken for an attempt');
  t.equal(await outbox.claim(e1!, 5000), false, 'a second taker (another process with the same read) loses');
  t.same((await outbox.due(1000, 10)).map((e) => e.id), ['e2', 'e3'], 'a claimed event is out of reach until its lease ends');
  t.same((await outbox.due(5000, 10)).map((e) => [e.id, e.attempts]), [['e2', 0], ['e3', 0], ['e1', 1]], 'and back once it has (a crash mid-attempt)');

  await outbox.failed('e1', 'HTTP 500', 7000);
  const retried = (await outbox.due(7000, 10)).find((e) => e.id === 'e1');
  t.same([retried?.dueAt, retried?.lastError], [7000, 'HTTP 500'], 'tried again when due, with the error kept');
  await outbox.failed('e2', 'network: refused', null);
  t.notOk((await outbox.due(1e12, 10)).some((e) => e.id === 'e2'), 'a dead letter is never due');
  t.same((await outbox.dead(10)).map((e) => [e.id, e.lastError]), [['e2', 'network: refused']]);
  t.same(await outbox.counts(), { pending: 2, dead: 1 });
  await outbox.delete('e1');
  t.same(await outbox.counts(), { pending: 1, dead: 1 }, 'delivered: gone');
});
