// Reading an RDAP answer, and the circuit breaker, as tables over an injected clock.
import t from 'tap';
import { CircuitBreaker } from '../../src/net/circuit-breaker.js';
import { OutboundError } from '../../src/net/outbound-client.js';
import { interpretAnswer, interpretFailure } from '../../src/domains/availability/rdap-answer.js';

const json = (o: unknown): Buffer => Buffer.from(JSON.stringify(o));
const domain = (ldhName: unknown, objectClassName: unknown = 'domain'): Buffer => json({ objectClassName, ldhName });

t.test('answers', async (t) => {
  const rows: [number, Buffer, unknown][] = [
    [200, domain('example.com'), { kind: 'registered' }],
    [200, domain('EXAMPLE.COM'), { kind: 'registered' }],
    [200, domain('example.com.'), { kind: 'registered' }],
    [200, domain('other.com'), { kind: 'unknown', reason: 'bad-answer' }],
    [200, domain('example.com', 'entity'), { kind: 'unknown', reason: 'bad-answer' }],
    [200, domain(undefined), { kind: 'unknown', reason: 'bad-answer' }],
    [200, json([]), { kind: 'unknown', reason: 'bad-answer' }],
    [200, json(null), { kind: 'unknown', reason: 'bad-answer' }],
    [200, Buffer.from('<html>'), { kind: 'unknown', reason: 'bad-answer' }],
    [404, json({ errorCode: 404 }), { kind: 'not-found' }],
    [404, Buffer.from(''), { kind: 'not-found' }],
    [429, Buffer.from(''), { kind: 'unknown', reason: 'rate-limited' }],
    [500, Buffer.from(''), { kind: 'unknown', reason: 'server-error' }],
    [502, Buffer.from(''), { kind: 'unknown', reason: 'server-error' }],
    [503, Buffer.from(''), { kind: 'unknown', reason: 'server-error' }],
    [302, Buffer.from(''), { kind: 'unknown', reason: 'bad-answer' }],
    [400, Buffer.from(''), { kind: 'unknown', reason: 'bad-answer' }],
    [403, Buffer.from(''), { kind: 'unknown', reason: 'bad-answer' }],
  ];
  for (const [status, body, want] of rows) t.same(interpretAnswer(status, body, 'example.com'), want, `${status} ${body.toString().slice(0, 40)}`);
});

t.test('failures', async (t) => {
  const rows: [unknown, string][] = [
    [new OutboundError('timeout', 'x'), 'timeout'],
    [new OutboundError('aborted', 'x'), 'timeout'],
    [new OutboundError('too-large', 'x'), 'bad-answer'],
    [new OutboundError('redirect', 'x'), 'bad-answer'],
    [new OutboundError('bad-url', 'x'), 'bad-answer'],
    [new OutboundError('address-refused', 'x'), 'address-refused'],
    [new OutboundError('network', 'x'), 'unreachable'],
    [new Error('anything else'), 'server-error'],
  ];
  for (const [err, want] of rows) t.equal(interpretFailure(err), want, (err as Error).message);
});

t.test('breaker: opens after N consecutive failures, one probe after the cooldown, success closes', async (t) => {
  let now = 0;
  const b = new CircuitBreaker({ failures: 3, cooldownMs: 30_000, now: () => now });
  b.failure('a');
  b.failure('a');
  b.success('a');
  b.failure('a');
  b.failure('a');
  t.ok(b.allow('a'), 'a success in between resets the count');
  b.failure('a');
  t.notOk(b.allow('a'), 'third consecutive failure opens it');
  t.ok(b.isOpen('a'));
  t.ok(b.allow('b'), 'per key');
  now += 29_999;
  t.notOk(b.allow('a'));
  now += 1;
  t.ok(b.allow('a'), 'the probe');
  t.notOk(b.allow('a'), 'only one probe per cooldown');
  b.failure('a');
  t.notOk(b.allow('a'), 'a failed probe opens it again');
  now += 30_000;
  t.ok(b.allow('a'));
  b.success('a');
  t.ok(b.allow('a'));
  t.ok(b.allow('a'), 'closed');
  t.notOk(b.isOpen('a'));
});
