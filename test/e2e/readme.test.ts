// README.md's commands, run as written: every line of its ```sh blocks, in order, in a fresh folder
// where `npx s3edge` is this build (as npx resolves it in the folder of `npm ci`, which a test of its own
// checks) and `./data` is the data directory of a server started here (test/helpers/doc-commands.ts runs
// the lines; docs-examples.test.ts does the same for docs/*.md's runnable blocks). The only liberties: the
// server listens on a free port (its address replaces http://127.0.0.1:9000), and the placeholders a
// reader fills in (<root access key>, <ACCESS_KEY_ID>) get the values the earlier commands printed.
// Shell variables are README's own: a line that uses a variable no earlier line set fails, as does a
// placeholder this file does not know: README gains no command that does not work.
import t from 'tap';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childProcessEnv } from '../helpers/child-env.js';
import { startServer } from '../helpers/server.js';
import { run } from '../helpers/conformance.js';
import { codeBlocksOf, commandsOf, DocShell } from '../helpers/doc-commands.js';
import { TEST_TOOLS } from '../preflight.js';

const README = fileURLToPath(new URL('../../../README.md', import.meta.url));
const README_PORT = 'http://127.0.0.1:9000';

/**
 * What .ci/run itself runs on every CI: Node 24 (scripts/node24.sh), `npm ci`, `npm test`; `npm start` is a
 * build plus `s3edge serve`, which this file starts.
 */
const RUN_BY_CI = ['eval "$(bash scripts/node24.sh)" && npm ci && npm start', 'npm test'];

const readme = await readFile(README, 'utf8');
const commands = codeBlocksOf(readme)
  .filter((block) => block.lang === 'sh')
  .flatMap((block) => commandsOf(block.body));

t.test('README starts with the two newcomer commands', async (t) => {
  t.same(commands.slice(0, 2), RUN_BY_CI, 'install-and-start, then npm test');
  t.ok(readme.indexOf('npm ci && npm start') < readme.indexOf('\n## '), 'before the first section');
});

t.test("README names every tool npm test needs (test/preflight.ts's list)", async (t) => {
  const paragraph = /\n`npm test` [^\n]*(\n[^\n]+)*/.exec(readme)?.[0] ?? '';
  t.ok(paragraph, 'a paragraph on what `npm test` needs');
  t.ok(readme.indexOf(paragraph) < readme.indexOf('\n## '), 'before the first section');
  for (const tool of TEST_TOOLS) t.match(paragraph, new RegExp(`\\b${tool.name}\\b`), tool.name);
});

t.test('every other README command runs as written', async (t) => {
  const home = join(tmpdir(), `s3edge-readme-${process.pid}`);
  await mkdir(home, { recursive: true });
  t.teardown(() => rm(home, { recursive: true, force: true }));
  await writeFile(join(home, 'cat.jpg'), Buffer.from([0xff, 0xd8, 0xff, 0xe0, ...Buffer.from('a cat, more or less')]));

  const server = await startServer({ dataDir: join(home, 'data') });
  t.teardown(() => server.stop());

  const env = childProcessEnv();
  for (const k of Object.keys(env)) if (/^(AWS_|BOTO)/.test(k)) delete env[k];
  env.AWS_CONFIG_FILE = join(home, 'no-aws-config');
  const shell = await DocShell.create({
    home,
    env,
    replace: [
      [README_PORT, server.url],
      ['<root access key>', server.rootKey.accessKeyId],
      ['<root secret key>', server.rootKey.secretAccessKey],
    ],
    takes: [{ placeholder: '<ACCESS_KEY_ID>', after: /^npx s3edge access-keys create /, value: /^accessKeyId:\s+(\S+)$/m }],
  });
  for (const written of commands.slice(2)) await shell.command(t, 'README', written);
  t.ok(shell.value('<ACCESS_KEY_ID>'), 'the access key placeholder was filled from access-keys create');
  t.match(shell.env['TOKEN'], /^s3e_/, "TOKEN is an API token, set by README's own line");
});

t.test("README's `npx s3edge` works in the folder of `npm ci`, with nothing installed globally or fetched", async (t) => {
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const r = await run('npx', ['--no-install', 's3edge', '--version'], { env: childProcessEnv(), cwd: root, timeoutMs: 60_000 });
  t.equal(r.code, 0, `npx --no-install s3edge --version\n${r.stderr}`);
  t.match(r.stdout, /^s3edge \d+\.\d+\.\d+/);
});
