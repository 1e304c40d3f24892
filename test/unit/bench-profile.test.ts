// The bench's profile summary: self and inclusive time per function from a V8 CPU profile.
import t from 'tap';
import { summariseProfile } from '../../bench/src/profile.js';

const frame = (functionName: string, url = '', lineNumber = 0): { functionName: string; url: string; lineNumber: number } => ({ functionName, url, lineNumber });

t.test('self and inclusive percentages; idle and the root stay out of the rankings', async (t) => {
  const profile = {
    nodes: [
      { id: 1, callFrame: frame('(root)'), children: [2, 3] },
      { id: 2, callFrame: frame('(idle)') },
      { id: 3, callFrame: frame('handle', 'file:///app/dist/src/h.js', 9), children: [4] },
      { id: 4, callFrame: frame('writev') },
    ],
    // 10 ms idle, 30 ms in handle itself, 60 ms in writev under handle.
    samples: [2, 3, 4, 4],
    timeDeltas: [10_000, 30_000, 30_000, 30_000],
  };
  const s = summariseProfile(profile);
  t.equal(s.totalMs, 100);
  t.equal(s.idlePct, 10);
  t.same(s.self, [{ fn: 'writev', pct: 60 }, { fn: 'handle h.js:10', pct: 30 }]);
  t.same(s.inclusive, [{ fn: 'handle h.js:10', pct: 90 }, { fn: 'writev', pct: 60 }]);
});
