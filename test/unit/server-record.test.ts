// Whether the server that wrote the settings record still runs, as an admin command (another process)
// tells it: real processes, real pids, this host.
import t from 'tap';
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { isRunning, processStartTime, sameStart, thisServer } from '../../src/server-record.js';

const endpoints = { s3: 'http://127.0.0.1:1', s3Tls: null, cdn: 'http://cdn.localhost:2', region: 'eu-west-1' };

t.test('this process, as a server records it, is running', async (t) => {
  const record = thisServer(endpoints, new Date(1000));
  t.match(record, { ...endpoints, pid: process.pid, host: hostname(), startedAt: 1000, stoppedAt: null });
  t.equal(isRunning(record), true);
  t.ok(sameStart(record, { ...record }), 'the same start');
  t.notOk(sameStart(record, { ...record, startedAt: 1001 }), 'a later start is another');
});

t.test('a clean stop, a process that is gone, a reused pid: not running', async (t) => {
  const record = thisServer(endpoints, new Date());
  t.equal(isRunning({ ...record, stoppedAt: Date.now() }), false, 'stopped cleanly');
  const child = spawn(process.execPath, ['-e', '']);
  const pid = child.pid as number;
  await new Promise((resolve) => child.once('exit', resolve));
  t.equal(isRunning({ ...record, pid }), false, 'its pid is gone');
  if (processStartTime(process.pid) !== undefined) {
    t.equal(isRunning({ ...record, processStart: '1' }), false, 'a live pid that started at another time is another process');
  }
});

t.test('another host, or a record without who wrote it: cannot tell', async (t) => {
  const record = thisServer(endpoints, new Date());
  t.equal(isRunning({ ...record, host: `${hostname()}-elsewhere` }), undefined);
  t.equal(isRunning({ s3: endpoints.s3, s3Tls: null, cdn: endpoints.cdn }), undefined);
});
