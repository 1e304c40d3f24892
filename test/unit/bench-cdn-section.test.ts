// bench: the CDN section of the report (s3edge's CDN vs nginx, ratios) and how a CDN-only run puts it
// into an existing bench/RESULTS.md without touching the rest.
import t from 'tap';
import { CDN_HEADING, renderCdnSection, spliceSection, type BenchResult, type CellResult } from '../../bench/src/report.js';

function cell(target: 's3edge' | 'nginx', size: number, concurrency: number, opsPerSec: number, p99Ms: number): CellResult {
  return {
    workload: 'CDN', size, concurrency, target, rounds: [], opsPerSec, mbPerSec: (opsPerSec * size) / 1e6, p50Ms: p99Ms / 2, p99Ms,
    rssMaxKiB: 1, otherCpu: 0, cpuUsPerOp: 100, ops: 1, errors: 0, spread: 0, bound: '3 s',
  };
}

const result: BenchResult = {
  mode: 'full', started: '2026-11-21T20:00:00.000Z', durationMs: 60_000, rounds: 3, roundMs: 3000, command: 'node bench/dist/main.js --workloads CDN',
  versions: { node: 'v20', s3edge: '0.1.0 (abc)', nginx: '1.26' }, loadAvg: [0, 0],
  plan: { listObjects: {}, listPage: 1000, large: 1, small: 4096, idleConnections: 1, streamedUploadBytes: 1 },
  cells: [cell('s3edge', 4096, 16, 5000, 8), cell('nginx', 4096, 16, 20000, 2), cell('s3edge', 1048576, 1, 500, 4)],
  cdnLog: { flushed: 123, dropped: 0, buffered: 4 },
  figures: [], notes: [],
};

t.test('the CDN section: both targets, ratios, n/a for a missing peer, the request log counters', async (t) => {
  const section = renderCdnSection(result, true);
  t.ok(section.startsWith(`${CDN_HEADING}\n`));
  t.match(section, /Machine: /, 'a standalone section names its machine');
  t.match(section, /\| 4 KiB \| 16 \| 5000 \| 20000 \| 0\.25x \| 20\.5 \| 81\.9 \| 8\.00 \| 2\.00 \| 4\.00x \|/);
  t.match(section, /\| 1 MiB \| 1 \| 500 \| n\/a \| n\/a \| 524 \| n\/a \| 4\.00 \| n\/a \| n\/a \|/);
  t.match(section, /wrote 123 requests to SQLite, dropped 0/);
  t.match(section, /reported no statistics/);
  t.match(section, /Other processes used up to 0\.00 of the 2 cores during these rounds\./);
  t.equal(renderCdnSection({ ...result, cells: [] }, false), '', 'no CDN cells, no section');
});

t.test('spliceSection replaces an old CDN section, or goes before the method, or at the end', async (t) => {
  const section = `${CDN_HEADING}\n\nnew\n`;
  const doc = '# r\n\n## Every workload\n\nrows\n\n## How it was measured\n\n- m\n';
  const inserted = spliceSection(doc, section);
  t.equal(inserted, `# r\n\n## Every workload\n\nrows\n\n${CDN_HEADING}\n\nnew\n\n## How it was measured\n\n- m\n`);
  t.equal(
    spliceSection(inserted, `${CDN_HEADING}\n\nnewer\n\n`),
    `# r\n\n## Every workload\n\nrows\n\n${CDN_HEADING}\n\nnewer\n\n## How it was measured\n\n- m\n`,
    'replaced, the rest untouched',
  );
  t.equal(spliceSection('# r\n\ntext\n', section), `# r\n\ntext\n\n${section}`, 'appended');
  t.equal(spliceSection(`# r\n\n${CDN_HEADING}\n\nold\n`, section), `# r\n\n${section}`, 'the last section replaced');
  t.equal(spliceSection('', section), section);
});
