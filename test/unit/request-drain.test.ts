import t from 'tap';
import { drainLimitsFor } from '../../src/http/request-drain.js';

const MiB = 1024 * 1024;

t.test('a refused upload is drained whole when we could have stored its announced size', async (t) => {
  t.same(drainLimitsFor(40 * MiB, 5 * 1024 * MiB), { bytes: 40 * MiB, ms: 2000 }, 'announced and storable: all of it');
  t.same(drainLimitsFor(100, 5 * 1024 * MiB), { bytes: 8 * MiB, ms: 2000 }, 'never below 8 MiB');
  t.same(drainLimitsFor(6 * 1024 * MiB, 5 * 1024 * MiB), { bytes: 8 * MiB, ms: 2000 }, 'too large to store: 8 MiB');
  t.same(drainLimitsFor(undefined, 5 * 1024 * MiB), { bytes: 8 * MiB, ms: 2000 }, 'chunked: 8 MiB');
});
