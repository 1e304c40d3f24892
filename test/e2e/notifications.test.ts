// Bucket event notifications against the real server and a real webhook receiver on loopback (issue 35):
// targets from the admin CLI, the configuration from aws cli, events filtered by type, prefix and suffix,
// signed, retried with backoff, dead-lettered (and counted in /metrics), and not lost to a kill -9 in
// the middle of a delivery: the restarted server delivers it again, under the same event id.
import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { startServer, type RunningServer } from '../helpers/server.js';
import { runAws, writeAwsConfig, type AwsResult } from '../helpers/aws-cli.js';
import { eventually } from '../helpers/api.js';
import { tempDir } from '../helpers/temp-data.js';
import { signatureValid } from '../../src/notifications/event-record.js';

const SECRET = 'a-webhook-secret-for-tests';
const BUCKET = 'events-e2e';

interface Delivery {
  id: string;
  signature: string | undefined;
  raw: string;
  record: { eventName: string; s3: { object: { key: string; size?: number; eTag?: string }; configurationId: string; bucket: { name: string } } };
}

/** A webhook receiver: records every POST; `mode` says how it answers the next ones. */
class Receiver {
  readonly deliveries: Delivery[] = [];
  mode: 'ok' | 'fail' | 'hang' = 'ok';
  private readonly hung: ServerResponse[] = [];
  private readonly server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const parsed = JSON.parse(raw) as { Records: Delivery['record'][] };
      const sig = req.headers['x-s3edge-signature-256'];
      this.deliveries.push({ id: String(req.headers['x-s3edge-event-id']), signature: typeof sig === 'string' ? sig : undefined, raw, record: parsed.Records[0]! });
      if (this.mode === 'hang') {
        this.hung.push(res);
        return;
      }
      res.writeHead(this.mode === 'ok' ? 200 : 500).end();
    });
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  named(key: string): Delivery[] {
    return this.deliveries.filter((d) => decodeURIComponent(d.record.s3.object.key.replace(/\+/g, ' ')) === key);
  }

  close(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const receiver = new Receiver();
const hookUrl = await receiver.listen();
t.teardown(() => receiver.close());

const dataDir = join(tempDir(t), 'data');
// Deliveries to loopback need the operator's permission; short deadlines keep the retries quick.
const env = { S3EDGE_NOTIFICATIONS_ALLOW_PRIVATE_TARGETS: 'true', S3EDGE_NOTIFICATIONS_TIMEOUT_MS: '1000', S3EDGE_NOTIFICATIONS_MAX_ATTEMPTS: '3' };
let server: RunningServer = await startServer({ dataDir, env });
t.teardown(() => server.stop());
const awsFiles = await writeAwsConfig(server.tmpRoot);

function aws(args: string[]): Promise<AwsResult> {
  return runAws({ endpoint: server.url, credentials: server.rootKey, files: awsFiles }, args, server.tmpRoot);
}

async function putObject(key: string, body = 'x'): Promise<void> {
  const file = join(server.tmpRoot, 'body');
  await writeFile(file, body);
  const r = await aws(['s3api', 'put-object', '--bucket', BUCKET, '--key', key, '--body', file]);
  if (r.code !== 0) throw new Error(`put ${key}: ${r.stderr}`);
}

let arn = '';

t.test('targets from the admin CLI: added with a secret shown once, listed without it, private URLs refused by default', async (t) => {
  const added = await server.admin(['notification-targets', 'add', 'hook', '--url', hookUrl, '--secret', SECRET]);
  t.equal(added['secret'], SECRET, 'the secret is shown once, when added');
  arn = String(added['arn']);
  t.equal(arn, 'arn:s3edge:sqs:us-east-1:hook:webhook');
  const listed = await server.cli(['notification-targets', 'list']);
  t.equal(listed.code, 0);
  t.match(listed.stdout, /"id":"hook"/);
  t.notMatch(listed.stdout, new RegExp(SECRET), 'never the secret again');
  const refused = await server.cli(['notification-targets', 'add', 'inside', '--url', 'http://10.1.2.3/hook', '--notifications-allow-private-targets', 'false']);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /10\.1\.2\.3 is a private address.*--notifications-allow-private-targets true/, 'the error says how to allow it');
  const duplicate = await server.cli(['notification-targets', 'add', 'hook', '--url', hookUrl]);
  t.match(duplicate.stderr, /already exists/);
});

t.test('a configuration from aws cli: a webhook gets ObjectCreated for a filtered key and nothing for others', async (t) => {
  t.equal((await aws(['s3api', 'create-bucket', '--bucket', BUCKET])).code, 0);
  const config = {
    QueueConfigurations: [
      {
        Id: 'jpg-uploads',
        QueueArn: arn,
        Events: ['s3:ObjectCreated:*'],
        Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: 'uploads/' }, { Name: 'suffix', Value: '.jpg' }] } },
      },
      { Id: 'removals', QueueArn: arn, Events: ['s3:ObjectRemoved:Delete'], Filter: { Key: { FilterRules: [{ Name: 'prefix', Value: 'uploads/' }] } } },
    ],
  };
  const file = join(server.tmpRoot, 'notification.json');
  await writeFile(file, JSON.stringify(config));
  const put = await aws(['s3api', 'put-bucket-notification-configuration', '--bucket', BUCKET, '--notification-configuration', `file://${file}`]);
  t.equal(put.code, 0, put.stderr);
  const got = await aws(['s3api', 'get-bucket-notification-configuration', '--bucket', BUCKET]);
  const queues = (got.json as { QueueConfigurations: Array<{ Id: string; QueueArn: string; Events: string[] }> }).QueueConfigurations;
  t.same(queues.map((q) => [q.Id, q.QueueArn, q.Events]), [['jpg-uploads', arn, ['s3:ObjectCreated:*']], ['removals', arn, ['s3:ObjectRemoved:Delete']]]);

  const unknown = join(server.tmpRoot, 'unknown.json');
  await writeFile(unknown, JSON.stringify({ QueueConfigurations: [{ QueueArn: 'arn:s3edge:sqs:us-east-1:nope:webhook', Events: ['s3:ObjectCreated:*'] }] }));
  const bad = await aws(['s3api', 'put-bucket-notification-configuration', '--bucket', BUCKET, '--notification-configuration', `file://${unknown}`]);
  t.match(bad.stderr, /InvalidArgument.*notification-targets list/, 'an unknown target is refused, saying where targets are listed');

  await putObject('uploads/cat.jpg', 'meow');
  await putObject('uploads/readme.txt');
  await putObject('other/dog.jpg');
  await eventually(() => receiver.named('uploads/cat.jpg').length === 1, 'the event of uploads/cat.jpg', 10_000);
  const [d] = receiver.named('uploads/cat.jpg');
  t.equal(d!.record.eventName, 'ObjectCreated:Put');
  t.equal(d!.record.s3.configurationId, 'jpg-uploads');
  t.equal(d!.record.s3.bucket.name, BUCKET);
  t.equal(d!.record.s3.object.size, 4);
  t.ok(signatureValid(d!.raw, SECRET, d!.signature), 'signed with the target secret');
  t.notOk(signatureValid(d!.raw, 'another-secret', d!.signature));

  t.equal((await aws(['s3api', 'copy-object', '--bucket', BUCKET, '--key', 'uploads/copy.jpg', '--copy-source', `${BUCKET}/uploads/cat.jpg`])).code, 0);
  t.equal((await aws(['s3api', 'delete-object', '--bucket', BUCKET, '--key', 'uploads/cat.jpg'])).code, 0);
  await eventually(() => receiver.named('uploads/copy.jpg').length === 1 && receiver.named('uploads/cat.jpg').length === 2, 'the copy and the delete', 10_000);
  t.equal(receiver.named('uploads/copy.jpg')[0]!.record.eventName, 'ObjectCreated:Copy');
  t.equal(receiver.named('uploads/cat.jpg')[1]!.record.eventName, 'ObjectRemoved:Delete');
  await delay(1000);
  t.same(receiver.named('uploads/readme.txt'), [], 'nothing for a key outside the suffix');
  t.same(receiver.named('other/dog.jpg'), [], 'nothing for a key outside the prefix');
  t.equal(new Set(receiver.deliveries.map((x) => x.id)).size, receiver.deliveries.length, 'every event has its own id');
});

t.test('a failing receiver: retried with backoff under the same event id until it answers 2xx', async (t) => {
  receiver.mode = 'fail';
  await putObject('uploads/retry.jpg');
  await eventually(() => receiver.named('uploads/retry.jpg').length >= 2, 'two attempts', 10_000);
  receiver.mode = 'ok';
  await eventually(() => receiver.named('uploads/retry.jpg').length === 3, 'the third attempt', 10_000);
  const ids = new Set(receiver.named('uploads/retry.jpg').map((d) => d.id));
  t.equal(ids.size, 1, 'one event, attempted three times');
  await delay(2500);
  t.equal(receiver.named('uploads/retry.jpg').length, 3, 'not sent again once delivered');
});

t.test('kill -9 during a delivery: the restarted server delivers the event again, nothing lost', async (t) => {
  receiver.mode = 'hang';
  await putObject('uploads/crash.jpg');
  await eventually(() => receiver.named('uploads/crash.jpg').length === 1, 'the delivery began', 10_000);
  const firstId = receiver.named('uploads/crash.jpg')[0]!.id;
  const rootKey = server.rootKey;
  server.kill('SIGKILL');
  await server.exited;
  receiver.mode = 'ok';
  server = await startServer({ dataDir, env, rootKey });
  await eventually(() => receiver.named('uploads/crash.jpg').length >= 2, 'delivered after the restart', 15_000);
  const again = receiver.named('uploads/crash.jpg');
  t.equal(again.at(-1)!.id, firstId, 'the same event, by its id: a receiver drops the repeat');
  t.equal(again.at(-1)!.record.eventName, 'ObjectCreated:Put');
});

t.test('a target that never answers: dead-lettered after its attempts, counted in /metrics', async (t) => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/gone`;
  await new Promise((resolve) => closed.close(resolve));
  const added = await server.admin(['notification-targets', 'add', 'gone', '--url', deadUrl]);
  t.match(String(added['secret']), /^[A-Za-z0-9_-]{43}$/, 'a secret is generated when none is given');
  t.equal((await aws(['s3api', 'create-bucket', '--bucket', 'events-dead'])).code, 0);
  const file = join(server.tmpRoot, 'dead.json');
  await writeFile(file, JSON.stringify({ QueueConfigurations: [{ QueueArn: String(added['arn']), Events: ['s3:ObjectCreated:Put'] }] }));
  t.equal((await aws(['s3api', 'put-bucket-notification-configuration', '--bucket', 'events-dead', '--notification-configuration', `file://${file}`])).code, 0);
  const body = join(server.tmpRoot, 'dead-body');
  await writeFile(body, 'x');
  t.equal((await aws(['s3api', 'put-object', '--bucket', 'events-dead', '--key', 'k', '--body', body])).code, 0);
  const metric = async (): Promise<number> => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    return Number(/^s3edge_notification_dead_letters (\d+)/m.exec(text)?.[1] ?? NaN);
  };
  await eventually(async () => (await metric()) === 1, 'one dead letter after three attempts (1 s, then 2 s apart)', 15_000);
  t.equal(await metric(), 1, 's3edge_notification_dead_letters');
  // The log line is written off the event loop: it may reach this process's pipe after the metric's answer.
  await eventually(() => /could not be delivered and is kept as a dead letter/.test(server.output()), 'the dead letter logged', 5_000).catch(() => undefined);
  t.match(server.output(), /could not be delivered and is kept as a dead letter/);
});
