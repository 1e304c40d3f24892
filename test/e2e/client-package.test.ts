// The typed client as a package (docs/API.md "The typed client"): what `npm pack` makes, unpacked into
// a project of its own as npm would install it (its dependencies are this checkout's), is imported as
// `s3edge/client` (and `s3edge`, and the OpenAPI document as `s3edge/openapi.json`) by a script that
// talks to a real server, and type-checks: a right call compiles, a wrong one does not (the types are
// real, not `any`).
import t from 'tap';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { apiUser } from '../helpers/api.js';
import { childProcessEnv } from '../helpers/child-env.js';
import { run } from '../helpers/conformance.js';
import { startServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-data.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const env = childProcessEnv();
const work = tempDir(t);

const packed = await run('npm', ['pack', '--json', '--pack-destination', work], { env, cwd: ROOT, timeoutMs: 120_000 });
if (packed.code !== 0) throw new Error(`npm pack: ${packed.stderr}`);
const tarball = join(work, (JSON.parse(packed.stdout) as { filename: string }[])[0]?.filename ?? '');
const files = (JSON.parse(packed.stdout) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? [];

// A project with s3edge installed from the tarball; its dependencies, and node's and TypeScript's types, from this checkout.
const project = join(work, 'app');
const installed = join(project, 'node_modules', 's3edge');
await mkdir(installed, { recursive: true });
const untar = await run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1'], { env });
if (untar.code !== 0) throw new Error(`tar: ${untar.stderr}`);
for (const dep of ['undici', '@sinclair', '@types']) await symlink(join(ROOT, 'node_modules', dep), join(project, 'node_modules', dep));
await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));

const server = await startServer();
t.teardown(() => server.stop());
const user = await apiUser(server, ['buckets:manage']);

t.test('the tarball holds the client, its types and no tests', async (t) => {
  for (const f of ['dist/src/client/index.js', 'dist/types/client/index.d.ts', 'dist/types/api/v3/schemas.d.ts', 'docs/openapi.json', 'package.json']) t.ok(files.includes(f), f);
  t.same(files.filter((f) => f.startsWith('dist/test/')), [], 'no compiled test in the package');
});

t.test("a script imports 's3edge/client' and 's3edge' and talks to the server", async (t) => {
  await writeFile(
    join(project, 'use.mjs'),
    `import { S3EdgeClient, ApiClientError } from 's3edge/client';
import * as root from 's3edge';
import openapi from 's3edge/openapi.json' with { type: 'json' };
const client = new S3EdgeClient({ baseUrl: process.env.URL, apiKey: process.env.TOKEN });
await client.createBucket('from-the-package');
const buckets = await client.listBuckets();
let refused;
try { await client.createBucket('from-the-package'); } catch (err) { refused = err instanceof ApiClientError ? err.status : String(err); }
console.log(JSON.stringify({ same: root.S3EdgeClient === S3EdgeClient, names: buckets.map((b) => b.name), refused, openapi: openapi.openapi }));
`,
  );
  const r = await run(process.execPath, ['use.mjs'], { env: { ...env, URL: server.url, TOKEN: user.token }, cwd: project });
  t.equal(r.code, 0, r.stderr);
  t.same(JSON.parse(r.stdout), { same: true, names: ['from-the-package'], refused: 409, openapi: '3.1.0' }, 'the calls worked, an error is an ApiClientError, the OpenAPI document is s3edge/openapi.json');
});

t.test('TypeScript finds the types through the exports map: a right call compiles, a wrong one does not', async (t) => {
  await writeFile(
    join(project, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, types: ['node'] }, files: ['use.ts'] }),
  );
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const good = `import { S3EdgeClient, type BucketView } from 's3edge/client';
const client = new S3EdgeClient({ baseUrl: 'http://127.0.0.1:9000', apiKey: 'k' });
const buckets: BucketView[] = await client.listBuckets();
const regions: string[] = buckets.map((b) => b.region);
export { regions };
`;
  await writeFile(join(project, 'use.ts'), good);
  const ok = await run(process.execPath, [tsc, '-p', project], { env, cwd: project });
  t.equal(ok.code, 0, `tsc on a right use: ${ok.stdout}${ok.stderr}`);
  await writeFile(join(project, 'use.ts'), `${good}const wrong: number = (await client.listBuckets())[0]?.name ?? 0;\nexport { wrong };\n`);
  const bad = await run(process.execPath, [tsc, '-p', project], { env, cwd: project });
  t.not(bad.code, 0, 'a wrong use fails to compile');
  t.match(bad.stdout, /use\.ts\(6,7\): error TS2322: Type 'string' is not assignable to type 'number'/, 'because name is a string');
});
