// `npm test` runs tap with the PATH this prints: the machine's PATH with the bin directory of pyenv's
// selected Python put before pyenv's shims. A shim runs bash and pyenv itself before the tool: about
// 0.45 s of CPU more on each of the suite's hundreds of `aws` and `python3` runs (1.2-1.4 s against
// 0.75-0.8 s for `aws --version` here). The tools are the same; without pyenv, PATH is unchanged.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export function pathPastShims(path: string, pyenvPrefix: () => string | undefined): string {
  const entries = path.split(':');
  const shims = entries.findIndex((e) => /\/\.?pyenv\/shims\/?$/.test(e));
  if (shims < 0) return path;
  const bins = (pyenvPrefix() ?? '')
    .split(':')
    .filter((p) => p !== '')
    .map((p) => join(p, 'bin'))
    .filter((bin) => existsSync(bin));
  if (bins.length === 0) return path;
  return [...entries.slice(0, shims), ...bins, ...entries.slice(shims)].join(':');
}

function pyenvPrefix(): string | undefined {
  const r = spawnSync('pyenv', ['prefix'], { encoding: 'utf8', timeout: 10_000 });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.stdout.write(pathPastShims(process.env.PATH ?? '', pyenvPrefix));
