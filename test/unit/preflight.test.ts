// The npm test preflight (test/preflight.ts): one line naming every missing tool and how to install it.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { missingToolsLine, TEST_TOOLS } from '../preflight.js';

const SCRIPT = fileURLToPath(new URL('../preflight.js', import.meta.url));

t.test('nothing missing: no line', async (t) => {
  t.equal(missingToolsLine([{ name: 'node', probe: [process.execPath, '--version'], apt: 'nodejs' }]), undefined);
});

t.test('missing tools: one line with their names, the apt-get command and the other installs', async (t) => {
  const line = missingToolsLine([
    { name: 'node', probe: [process.execPath, '--version'], apt: 'nodejs' },
    { name: 'rclone', probe: ['s3edge-no-such-rclone', 'version'], apt: 'rclone' },
    { name: 'restic', probe: ['s3edge-no-such-restic', 'version'], apt: 'restic' },
    { name: 'boto3', probe: [process.execPath, '-e', 'process.exit(3)'], other: 'pip install boto3' },
  ]);
  t.equal(line, 'npm test needs rclone, restic, boto3, which this machine lacks: install with sudo apt-get install -y rclone restic && pip install boto3');
});

t.test('the script on a machine without any of the tools: exit 1, one line on stderr', async (t) => {
  const r = spawnSync(process.execPath, [SCRIPT], { env: { PATH: '/nonexistent' }, encoding: 'utf8' });
  t.equal(r.status, 1);
  t.equal(r.stdout, '');
  const lines = r.stderr.trimEnd().split('\n');
  t.equal(lines.length, 1, 'one line');
  for (const tool of TEST_TOOLS) t.match(lines[0], tool.name, `names ${tool.name}`);
  t.match(lines[0], /sudo apt-get install -y curl openssl rclone s3cmd restic python3/);
  t.match(lines[0], / wrk pebble && pip install /, 'pebble (the ACME tests\' CA) among the Debian packages');
});

t.test('the script on this machine (which has them, as npm test just checked): silent, exit 0', async (t) => {
  const r = spawnSync(process.execPath, [SCRIPT], { encoding: 'utf8' });
  t.same([r.status, r.stdout, r.stderr], [0, '', '']);
});
