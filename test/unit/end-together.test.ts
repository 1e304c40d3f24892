// Answers ended together at the end of the event loop's turn (src/http/end-together.ts), on a real
// node:http server over keep-alive sockets: every client gets its own whole answer, in order on each
// connection; an answer is ended only once its turn's handlers ran, at most MAX_TOGETHER at a time; a
// client gone before its end costs nothing but its answer.
import t, { type Test } from 'tap';
import { createServer, Agent, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { endTogether, MAX_TOGETHER, writeTogether } from '../../src/http/end-together.js';

function get(port: number, path: string, agent: Agent): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function serve(t: Test, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<number> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

t.test('every answer whole and its own, ended after the handlers of its turn, at most MAX_TOGETHER at once', async (t) => {
  const endedInHandler: boolean[] = [];
  let mostWaiting = 0;
  let waiting = 0;
  const port = await serve(t, (req, res) => {
    const body = Buffer.from(`answer to ${req.url}`);
    res.writeHead(200, ['content-length', String(body.length), 'content-type', 'text/plain']);
    waiting++;
    mostWaiting = Math.max(mostWaiting, waiting);
    res.once('finish', () => waiting--);
    endTogether(res, body);
    endedInHandler.push(res.writableEnded);
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  t.teardown(() => agent.destroy());
  const paths = Array.from({ length: 400 }, (_, i) => `/o${i}`);
  const answers = await Promise.all(paths.map((p) => get(port, p, agent)));
  t.same(answers.map((a) => a.body), paths.map((p) => `answer to ${p}`), 'each request its own answer');
  t.ok(answers.every((a) => a.status === 200));
  t.equal(endedInHandler.filter((e) => e).length, 0, 'no answer ended inside its handler below the bound');
  t.ok(mostWaiting <= MAX_TOGETHER, `never more than ${MAX_TOGETHER} waiting (${mostWaiting})`);
});

t.test('past MAX_TOGETHER waiting, they are ended at once', async (t) => {
  // Every answer held until the last request arrives; its handler queues them all in one turn.
  const held: ServerResponse[] = [];
  const port = await serve(t, (_req, res) => {
    res.writeHead(200, ['content-type', 'text/plain']);
    held.push(res);
    if (held.length < MAX_TOGETHER + 1) return;
    // All answers in one turn: the bound ends the first MAX_TOGETHER as the last one is queued.
    for (const r of held.slice(0, MAX_TOGETHER)) endTogether(r, 'b');
    t.ok(held.slice(0, MAX_TOGETHER).every((r) => r.writableEnded), 'the bound reached: ended at once');
    endTogether(res, 'b');
    t.notOk(res.writableEnded, 'one more waits for the turn to end');
  });
  const agent = new Agent({ keepAlive: true, maxSockets: MAX_TOGETHER + 1 });
  t.teardown(() => agent.destroy());
  const answers = await Promise.all(Array.from({ length: MAX_TOGETHER + 1 }, (_, i) => get(port, `/${i}`, agent)));
  t.ok(answers.every((a) => a.status === 200 && a.body === 'b'), 'every one answered');
});

t.test('a client gone before its answer ends: nothing thrown, the server answers the next', async (t) => {
  let gone: Promise<void> | undefined;
  const port = await serve(t, (req, res) => {
    res.writeHead(200, ['content-type', 'text/plain']);
    if (req.url === '/leave') {
      // The client's socket closes before the turn ends.
      gone = new Promise((resolve) => res.once('close', () => resolve()));
      req.socket.destroy();
    }
    endTogether(res, 'ok');
  });
  const agent = new Agent({ keepAlive: false });
  t.teardown(() => agent.destroy());
  await t.rejects(get(port, '/leave', agent), 'the client sees its connection end');
  await gone;
  t.same(await get(port, '/next', agent), { status: 200, body: 'ok' });
});

t.test("a caller's own writes run at the turn's end, in order, with the answers", async (t) => {
  const ran: string[] = [];
  const port = await serve(t, (req, res) => {
    res.writeHead(200, ['content-type', 'text/plain', 'transfer-encoding', 'chunked']);
    writeTogether(() => {
      ran.push(`write ${req.url}`);
      res.write('first ');
    });
    endTogether(res, 'last');
    ran.push(`queued ${req.url}`);
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  t.same(await get(port, '/a', agent), { status: 200, body: 'first last' }, 'the write before the end, as queued');
  t.same(ran, ['queued /a', 'write /a'], 'run after the handler returned');
});
