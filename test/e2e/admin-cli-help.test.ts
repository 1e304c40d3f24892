// The admin CLI's help, usage texts and suggestions, from the real CLI process (test/helpers/cli.ts).
import t from 'tap';
import { readdirSync } from 'node:fs';
import { tempDir } from '../helpers/temp-data.js';
import { startServer } from '../helpers/server.js';
import { assertClean, runS3edge } from '../helpers/cli.js';

t.test('help exits 0', async (t) => {
  for (const args of [['users', '--help'], ['access-keys', 'create', '--help']]) {
    const r = await runS3edge(args);
    t.equal(r.code, 0, args.join(' '));
    t.match(r.stdout, /usage:/);
  }
});

const GROUPS = ['users', 'account-keys', 'access-keys', 'api-keys', 'buckets', 'spaces', 'credits'];

t.test('s3edge, s3edge --help and s3edge help: the whole command list, grouped; nothing started or created', async (t) => {
  const cwd = tempDir(t);
  const outputs: string[] = [];
  for (const args of [[], ['--help'], ['-h'], ['help']]) {
    const r = await runS3edge(args, {}, cwd);
    t.same([r.code, r.stderr], [0, ''], `s3edge ${args.join(' ')}: exit 0, quiet stderr`);
    outputs.push(r.stdout);
  }
  t.equal(new Set(outputs).size, 1, 'the same list every way');
  const list = outputs[0] ?? '';
  for (const section of ['Server:', 'Accounts and keys:', 'Buckets:', 'Spaces and credits:']) t.match(list, `\n${section}\n`, section);
  t.match(list, /^  serve /m, 'serve');
  for (const group of GROUPS) t.match(list, new RegExp(`^  ${group} [a-z|-]+ `, 'm'), `${group} with its actions`);
  t.match(list, /^  buckets create\|list\|public\|private\|set-quota\|delete /m);
  t.same(readdirSync(cwd), [], 'no ./data: help starts no server');
});

t.test('help and --version with --json: the same content as JSON', async (t) => {
  const cwd = tempDir(t);
  const text = await runS3edge(['--help'], {}, cwd);
  const outputs: string[] = [];
  for (const args of [['help', '--json'], ['--help', '--json'], ['--json', '--help'], ['-h', '--json']]) {
    const r = await runS3edge(args, {}, cwd);
    t.same([r.code, r.stderr], [0, ''], `s3edge ${args.join(' ')}: exit 0, quiet stderr`);
    outputs.push(r.stdout);
  }
  t.equal(new Set(outputs).size, 1, 'the same JSON every way');
  const help = JSON.parse(outputs[0] ?? '') as { version: string; usage: string; commands: { section: string; command: string; summary: string }[] };
  t.match(help.version, /^\d+\.\d+\.\d+$/);
  t.ok(help.commands.length > GROUPS.length, 'every command');
  for (const c of help.commands) t.ok(text.stdout.includes(`  ${c.command}`) && text.stdout.includes(c.summary), `${c.command}: as in the text list`);
  t.match(help.commands, [{ section: 'Server', command: 'serve' }]);
  const version = await runS3edge(['--version', '--json'], {}, cwd);
  const stamp = JSON.parse(version.stdout) as { version: string; commit: string | null; node: string };
  t.same([version.code, Object.keys(stamp), stamp.version, stamp.node], [0, ['version', 'commit', 'node'], help.version, process.versions.node], '--version --json, with the Node.js it runs on');
  // A git checkout names its commit (-dirty with uncommitted changes); a tree without .git has null.
  t.ok(stamp.commit === null || /^[0-9a-f]{40}(-dirty)?$/.test(stamp.commit), `commit ${stamp.commit}`);
  t.same(readdirSync(cwd), [], 'nothing created');
});

t.test('<command> --help explains it with an example; help COMMAND is the same', async (t) => {
  for (const group of GROUPS) {
    const r = await runS3edge([group, '--help']);
    t.equal(r.code, 0, `${group} --help`);
    t.match(r.stdout, /example: s3edge /, `${group}: an example`);
    t.same((await runS3edge(['help', group])).stdout, r.stdout, `help ${group}`);
  }
  const one = await runS3edge(['access-keys', 'create', '--help']);
  t.match(one.stdout, /s3edge access-keys create --bucket NAME --permission read\|read_write/);
  t.match(one.stdout, /example: s3edge access-keys create --bucket photos --permission read_write/);
  t.notMatch(one.stdout, /access-keys list/, 'one command only');
  const serve = await runS3edge(['serve', '--help']);
  t.equal(serve.code, 0);
  t.match(serve.stdout, /usage: s3edge serve \[options\]/);
  t.match(serve.stdout, /--data-dir DIR/);
  t.match(serve.stdout, /example: s3edge serve /);
  t.same((await runS3edge(['help', 'serve'])).stdout, serve.stdout, 'help serve');
  const version = await runS3edge(['--version']);
  t.match(version.stdout, /^s3edge \d+\.\d+\.\d+( \(commit [0-9a-f]{12}(-dirty)?\))? on Node\.js \d+\.\d+\.\d+\n$/);
});

t.test('unknown commands and options suggest the closest one', async (t) => {
  const cases: [string[], RegExp][] = [
    [['sevre'], /unknown command 'sevre'\. Did you mean 'serve'\?/],
    [['acess-keys', 'list'], /unknown command 'acess-keys'\. Did you mean 'access-keys'\?/],
    [['buckets', 'craete', 'x'], /unknown command 'buckets craete'\. Did you mean 'buckets create'\?/],
    [['access-keys', 'create', '--bukcet', 'b', '--permission', 'read'], /Unknown option '--bukcet'\. Did you mean '--bucket'\?/],
    [['users', 'list', '--data-dri', 'x'], /Unknown option '--data-dri'\. Did you mean '--data-dir'\?/],
    [['serve', '--prot', '9000'], /unknown option '--prot'\. Did you mean '--port'\?/],
    [['--port', '9000'], /'--port' is an option, not a command\. To start the server with it: s3edge serve --port 9000/],
    // Mistyped top-level options get the top-level option, never a serve command that fails in turn.
    [['--hepl'], /^s3edge: unknown option '--hepl'\. Did you mean '--help'\?\n/],
    [['--verison'], /^s3edge: unknown option '--verison'\. Did you mean '--version'\?\n/],
    [['--prot', '9000'], /^s3edge: unknown option '--prot'\. Did you mean 's3edge serve --port 9000'\?\n/],
    [['--json', '--data-dri=x'], /^s3edge: unknown option '--data-dri'\. Did you mean 's3edge serve --json --data-dir=x'\?\n/],
    [['--frobnicate'], /^s3edge: unknown option '--frobnicate'\.\n/],
    [['--data-dir', 'x', 'users', 'list'], /^s3edge: options go after the command: s3edge users list --data-dir x\n/],
  ];
  const suggestions: string[] = [];
  for (const [args, message] of cases) {
    const r = await runS3edge(args);
    t.equal(r.code, 2, `${args.join(' ')}: exit 2`);
    t.match(r.stderr, message, `${args.join(' ')}: suggests`);
    assertClean(t, r, args.join(' '));
    suggestions.push(r.stderr);
  }
  // Every serve command line this test suggests is one serve accepts: with --help it answers 0.
  let checked = 0;
  for (const stderr of suggestions) {
    const suggested = /(?:start the server with it: |Did you mean ')(s3edge serve [^'\n]*)/.exec(stderr)?.[1];
    if (suggested === undefined) continue;
    const check = await runS3edge([...suggested.split(' ').slice(1), '--help']);
    t.equal(check.code, 0, `'${suggested}' is a valid serve command line`);
    checked++;
  }
  t.equal(checked, 3, 'three serve command lines suggested, and checked');
  const far = await runS3edge(['frobnicate']);
  t.notMatch(far.stderr, /Did you mean/, 'nothing close: no suggestion');
});

t.test('a value that starts with a dash is the option\'s value, rejected by validation with the key named', async (t) => {
  const cwd = tempDir(t);
  const cases: [string[], string][] = [
    [['serve', '--max-object-size', '-5'], 's3edge: config: maxObjectSize must be >= 1 (got -5)\n'],
    [['serve', '--port', '-1'], 's3edge: config: port must be >= 0 (got -1)\n'],
    [['serve', '--max-object-size', '-5MiB'], 's3edge: config: maxObjectSize must be a size like 256MiB, 10GB or a number of bytes (got "-5MiB")\n'],
    [['serve', '--cdn-country-header', 'bad header'], 's3edge: config: cdn.countryHeader must be a header name: letters (any case), digits and hyphens, at most 64, or empty for none (got "bad header")\n'],
    [['users', 'list', '--port', '-1'], 's3edge: config: port must be >= 0 (got -1)\n'],
  ];
  for (const [args, stderr] of cases) {
    const r = await runS3edge(args, {}, cwd);
    t.same([r.code, r.stderr], [2, stderr], args.join(' '));
  }
  // A header name in any case is accepted: the server starts with it.
  const server = await startServer({ env: { S3EDGE_CDN_COUNTRY_HEADER: 'CF-IPCountry' } });
  t.teardown(() => server.stop());
  t.ok(server.url, 'CF-IPCountry starts the server');
  // An option after one that needs a value is still an option: the value is missing.
  const forgot = await runS3edge(['serve', '--data-dir', '--json'], {}, cwd);
  t.equal(forgot.code, 2, 'serve --data-dir --json: exit 2');
  t.match(forgot.stderr, /--data-dir/, 'names the option that lacks its value');
  t.same(readdirSync(cwd), [], 'nothing created');
});
