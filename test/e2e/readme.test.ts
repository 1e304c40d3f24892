// README.md's commands, run as written: every line of its ```sh blocks, in order, in a fresh folder
// where `s3edge` is this build and `./data` is the data directory of a server started here. The only
// liberties: the server listens on a free port (its address replaces http://127.0.0.1:9000), and the
// placeholders a reader fills in (<root access key>, <ACCESS_KEY_ID>, $TOKEN) get the values the
// earlier commands printed. A README line this file cannot run, or a placeholder it does not know,
// fails the test: README gains no command that does not work.
import t from 'tap';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { S3EDGE_BIN, startServer } from '../helpers/server.js';
import { run, type RunResult } from '../helpers/conformance.js';

const README = fileURLToPath(new URL('../../../README.md', import.meta.url));
const README_PORT = 'http://127.0.0.1:9000';

/** What .ci/run itself runs on every CI: `npm ci`, `npm test`; `npm start` is a build plus `s3edge serve`, which this file starts. */
const RUN_BY_CI = ['npm ci && npm start', 'npm test'];

function commandsOf(markdown: string): string[] {
  const commands: string[] = [];
  for (const [, block] of markdown.matchAll(/```sh\n([\s\S]*?)```/g)) {
    for (const line of (block ?? '').split('\n')) {
      const command = line.replace(/\s+#\s.*$/, '').trim();
      if (command !== '' && !command.startsWith('#')) commands.push(command);
    }
  }
  return commands;
}

const readme = await readFile(README, 'utf8');
const commands = commandsOf(readme);

t.test('README starts with the two newcomer commands', async (t) => {
  t.same(commands.slice(0, 2), RUN_BY_CI, 'install-and-start, then npm test');
  t.ok(readme.indexOf('npm ci && npm start') < readme.indexOf('\n## '), 'before the first section');
});

t.test('every other README command runs as written', async (t) => {
  const work = join(tmpdir(), `s3edge-readme-${process.pid}`);
  await mkdir(join(work, 'bin'), { recursive: true });
  t.teardown(() => rm(work, { recursive: true, force: true }));
  // `s3edge` on PATH is this build, as `npm install -g` or npx would give it.
  const wrapper = join(work, 'bin', 's3edge');
  await writeFile(wrapper, `#!/bin/sh\nexec "${process.execPath}" "${S3EDGE_BIN}" "$@"\n`);
  await chmod(wrapper, 0o755);
  const cwd = join(work, 'home');
  await mkdir(cwd);
  await writeFile(join(cwd, 'cat.jpg'), Buffer.from([0xff, 0xd8, 0xff, 0xe0, ...Buffer.from('a cat, more or less')]));

  const server = await startServer({ dataDir: join(cwd, 'data') });
  t.teardown(() => server.stop());

  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(AWS_|S3EDGE_|BOTO)/.test(k)) env[k] = v;
  Object.assign(env, { PATH: `${join(work, 'bin')}:${process.env.PATH ?? ''}`, HOME: cwd, AWS_CONFIG_FILE: join(cwd, 'no-aws-config') });
  const values: Record<string, string> = {
    '<root access key>': server.rootKey.accessKeyId,
    '<root secret key>': server.rootKey.secretAccessKey,
  };

  for (const written of commands.slice(2)) {
    let command = written.replaceAll(README_PORT, server.url);
    for (const [placeholder, value] of Object.entries(values)) command = command.replaceAll(placeholder, value);
    const unknown = /<[A-Za-z][^>]*>/.exec(command.replace(/<</g, ''));
    if (unknown) {
      t.fail(`README: ${written}: the placeholder ${unknown[0]} has no value from an earlier command`);
      continue;
    }
    const exported = /^export\s+(.+)$/.exec(command);
    if (exported) {
      for (const [, name, value] of (exported[1] ?? '').matchAll(/([A-Z_][A-Z0-9_]*)=(\S+)/g)) env[name as string] = value;
      t.pass(`README: ${written}`);
      continue;
    }
    const r: RunResult = await run('bash', ['-c', command], { env, cwd, timeoutMs: 60_000 });
    t.equal(r.code, 0, `README: ${written}\n${r.stdout}${r.stderr}`);
    if (command.startsWith('curl ')) t.match(r.stdout, /"success":true/, `README: ${written}: the API says success`);
    // What a reader takes from an output for a later line.
    const accessKeyId = /^accessKeyId:\s+(\S+)$/m.exec(r.stdout)?.[1];
    if (written.startsWith('s3edge access-keys create') && accessKeyId) values['<ACCESS_KEY_ID>'] = accessKeyId;
    if (written.startsWith('s3edge api-keys create') && written.includes('--json')) env['TOKEN'] = (JSON.parse(r.stdout) as { token: string }).token;
  }
  t.ok(values['<ACCESS_KEY_ID>'], 'the access key placeholder was filled from access-keys create');
});
