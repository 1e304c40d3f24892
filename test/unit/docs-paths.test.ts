// The docs stand alone and stay true about the tree: README.md, docs/*.md and bench/README.md point at
// nothing outside the repository (the contract is quoted in docs/SPEC.md), every relative link resolves,
// and every file of ours they name (src/..., test/..., scripts/..., with or without its extension)
// exists: a renamed or removed file cannot leave a doc pointing at it.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DOCS = ['README.md', 'bench/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
/** Our top-level folders: a name starting with one of them is a path in this repository. */
const PATH = /(?<![\w./-])(?:src|test|docs|scripts|bench|config|packaging|patches)\/[\w./@+-]*\w/g;
const EXTENSIONS = ['', '.ts', '.test.ts', '.js'];

for (const doc of DOCS) {
  t.test(doc, async (t) => {
    const text = readFileSync(join(ROOT, doc), 'utf8');
    const dir = dirname(join(ROOT, doc));
    t.notMatch(text, /\.\.\/(shared|\.library)\b/, 'nothing outside the repository');
    const broken: string[] = [];
    for (const [, target = ''] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^(https?:|mailto:|#)/.test(target)) continue;
      const path = resolve(dir, target.split('#')[0] ?? '');
      if (relative(ROOT, path).startsWith('..') || !existsSync(path)) broken.push(target);
    }
    t.same(broken, [], 'every relative link resolves inside the repository');
    const missing: string[] = [];
    for (const m of text.matchAll(PATH)) {
      const path = m[0];
      if (text.slice(m.index + path.length, m.index + path.length + 2).includes('*')) continue; // a pattern (conformance-*.test.ts), not one file
      if (/(^|\/)dist(\/|$)/.test(path)) continue; // a build's output (bench/dist/main.js), not in a fresh clone
      const named = [join(ROOT, path), join(dir, path)];
      if (!named.some((p) => EXTENSIONS.some((e) => existsSync(p + e)))) missing.push(path);
    }
    t.same([...new Set(missing)], [], 'every file named exists');
  });
}
