// The admin CLI and its data directory, from the real CLI process (test/helpers/cli.ts): usage and
// config errors touch nothing, commands that need data never create a directory, and admin commands
// print the endpoint and region the server recorded.
import t from 'tap';
import { openSqlite } from '../../src/db/sqlite/index.js';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/temp-data.js';
import { startServer } from '../helpers/server.js';
import { RawS3 } from '../helpers/s3-client.js';
import { assertClean, assertErrorJson, runS3edge, type ProcessResult } from '../helpers/cli.js';

t.test('usage errors exit 2 with a usage text and no stack', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const cases: [string[], RegExp][] = [
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['users'], /missing users action/],
    [['users', 'rename', 'x'], /unknown command 'users rename'/],
    [['users', 'create'], /requires NAME/],
    [['users', 'create', 'a', 'b'], /unexpected argument 'b'/],
    [['users', 'list', '--bogus'], /Unknown option '--bogus'/],
    [['users', 'list', '--bucket', 'x'], /does not take --bucket/],
    [['buckets', 'create', 'abc'], /requires --user/],
    [['access-keys', 'create', '--bucket', 'abc'], /requires --permission/],
    [['access-keys', 'create', '--permission', 'read'], /requires --bucket/],
    [['account-keys', 'delete'], /requires ACCESS_KEY_ID/],
    [['users', 'list', '--json=yes'], /does not take an argument/],
    [['users', 'list', '--token-only'], /'users list' does not take --token-only/],
    [['api-keys', 'create', '--user', 'a', '--scopes', 'assets:read', '--token-only', '--json'], /--token-only prints the token alone, --json the whole key: give one of them/],
  ];
  const results = await Promise.all(cases.map(([args]) => runS3edge([...args, '--data-dir', dataDir])));
  for (const [i, [args, message]] of cases.entries()) {
    const r = results[i] as ProcessResult;
    const what = args.join(' ');
    t.equal(r.code, 2, `${what}: exit 2`);
    t.match(r.stderr, message, `${what}: says why`);
    // A command's own usage, or (no known command) where the list is.
    t.match(r.stderr, /usage:\n\s+s3edge |\nRun 's3edge --help' for the list of commands\.\n$/, `${what}: prints usage`);
    assertClean(t, r, what);
  }
  const j = await runS3edge(['users', 'create', '--json', '--data-dir', dataDir]);
  t.equal(j.code, 2);
  assertErrorJson(t, j, 'UsageError', 'usage error with --json');
  t.throws(() => statSync(dataDir), { code: 'ENOENT' }, 'usage errors touch nothing');
});

t.test('config errors exit 2 with one line', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const r = await runS3edge(['users', 'list', '--data-dir', dataDir, '--port', '99999']);
  t.equal(r.code, 2);
  t.equal(r.stderr.trim().split('\n').length, 1);
  t.match(r.stderr, /port/);
  const m = await runS3edge(['users', 'list', '--data-dir', dataDir, '--master-key', 'short']);
  t.equal(m.code, 2);
  t.equal(m.stderr, 's3edge: config: masterKey must be 32 bytes as hex or base64\n');
  assertClean(t, m, 'bad master key');
  t.equal((await runS3edge(['users', 'create', 'zed', '--json'], { S3EDGE_DATA_DIR: dataDir })).code, 0, 'S3EDGE_DATA_DIR works too');
  const env = await runS3edge(['users', 'list', '--json'], { S3EDGE_DATA_DIR: dataDir });
  t.equal(env.code, 0);
  t.same((JSON.parse(env.stdout) as { name: string }[]).map((u) => u.name), ['zed'], 'the same directory');
});

t.test('commands that need existing data never create a data directory', async (t) => {
  const cwd = tempDir(t);
  const dataDir = join(cwd, 'data');
  const line = `s3edge: no s3edge data directory at ${dataDir} (no meta.db there): point at the server's with --data-dir DIR or S3EDGE_DATA_DIR; a deployment on PostgreSQL at its database with --metadata postgres://... or S3EDGE_METADATA(_FILE); or start the server first (s3edge serve)\n`;
  const commands = [
    ['access-keys', 'create', '--bucket', 'photos', '--permission', 'read'],
    ['account-keys', 'create', '--user', 'alice'],
    ['buckets', 'create', 'photos', '--user', 'alice'],
    ['buckets', 'list'],
    ['users', 'list'],
    ['users', 'delete', 'alice'],
    ['api-keys', 'create', '--user', 'alice', '--scopes', 'assets:read'],
    ['credits', 'grant', '--user', 'alice', '--amount', '1'],
    ['scrub', 'run'],
    ['scrub', 'list'],
  ];
  for (const args of commands) {
    const r = await runS3edge(args, {}, cwd);
    t.same([r.code, r.stdout, r.stderr], [2, '', line], `${args.join(' ')} in a folder without ./data: one line naming it`);
    const j = await runS3edge([...args, '--json'], { S3EDGE_DATA_DIR: dataDir });
    t.equal(j.code, 2, `${args.join(' ')} --json: exit 2`);
    assertErrorJson(t, j, 'NoDataDir', `${args.join(' ')} --json`);
  }
  t.same(readdirSync(cwd), [], 'no ./data, no master.key, no meta.db');
  // A data directory the server has not started in yet is fine once users create made its meta.db.
  const made = await runS3edge(['users', 'create', 'alice'], {}, cwd);
  t.equal(made.code, 0, 'users create may start one');
  t.equal(made.stderr, `s3edge: created a new data directory at ${dataDir} (no server has used it yet)\n`, 'and says where');
  const listed = await runS3edge(['users', 'list', '--json'], {}, cwd);
  t.same([listed.code, listed.stderr], [0, ''], 'then the others work, quietly');
  t.same((JSON.parse(listed.stdout) as { name: string }[]).map((u) => u.name), ['alice']);
});

t.test('admin commands print the endpoint the server really serves', async (t) => {
  const server = await startServer();
  t.teardown(() => server.stop());
  await server.admin(['users', 'create', 'erin']);
  await server.admin(['buckets', 'create', 'erin-bucket', '--user', 'erin']);
  t.not(new URL(server.url).port, '9000', 'a port other than the default');
  const key = await server.admin(['access-keys', 'create', '--bucket', 'erin-bucket', '--permission', 'read']);
  t.equal(key['endpoint'], server.url, 'access-keys create: the bound URL, not http://127.0.0.1:9000');
  t.equal(key['endpointStatus'], 'running', 'and the server there runs');
  const account = await server.admin(['account-keys', 'create', '--user', 'erin']);
  t.equal(account['endpoint'], server.url, 'account-keys create too');
  t.equal(account['endpointStatus'], 'running');
  const viaPublic = await server.admin(['access-keys', 'create', '--bucket', 'erin-bucket', '--permission', 'read', '--public-url', 'https://s3.example.net']);
  t.equal(viaPublic['endpoint'], 'https://s3.example.net', 'a configured publicUrl wins');
  t.equal(viaPublic['endpointStatus'], 'configured');
});

/** The record a server wrote in its data directory's settings table. */
function serverRecord(dataDir: string): Record<string, unknown> {
  const db = openSqlite(join(dataDir, 'meta.db'), { readonly: true });
  try {
    const row = db.prepare("SELECT value FROM settings WHERE name = 'server.endpoints'").get() as { value: string };
    return JSON.parse(row.value) as Record<string, unknown>;
  } finally {
    db.close();
  }
}

t.test('after the server stopped, admin commands still print its endpoint and say it is not running', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const base = ['--data-dir', dataDir];
  const server = await startServer({ dataDir });
  t.teardown(() => server.stop());
  await server.admin(['users', 'create', 'fay']);
  await server.admin(['buckets', 'create', 'fay-bucket', '--user', 'fay']);
  t.match(serverRecord(dataDir), { s3: server.url, pid: Number, host: String, startedAt: Number, stoppedAt: null }, 'who recorded it');
  await server.stop();
  t.match(serverRecord(dataDir), { s3: server.url, stoppedAt: Number }, 'a clean stop is recorded');

  const key = await runS3edge(['access-keys', 'create', '--bucket', 'fay-bucket', '--permission', 'read', ...base, '--json']);
  t.equal(key.code, 0, key.stderr);
  t.match(JSON.parse(key.stdout), { endpoint: server.url, endpointStatus: 'not-running' }, 'the last endpoint, marked not running');
  const human = await runS3edge(['account-keys', 'create', '--user', 'fay', ...base]);
  t.equal(human.code, 0, human.stderr);
  t.match(human.stdout, `\nendpoint:         ${server.url} (from when the server last ran on this data directory: it is not running now)\n`, 'the human output says so');
  t.notMatch(human.stdout, /endpointStatus/, 'in words, not as a field');

  // A server that died without stopping (SIGKILL): its pid is gone, so it is not running either.
  const again = await startServer({ dataDir });
  t.teardown(() => again.stop());
  const running = await runS3edge(['access-keys', 'create', '--bucket', 'fay-bucket', '--permission', 'read', ...base, '--json']);
  t.match(JSON.parse(running.stdout), { endpoint: again.url, endpointStatus: 'running' }, 'restarted: running again');
  const pid = serverRecord(dataDir)['pid'] as number;
  process.kill(pid, 'SIGKILL');
  await new Promise<void>((resolve) => {
    const poll = (): void => {
      try {
        process.kill(pid, 0);
        setTimeout(poll, 20);
      } catch {
        resolve();
      }
    };
    poll();
  });
  t.match(serverRecord(dataDir), { stoppedAt: null }, 'a killed server records nothing');
  const afterKill = await runS3edge(['access-keys', 'create', '--bucket', 'fay-bucket', '--permission', 'read', ...base, '--json']);
  t.match(JSON.parse(afterKill.stdout), { endpoint: again.url, endpointStatus: 'not-running' }, 'killed: not running');
});

t.test("admin commands use the server's region unless given one", async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const base = ['--data-dir', dataDir, '--json'];
  const server = await startServer({ dataDir, env: { S3EDGE_REGION: 'eu-west-1' } });
  t.teardown(() => server.stop());
  // The CLI runs without the server's S3EDGE_REGION, as a second shell would.
  const admin = async (args: string[]): Promise<Record<string, unknown>> => {
    const r = await runS3edge([...args, ...base]);
    t.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };
  await admin(['users', 'create', 'gus']);
  t.match(await admin(['account-keys', 'create', '--user', 'gus']), { region: 'eu-west-1' }, 'account-keys create: the server\'s region');
  t.match(await admin(['buckets', 'create', 'gus-bucket', '--user', 'gus']), { region: 'eu-west-1' }, 'buckets create: in the server\'s region');
  const key = await admin(['access-keys', 'create', '--bucket', 'gus-bucket', '--permission', 'read_write']);
  t.match(key, { region: 'eu-west-1', endpoint: server.url });
  // The printed settings work: a PUT signed for the printed region, and the bucket reports that region.
  const s3 = new RawS3({ url: key['endpoint'] as string }, { accessKeyId: key['accessKeyId'] as string, secretAccessKey: key['secretAccessKey'] as string });
  const put = await s3.send({ method: 'PUT', bucket: 'gus-bucket', key: 'a.txt', body: Buffer.from('hi'), region: key['region'] as string });
  t.equal(put.status, 200, 'PUT signed for the printed region');
  const head = await s3.send({ method: 'HEAD', bucket: 'gus-bucket', region: 'eu-west-1' });
  t.equal(head.headers['x-amz-bucket-region'], 'eu-west-1', 'HeadBucket: x-amz-bucket-region');
  // Given explicitly (flag or environment), the CLI's region wins.
  t.match(await admin(['buckets', 'create', 'gus-flag', '--user', 'gus', '--region', 'eu-west-3']), { region: 'eu-west-3' }, '--region wins');
  const env = await runS3edge(['account-keys', 'create', '--user', 'gus', ...base], { S3EDGE_REGION: 'ap-south-1' });
  t.match(JSON.parse(env.stdout), { region: 'ap-south-1' }, 'S3EDGE_REGION wins');
});
