// README.md's commands, run as written: every line of its ```sh blocks, in order, in a fresh folder
// where `npx s3edge` is this build (as npx resolves it in the folder of `npm ci`, which a test of its own
// checks) and `./data` is the data directory of a server started here. The only
// liberties: the server listens on a free port (its address replaces http://127.0.0.1:9000), and the
// placeholders a reader fills in (<root access key>, <ACCESS_KEY_ID>) get the values the earlier
// commands printed. Shell variables are README's own: `export A=...` and `NAME=$(...)` lines run as
// written and keep their values for the lines after them, and a line that uses a variable no earlier
// line set fails. A README line this file cannot run, or a placeholder it does not know, fails the
// test: README gains no command that does not work.
import t from 'tap';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childProcessEnv } from '../helpers/child-env.js';
import { S3EDGE_BIN, startServer } from '../helpers/server.js';
import { run, type RunResult } from '../helpers/conformance.js';
import { TEST_TOOLS } from '../preflight.js';

const README = fileURLToPath(new URL('../../../README.md', import.meta.url));
const README_PORT = 'http://127.0.0.1:9000';

/**
 * What .ci/run itself runs on every CI: Node 24 (scripts/node24.sh), `npm ci`, `npm test`; `npm start` is a
 * build plus `s3edge serve`, which this file starts.
 */
const RUN_BY_CI = ['eval "$(bash scripts/node24.sh)" && npm ci && npm start', 'npm test'];

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

t.test("README names every tool npm test needs (test/preflight.ts's list)", async (t) => {
  const paragraph = /\n`npm test` [^\n]*(\n[^\n]+)*/.exec(readme)?.[0] ?? '';
  t.ok(paragraph, 'a paragraph on what `npm test` needs');
  t.ok(readme.indexOf(paragraph) < readme.indexOf('\n## '), 'before the first section');
  for (const tool of TEST_TOOLS) t.match(paragraph, new RegExp(`\\b${tool.name}\\b`), tool.name);
});

/** Shell variables a line uses: $NAME and ${NAME}. */
function variablesUsed(command: string): string[] {
  return [...command.matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1] as string);
}

t.test('every other README command runs as written', async (t) => {
  const work = join(tmpdir(), `s3edge-readme-${process.pid}`);
  await mkdir(join(work, 'bin'), { recursive: true });
  t.teardown(() => rm(work, { recursive: true, force: true }));
  // `npx s3edge` is this build, as npx gives it in the folder of `npm ci` (the test below); README has no
  // other npx command, and one added fails here until this file knows how to run it.
  const wrapper = join(work, 'bin', 'npx');
  await writeFile(
    wrapper,
    `#!/bin/sh\n# Without tap's NODE_OPTIONS (test/helpers/child-env.ts).\n` +
      `if [ "$1" = s3edge ]; then shift; exec env -u NODE_OPTIONS "${process.execPath}" "${S3EDGE_BIN}" "$@"; fi\necho "readme.test runs npx s3edge only, not npx $1" >&2\nexit 127\n`,
  );
  await chmod(wrapper, 0o755);
  const cwd = join(work, 'home');
  await mkdir(cwd);
  await writeFile(join(cwd, 'cat.jpg'), Buffer.from([0xff, 0xd8, 0xff, 0xe0, ...Buffer.from('a cat, more or less')]));

  const server = await startServer({ dataDir: join(cwd, 'data') });
  t.teardown(() => server.stop());

  const env = childProcessEnv();
  for (const k of Object.keys(env)) if (/^(AWS_|BOTO)/.test(k)) delete env[k];
  Object.assign(env, { PATH: `${join(work, 'bin')}:${process.env.PATH ?? ''}`, HOME: cwd, AWS_CONFIG_FILE: join(cwd, 'no-aws-config') });
  const values: Record<string, string> = {
    '<root access key>': server.rootKey.accessKeyId,
    '<root secret key>': server.rootKey.secretAccessKey,
  };

  /** Variables an earlier README line set: the only ones a line may use. */
  const setByReadme = new Set<string>();
  for (const written of commands.slice(2)) {
    let command = written.replaceAll(README_PORT, server.url);
    for (const [placeholder, value] of Object.entries(values)) command = command.replaceAll(placeholder, value);
    const unknown = /<[A-Za-z][^>]*>/.exec(command.replace(/<</g, ''));
    if (unknown) {
      t.fail(`README: ${written}: the placeholder ${unknown[0]} has no value from an earlier command`);
      continue;
    }
    const unset = variablesUsed(command).filter((name) => !setByReadme.has(name));
    if (unset.length > 0) {
      t.fail(`README: ${written}: uses $${unset.join(', $')}, which no earlier README line sets`);
      continue;
    }
    // `export A=x B=y` and `NAME=$(command)`: run as written, and keep what they set for later lines.
    const assigned = /^export\s+/.test(command)
      ? [...command.matchAll(/\s([A-Z_][A-Z0-9_]*)=/g)].map((m) => m[1] as string)
      : /^([A-Za-z_][A-Za-z0-9_]*)=\S/.exec(command)?.slice(1, 2) ?? [];
    if (assigned.length > 0) {
      const shown = assigned.map((name) => `printf '%s\\0' "$${name}"`).join('; ');
      const r = await run('bash', ['-c', `${command} || exit $?\n${shown}`], { env, cwd, timeoutMs: 60_000 });
      t.equal(r.code, 0, `README: ${written}\n${r.stderr}`);
      const got = r.stdout.split('\0');
      for (const [i, name] of assigned.entries()) {
        const value = got[i] ?? '';
        t.not(value, '', `README: ${written}: sets ${name}`);
        env[name] = value;
        setByReadme.add(name);
      }
      continue;
    }
    const r: RunResult = await run('bash', ['-c', command], { env, cwd, timeoutMs: 60_000 });
    t.equal(r.code, 0, `README: ${written}\n${r.stdout}${r.stderr}`);
    if (command.startsWith('curl ')) t.match(r.stdout, /"success":true/, `README: ${written}: the API says success`);
    // What a reader takes from an output for a later line.
    const accessKeyId = /^accessKeyId:\s+(\S+)$/m.exec(r.stdout)?.[1];
    if (written.startsWith('npx s3edge access-keys create') && accessKeyId) values['<ACCESS_KEY_ID>'] = accessKeyId;
  }
  t.ok(values['<ACCESS_KEY_ID>'], 'the access key placeholder was filled from access-keys create');
  t.match(env['TOKEN'], /^s3e_/, "TOKEN is an API token, set by README's own line");
});

t.test("README's `npx s3edge` works in the folder of `npm ci`, with nothing installed globally or fetched", async (t) => {
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const r = await run('npx', ['--no-install', 's3edge', '--version'], { env: childProcessEnv(), cwd: root, timeoutMs: 60_000 });
  t.equal(r.code, 0, `npx --no-install s3edge --version\n${r.stderr}`);
  t.match(r.stdout, /^s3edge \d+\.\d+\.\d+/);
});
