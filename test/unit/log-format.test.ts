import t from 'tap';
import { PassThrough } from 'node:stream';
import { loadConfig } from '../../src/config/load.js';
import { prettyDestination, prettyLine } from '../../src/log-format.js';
import { pino } from 'pino';

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
