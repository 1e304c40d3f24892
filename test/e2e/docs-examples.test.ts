// The examples of docs/*.md marked runnable, run as written (README.md's are readme.test's): for each page,
// its ` ```sh runnable` lines, ` ```ini runnable <file>` config files and ` ```python runnable` scripts, in
// the order the page gives them, in a fresh home folder beside a fresh server whose data directory is
// ./data there, as a reader who follows the page from the top would. `s3edge` is this build
// (test/helpers/doc-commands.ts). The liberties, all a reader's own: the server's address for the
// 127.0.0.1:9000 a page shows; the key pair and ids earlier commands printed for the placeholders a page
// names (AKEXAMPLE, SECRET, <id>); a password in $PASSWORD; the files the examples upload. A runnable
// block this file cannot run fails it, so a page gains no runnable example that does not work.
import t, { type Test } from 'tap';
import { chmod, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childProcessEnv } from '../helpers/child-env.js';
import { runCli, startServer } from '../helpers/server.js';
import { codeBlocksOf, commandsOf, DocShell, type CodeBlock, type Take } from '../helpers/doc-commands.js';

const DOCS = fileURLToPath(new URL('../../../docs/', import.meta.url));
const DOC_PORT = '127.0.0.1:9000';

/** Values the pages tell the reader to take from an earlier command's output. */
const TAKES: Take[] = [
  { placeholder: 'AKEXAMPLE', after: /^s3edge access-keys create /, value: /^accessKeyId:\s+(\S+)$/m },
  { placeholder: 'SECRET', after: /^s3edge access-keys create /, value: /^secretAccessKey:\s+(\S+)$/m },
  { placeholder: '<id>', after: /^s3edge api-keys create .*--json/, value: /"id":\s*"([^"]+)"/ },
];

/** A 1x1 PNG: what `-F file=@logo.png` uploads. */
const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360f8cfc0f01f0005000201e5270ed80000000049454e44ae426082',
  'hex',
);

/** The reader's own files that the examples upload or back up. */
async function readerFiles(home: string): Promise<void> {
  await mkdir(join(home, 'site', 'css'), { recursive: true });
  await mkdir(join(home, 'documents'), { recursive: true });
  await Promise.all([
    writeFile(join(home, 'cat.jpg'), Buffer.from([0xff, 0xd8, 0xff, 0xe0, ...Buffer.from('a cat, more or less')])),
    writeFile(join(home, 'logo.png'), PNG),
    writeFile(join(home, 'site', 'index.html'), '<!doctype html><title>photos</title><link rel="stylesheet" href="css/site.css">\n'),
    writeFile(join(home, 'site', 'css', 'site.css'), 'body { margin: 0 }\n'),
    writeFile(join(home, 'documents', 'notes.txt'), 'what restic keeps\n'.repeat(100)),
    writeFile(join(home, '.restic-password'), 'a restic repository password\n'),
  ]);
  await chmod(join(home, '.restic-password'), 0o600);
}

const runnable = (block: CodeBlock) => block.info[0] === 'runnable';

type Rows = Record<string, unknown>[];
/** What a page's examples leave behind, read back through the admin CLI: the examples did their work. */
const OUTCOMES: Record<string, (t: Test, cli: (args: string[]) => Promise<unknown>) => Promise<void>> = {
  'API.md': async (t, cli) => {
    const users = (await cli(['users', 'list'])) as Rows;
    t.match(users, [{ name: 'ana', hasPassword: true, quotaBytes: 10 * 1024 ** 3 }, { name: 'ben', hasPassword: false, quotaBytes: null }], 'ana has a password and a storage quota, ben is there');
    const keys = (await cli(['api-keys', 'list', '--user', 'ben'])) as Rows;
    t.same(keys.map((k) => k.name), ['uploads'], 'the deleted key is gone, the uploads key stays');
  },
  'CDN.md': async (t, cli) => {
    t.match(await cli(['buckets', 'list']), [{ name: 'photos', public: false }], 'photos made public, then private again');
  },
  'CLIENTS.md': async (t, cli) => {
    const [photos] = (await cli(['buckets', 'list'])) as Rows;
    // cat.jpg, the site's two files, restic's config, key, index, data and snapshot.
    t.ok(Number(photos?.objects) >= 8, `photos holds what the clients uploaded (${String(photos?.objects)} objects)`);
  },
};

const pages: { name: string; blocks: CodeBlock[] }[] = [];
for (const name of (await readdir(DOCS)).filter((f) => f.endsWith('.md')).sort()) {
  const blocks = codeBlocksOf(await readFile(join(DOCS, name), 'utf8')).filter(runnable);
  if (blocks.length > 0) pages.push({ name, blocks });
}

t.test('the pages with runnable examples', async (t) => {
  // The pages whose examples a reader types first; losing their markers would leave this file nothing to run.
  for (const name of ['API.md', 'CDN.md', 'CLIENTS.md']) t.ok(pages.some((p) => p.name === name), `docs/${name} has runnable examples`);
});

for (const page of pages) {
  t.test(`docs/${page.name}: every runnable example works as written`, async (t) => {
    const home = join(tmpdir(), `s3edge-docs-${process.pid}-${page.name.replace(/\W/g, '-')}`);
    await rm(home, { recursive: true, force: true });
    await mkdir(home, { recursive: true });
    t.teardown(() => rm(home, { recursive: true, force: true }));
    await readerFiles(home);
    const server = await startServer({ dataDir: join(home, 'data') });
    t.teardown(() => server.stop());

    // The reader's environment holds no client settings of its own: the pages' config files are the ones read.
    const env = childProcessEnv();
    for (const k of Object.keys(env)) if (/^(AWS_|BOTO|RCLONE_|RESTIC_|XDG_CONFIG_HOME$)/.test(k)) delete env[k];
    const shell = await DocShell.create({
      home,
      env,
      replace: [
        [`http://${DOC_PORT}`, server.url],
        [DOC_PORT, new URL(server.url).host],
      ],
      takes: TAKES,
      given: { PASSWORD: 'correct horse battery staple' },
    });

    for (const block of page.blocks) {
      const where = `docs/${page.name}:${block.line}`;
      if (block.lang === 'sh') {
        for (const command of commandsOf(block.body)) await shell.command(t, where, command);
      } else if (block.lang === 'ini' && block.info[1]) {
        await shell.writeFile(t, where, block.info[1], block.body);
      } else if (block.lang === 'python') {
        await shell.script(t, where, 'python3', block.body);
      } else {
        t.fail(`${where}: a runnable block of ${block.lang || 'no language'}${block.info[1] ? '' : ' without a file'}: this file runs sh, python and ini files`);
      }
    }
    const outcome = OUTCOMES[page.name];
    if (outcome) {
      await outcome(t, async (args) => {
        const r = await runCli(join(home, 'data'), args);
        t.equal(r.code, 0, `s3edge ${args.join(' ')}\n${r.stderr}`);
        return r.json;
      });
    }
  });
}
