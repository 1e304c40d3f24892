// What `s3edge --version` names: the package version, the git commit it was built from, and the Node.js it
// runs on (the single binary's own, or the node that runs dist/). The single
// binary carries build-info.json, stamped by scripts/build-binary.mjs; a git checkout asks git; an npm
// install knows only its version (there is no commit to be honest about).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface BuildInfo {
  version: string;
  /** Full commit hash, with `-dirty` when the tree had uncommitted changes; null when unknown. */
  commit: string | null;
}

/** What --version reports: the build, and the Node.js version running it now. */
export interface RunningInfo extends BuildInfo {
  node: string;
}

function readJson<T>(name: string): T | undefined {
  try {
    return JSON.parse(readFileSync(ROOT + name, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** The package version (package.json). */
export function version(): string {
  return (readJson<{ version: string }>('package.json') ?? { version: 'unknown' }).version;
}

/** The commit of a git checkout at the package root, or null (no .git of our own, no git). */
export function gitCommit(root: string = ROOT): string | null {
  // Only our own checkout: `git` run inside an npm install would find the enclosing project's repo.
  if (!existsSync(root + '.git')) return null;
  try {
    const git = (args: string[]): string => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).trim();
    const head = git(['rev-parse', 'HEAD']);
    return git(['status', '--porcelain', '--untracked-files=no']) === '' ? head : `${head}-dirty`;
  } catch {
    return null;
  }
}

export function buildInfo(): BuildInfo {
  const stamped = readJson<BuildInfo>('build-info.json');
  if (stamped) return { version: stamped.version, commit: stamped.commit };
  return { version: version(), commit: gitCommit() };
}

export function runningInfo(): RunningInfo {
  return { ...buildInfo(), node: process.versions.node };
}

/** `0.1.0 (commit 50d24a7c1e2f) on Node.js 24.11.1`; without the commit when it is unknown. */
export function versionLine(info: RunningInfo = runningInfo()): string {
  const [hash, dirty] = (info.commit ?? '').split('-');
  const commit = info.commit ? ` (commit ${hash?.slice(0, 12)}${dirty ? `-${dirty}` : ''})` : '';
  return `${info.version}${commit} on Node.js ${info.node}`;
}
