// The PATH `npm test` gives tap: pyenv's selected Python before its shims, nothing else changed.
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathPastShims } from '../tool-path.js';

const root = mkdtempSync(join(tmpdir(), 's3edge-tool-path-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
const version = join(root, 'versions', '3.11.7');
mkdirSync(join(version, 'bin'), { recursive: true });

t.test('the selected version’s bin goes right before the shims', async (t) => {
  const path = `/usr/local/bin:${root}/.pyenv/shims:/usr/bin`;
  t.equal(pathPastShims(path, () => version), `/usr/local/bin:${join(version, 'bin')}:${root}/.pyenv/shims:/usr/bin`);
});

t.test('unchanged without pyenv shims, without a prefix, or when the prefix has no bin', async (t) => {
  t.equal(pathPastShims('/usr/local/bin:/usr/bin', () => version), '/usr/local/bin:/usr/bin');
  t.equal(pathPastShims('/root/.pyenv/shims:/usr/bin', () => undefined), '/root/.pyenv/shims:/usr/bin');
  t.equal(pathPastShims('/root/.pyenv/shims:/usr/bin', () => join(root, 'missing')), '/root/.pyenv/shims:/usr/bin');
});
