import t from 'tap';
import { spawnSync } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { loadConfig } from '../../src/config/load.js';
import { createLogger, LOG_WRITE_BYTES, prettyDestination, prettyLine } from '../../src/log-format.js';
import { pino, symbols } from 'pino';
import { childProcessEnv, nodeCommand } from '../helpers/child-env.js';

t.test('logFormat: json by default, pretty by S3EDGE_LOG_FORMAT, nothing else', async (t) => {
  t.equal(loadConfig({ env: {} }).logFormat, 'json');
  t.equal(loadConfig({ env: { S3EDGE_LOG_FORMAT: 'pretty' } }).logFormat, 'pretty');
  t.throws(() => loadConfig({ env: { S3EDGE_LOG_FORMAT: 'xml' } }), /^config: logFormat/);
});

t.test('a pino line becomes time, level, message and key=value pairs', async (t) => {
  const time = Date.parse('2026-11-21T12:30:05.123Z');
  const line = JSON.stringify({ level: 30, time, pid: 1, hostname: 'h', surface: 's3', status: 403, errorCode: 'AccessDenied', key: 'a b', bucket: null, msg: 's3 request' });
  t.equal(prettyLine(line), '12:30:05.123 INFO  s3 request surface=s3 status=403 errorCode=AccessDenied key="a b" bucket=null\n');
  t.equal(prettyLine('not json'), 'not json\n', 'anything else passes through');
  t.match(prettyLine(line, true), /\x1b\[32mINFO \x1b\[0m/, 'the level coloured on a terminal');
});

t.test('an error keeps its stack, on the lines below', async (t) => {
  const out = new PassThrough();
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  const log = pino({ level: 'info' }, prettyDestination(out));
  log.error({ err: new Error('boom'), requestId: 'R1' }, 'internal error');
  t.match(text, /^\d\d:\d\d:\d\d\.\d{3} ERROR internal error requestId=R1\n    Error: boom\n +at /);
  t.equal(text.split('\n').filter((l) => !l.startsWith('    ')).length, 2, 'one line, then the stack, then the end');
});

t.test('the asynchronous JSON destination loses no line at exit, nor at a crash', async (t) => {
  const logFormat = new URL('../../src/log-format.js', import.meta.url).href;
  const script = (end: string): string =>
    `import { createLogger } from ${JSON.stringify(logFormat)};` +
    `const log = createLogger({ logLevel: 'info', logFormat: 'json' });` +
    `for (let i = 0; i < 5000; i++) log.info({ i }, 'line');` +
    end;
  for (const [what, end, code] of [
    ['process.exit', 'process.exit(3);', 3],
    ['an uncaught exception', "setImmediate(() => { throw new Error('crash'); });", 1],
  ] as const) {
    const [cmd, args] = nodeCommand(['--input-type=module', '-e', script(end)]);
    const run = spawnSync(cmd, args, { encoding: 'utf8', env: childProcessEnv(), maxBuffer: 64 * 1024 * 1024 });
    t.equal(run.status, code, `${what}: exit code`);
    const lines = run.stdout.split('\n').filter((l) => l !== '');
    t.equal(lines.length, 5000, `${what}: every line written`);
    t.same(JSON.parse(lines[4999] ?? '{}')['i'], 4999, `${what}: the last line whole`);
  }
});

t.test('the JSON destination hands the kernel what piled up during a write, up to 1 MiB at once', async (t) => {
  // Its default, 16 KiB, let a backlog of lines build up under load (src/log-format.ts LOG_WRITE_BYTES).
  const log = createLogger({ logLevel: 'silent', logFormat: 'json' });
  const stream = (log as unknown as Record<symbol, { maxWrite: number; sync: boolean }>)[symbols.streamSym];
  t.equal(stream?.maxWrite, LOG_WRITE_BYTES);
  t.equal(LOG_WRITE_BYTES, 1024 * 1024);
  t.equal(stream?.sync, false, 'asynchronous');
});
