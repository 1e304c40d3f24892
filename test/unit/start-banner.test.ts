// The start message a person reads (`s3edge serve` without --json): where the S3 endpoint, the CDN and
// the dashboard are, and how to run admin commands against this server's data; the JSON line names the
// dashboard too.
import t from 'tap';
import { announce, commandName } from '../../src/cli/serve-lifecycle.js';
import { testConfig } from '../helpers/temp-data.js';

const AT = { s3: 'http://127.0.0.1:9000', s3Tls: null, cdn: 'http://127.0.0.1:9080', cdnBase: 'http://cdn.localhost:9080' };
const ROOT = { accessKeyId: 'SEEXAMPLEKEY', secretAccessKey: 'secret-shown-once', generated: true } as never;

function printed(json: boolean, flags: Record<string, string>): string {
  // As `npm start` runs it: dist/bin/s3edge.js of the folder it runs in.
  const argv1 = process.argv[1] as string;
  process.argv[1] = `${process.cwd()}/dist/bin/s3edge.js`;
  const chunks: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string) => (chunks.push(String(chunk)), true)) as typeof process.stdout.write;
  try {
    announce(json, testConfig(flags), ROOT, 1, AT);
  } finally {
    process.stdout.write = write;
    process.argv[1] = argv1;
  }
  return chunks.join('');
}

t.test('the lines: endpoint, CDN, dashboard, admin commands with this data dir', async (t) => {
  const text = printed(false, { dataDir: '/srv/s3edge/data' });
  t.match(text, /S3 endpoint: +http:\/\/127\.0\.0\.1:9000\n/);
  t.match(text, /CDN: +http:\/\/cdn\.localhost:9080 \(listening on http:\/\/127\.0\.0\.1:9080\)\n/);
  t.match(text, /Dashboard: +http:\/\/127\.0\.0\.1:9000\/dashboard\/\n/);
  t.match(text, /Admin commands: +npx s3edge help +\(e\.g\. npx s3edge users create alice --data-dir \/srv\/s3edge\/data\)\n/);
  t.match(text, /Root secret key: +secret-shown-once/, 'the generated secret, this once');
});

t.test('no dashboard line when it is off; on PostgreSQL the admin commands need --metadata', async (t) => {
  const text = printed(false, { dataDir: '/srv/d', 'dashboard.enabled': 'false', metadata: 'postgres://s3edge:pw@db.internal/s3edge' });
  t.notMatch(text, /Dashboard:/);
  t.match(text, /Admin commands: +npx s3edge help +\(e\.g\. npx s3edge users create alice --metadata <the same URL>\)/);
  t.notMatch(text, /pw@/, 'no password in the message');
});

t.test('--json: one line, with the dashboard URL (null when off)', async (t) => {
  t.match(JSON.parse(printed(true, { dataDir: '/srv/d' })), { event: 'listening', s3: AT.s3, dashboard: 'http://127.0.0.1:9000/dashboard/' });
  t.match(JSON.parse(printed(true, { dataDir: '/srv/d', 'dashboard.enabled': 'false' })), { dashboard: null });
});

t.test('the command: npx s3edge in the package folder, else node and the script', async (t) => {
  t.equal(commandName('/opt/s3edge/dist/bin/s3edge.js', '/opt/s3edge'), 'npx s3edge');
  t.equal(commandName('/opt/s3edge/dist/bin/s3edge.js', '/srv'), 'node /opt/s3edge/dist/bin/s3edge.js');
});
