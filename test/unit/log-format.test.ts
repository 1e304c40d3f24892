import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { loadConfig } from '../../src/config/load.js';
import { createLogger, HeldLines, LOG_WRITE_BYTES, prettyDestination, prettyLine, REQUEST_LINES_HELD_BYTES, REQUEST_LINES_HELD_MS } from '../../src/log-format.js';
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

t.test('the asynchronous JSON destination loses no line at exit, nor at a crash, held request lines included', async (t) => {
  const logFormat = new URL('../../src/log-format.js', import.meta.url).href;
  // Request lines (held: lineWriter) and pino's own lines in turn; every tenth is pino's.
  const script = (end: string): string =>
    `import { createLogger, lineWriter } from ${JSON.stringify(logFormat)};` +
    `const log = createLogger({ logLevel: 'info', logFormat: 'json' });` +
    `const lines = lineWriter(log);` +
    `for (let i = 0; i < 5000; i++) i % 10 === 0 ? log.info({ i }, 'line') : lines.write(30, ',"i":' + i, 'cdn request');` +
    end;
  for (const [what, end, code] of [
    ['process.exit', 'process.exit(3);', 3],
    // Once the writes under way have landed (a chunk the thread pool is still writing when the process
    // dies lands after what the exit writes: sonic-boom's, as before request lines were held).
    ['an uncaught exception', "setTimeout(() => { throw new Error('crash'); }, 100);", 1],
    ['the end of the event loop', '', 0],
  ] as const) {
    const [cmd, args] = nodeCommand(['--input-type=module', '-e', script(end)]);
    const run = spawnSync(cmd, args, { encoding: 'utf8', env: childProcessEnv(), maxBuffer: 64 * 1024 * 1024 });
    t.equal(run.status, code, `${what}: exit code`);
    const lines = run.stdout.split('\n').filter((l) => l !== '');
    t.equal(lines.length, 5000, `${what}: every line written`);
    t.same(
      lines.map((l) => (JSON.parse(l) as { i: number }).i),
      Array.from({ length: 5000 }, (_, i) => i),
      `${what}: whole, in the order logged`,
    );
  }
});

t.test('request lines are held up to 64 KiB or 250 ms; any other line takes them along first', async (t) => {
  t.equal(REQUEST_LINES_HELD_BYTES, 64 * 1024);
  t.equal(REQUEST_LINES_HELD_MS, 250);
  const written: string[] = [];
  const front = new HeldLines({ write: (data) => written.push(data), flushSync: () => undefined });
  t.teardown(() => front.release());
  const line = `${'x'.repeat(99)}\n`;
  front.hold(line);
  front.hold(line);
  t.same(written, [], 'held');
  front.write('other\n');
  t.same(written, [line + line, 'other\n'], 'the held lines first, in one write, then the other line');
  written.length = 0;
  const under = Math.ceil(REQUEST_LINES_HELD_BYTES / 100) - 1;
  for (let i = 0; i < under; i++) front.hold(line);
  t.same(written, [], 'just under 64 KiB: held');
  front.hold(line);
  t.equal(written.length, 1, 'at 64 KiB: handed on at once');
  t.equal(written[0]?.length, (under + 1) * 100);
  written.length = 0;
  front.hold(line);
  await new Promise((resolve) => setTimeout(resolve, REQUEST_LINES_HELD_MS + 100));
  t.same(written, [line], 'a quiet moment: handed on when the time is up');
});

t.test('a request line reaches stdout while the process lives on, with no more lines after it', async (t) => {
  // The timer above, in a process that does not end: the line is written while it waits.
  const logFormat = new URL('../../src/log-format.js', import.meta.url).href;
  const script =
    `import { createLogger, lineWriter } from ${JSON.stringify(logFormat)};` +
    `lineWriter(createLogger({ logLevel: 'info', logFormat: 'json' })).write(30, ',"only":true', 'cdn request');` +
    `setTimeout(() => undefined, 60_000);`;
  const [cmd, args] = nodeCommand(['--input-type=module', '-e', script]);
  const child = spawn(cmd, args, { env: childProcessEnv(), stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out);
    });
    child.once('exit', () => reject(new Error(`exited before the line: ${out}`)));
  });
  t.match(JSON.parse(line) as object, { level: 30, only: true, msg: 'cdn request' });
  t.equal(child.exitCode, null, 'written while the process lives');
});

t.test('the JSON destination hands the kernel what piled up during a write, up to 1 MiB at once', async (t) => {
  // Its default, 16 KiB, let a backlog of lines build up under load (src/log-format.ts LOG_WRITE_BYTES).
  const log = createLogger({ logLevel: 'silent', logFormat: 'json' });
  const front = (log as unknown as Record<symbol, HeldLines>)[symbols.streamSym];
  t.ok(front instanceof HeldLines, 'request lines are held in front of it');
  const stream = front?.out as { maxWrite: number; sync: boolean } | undefined;
  t.equal(stream?.maxWrite, LOG_WRITE_BYTES);
  t.equal(LOG_WRITE_BYTES, 1024 * 1024);
  t.equal(stream?.sync, false, 'asynchronous');
});
