// POST Object (browser form uploads) over a real socket: boto3's generate_presigned_post signs the
// policies and `requests` posts the forms (test/python/post_object_boto3.py: every answer, the objects
// read back with boto3), then Debian's chromium submits real HTML forms served from a loopback origin:
// a 303 to success_action_redirect, a 201 PostResponse, and a cross-origin fetch() of a FormData that
// only the bucket's CORS rule lets the page read. One server for the file.
import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createBucketKey, startServer } from '../helpers/server.js';
import { RawS3 } from '../helpers/s3-client.js';
import { launchBrowser } from '../helpers/browser.js';
import { md5Hex } from '../helpers/checksums.js';

const SCRIPT = fileURLToPath(new URL('../../../test/python/post_object_boto3.py', import.meta.url));
const BUCKET = 'post-forms';
const OTHER = 'post-other';
const DOMAIN = 's3.test';

interface Answer {
  status: number;
  code: string | null;
  message: string | null;
  body: string;
  headers?: Record<string, string>;
  stored?: boolean;
  storedInOther?: boolean;
}

interface Presigned {
  url: string;
  fields: Record<string, string>;
}

interface PyOut {
  url: string;
  policyFields: string[];
  cases: Record<string, Answer>;
  objects: {
    ok204: { body: string; contentType: string; metadata: Record<string, string>; cacheControl: string; contentDisposition: string; etag: string };
    big: { size: number; md5: string; expectedMd5: string; contentType: string };
    redirect: { etag: string };
    tagged: { Key: string; Value: string }[];
  };
  browser: { redirect: Presigned; created: Presigned; fetch: Presigned };
}

const server = await startServer({ env: { S3EDGE_S3_DOMAINS: DOMAIN } });
t.teardown(() => server.stop());
const root = new RawS3({ url: server.url }, server.rootKey);
for (const b of [BUCKET, OTHER]) {
  const created = await root.createBucket(b);
  if (created.status !== 200) throw new Error(`create ${b}: ${created.status} ${created.text}`);
}
const readKey = await createBucketKey(server, BUCKET, 'read');
const otherKey = await createBucketKey(server, OTHER, 'read_write');

// The application's origin: serves the upload forms and the page success_action_redirect leads to.
const pages = new Map<string, string>();
const app = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const html = path === '/done'
    ? `<!doctype html><meta charset="utf-8"><title>Uploaded</title><h1>Uploaded</h1><pre id="q"></pre><script>document.getElementById('q').textContent = decodeURIComponent(location.search.slice(1)).split('&').join('\\n')</script>`
    : pages.get(path);
  if (html === undefined) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
});
await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => app.close(() => resolve())));
const appOrigin = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;

function runPython(): Promise<PyOut> {
  const args = [
    SCRIPT, '--endpoint', server.url, '--bucket', BUCKET, '--other-bucket', OTHER, '--vhost-domain', DOMAIN,
    '--read-key', `${readKey.accessKeyId}:${readKey.secretAccessKey}`,
    '--other-key', `${otherKey.accessKeyId}:${otherKey.secretAccessKey}`,
    '--origin', appOrigin, '--browser-redirect', `${appOrigin}/done`,
  ];
  const env = { ...process.env, AWS_ACCESS_KEY_ID: server.rootKey.accessKeyId, AWS_SECRET_ACCESS_KEY: server.rootKey.secretAccessKey, AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' };
  return new Promise((resolve, reject) => {
    execFile('python3', args, { env, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr.slice(-4000)}`));
      else resolve(JSON.parse(stdout) as PyOut);
    });
  });
}

const py = await runPython();
const c = py.cases;

function errorIs(t: Test, name: string, status: number, code: string, message?: string | RegExp): void {
  const a = c[name];
  if (!a) {
    t.fail(`no case ${name}`);
    return;
  }
  t.same([a.status, a.code], [status, code], `${name}: ${status} ${code}`);
  if (typeof message === 'string') t.equal(a.message, message, `${name}: message`);
  else if (message) t.match(a.message ?? '', message, `${name}: message`);
  if (a.stored !== undefined) t.equal(a.stored, false, `${name}: nothing stored`);
}

t.test('boto3 presigned POST: 204, ${filename}, metadata read back, fields after the file ignored', async (t) => {
  t.same(py.policyFields, ['Cache-Control', 'Content-Disposition', 'Content-Type', 'acl', 'key', 'policy', 'x-amz-algorithm', 'x-amz-credential', 'x-amz-date', 'x-amz-meta-color', 'x-amz-signature']);
  t.equal(py.url, `${server.url}/${BUCKET}`);
  const ok = c.ok204;
  t.equal(ok?.status, 204, ok?.body ?? '');
  t.equal(ok?.stored, true);
  t.equal(ok?.headers?.etag, `"${md5Hex(Buffer.from('hello from a form'))}"`);
  t.equal(ok?.headers?.location, `${server.url}/${BUCKET}/uploads%2Fhello%20world.txt`);
  t.same(py.objects.ok204, {
    body: 'hello from a form',
    contentType: 'text/plain; charset=utf-8',
    metadata: { color: 'blue' },
    cacheControl: 'max-age=60',
    contentDisposition: 'attachment; filename="report.txt"',
    etag: ok?.headers?.etag,
  });
  t.equal(c.big?.status, 204, c.big?.body ?? '');
  t.same([py.objects.big.size, py.objects.big.md5, py.objects.big.contentType], [3 * 1024 * 1024, py.objects.big.expectedMd5, 'binary/octet-stream'], '3 MiB read back intact');
  errorIs(t, 'badMd5', 400, 'BadDigest');
  t.equal(c.tagged?.status, 204, c.tagged?.body ?? '');
  t.same(py.objects.tagged, [{ Key: '0', Value: 'zero' }, { Key: 'team', Value: 'web ui' }], 'the tagging field is stored');
  errorIs(t, 'badTagging', 400, 'MalformedXML');
  t.equal(c.sigv2?.status, 204, `SigV2 form (ceph s3-tests style): ${c.sigv2?.body}`);
  t.equal(c.sigv2?.stored, true);
});

t.test('the request log names the operation, the signing key and the key written', async (t) => {
  const requestId = c.ok204?.headers?.['x-amz-request-id'];
  let line: Record<string, unknown> | undefined;
  // The line is written when the response closes: poll the server's output briefly.
  for (let i = 0; i < 50 && !line; i++) {
    for (const raw of server.output().split('\n')) {
      if (!raw.startsWith('{') || !raw.includes(`"${requestId}"`)) continue;
      const parsed = JSON.parse(raw) as Record<string, unknown>;
      if (parsed.msg === 's3 request') line = parsed;
    }
    if (!line) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.match(line, { operation: 'PostObject', method: 'POST', bucket: BUCKET, key: 'uploads/hello world.txt', accessKeyId: server.rootKey.accessKeyId, status: 204, errorCode: null });
  const denied = c.badSignature?.headers?.['x-amz-request-id'];
  const deniedLine = (await server.loggedOutput()).split('\n').find((raw) => raw.includes(`"${denied}"`) && raw.includes('s3 request'));
  t.match(JSON.parse(deniedLine ?? '{}'), { operation: 'PostObject', status: 403, errorCode: 'SignatureDoesNotMatch', accessKeyId: server.rootKey.accessKeyId });
});

t.test('success_action_status and success_action_redirect', async (t) => {
  const created = c.status201;
  t.equal(created?.status, 201);
  t.equal(created?.headers?.['content-type'], 'application/xml');
  const etag = created?.headers?.etag ?? '';
  t.match(etag, /^"[0-9a-f]{32}"$/);
  t.match(created?.body ?? '', new RegExp(
    `<PostResponse><Location>${server.url}/${BUCKET}/status-201.txt</Location><Bucket>${BUCKET}</Bucket><Key>status-201.txt</Key><ETag>(&quot;|")${etag.slice(1, -1)}(&quot;|")</ETag></PostResponse>`,
  ));
  t.same([c.status200?.status, c.status200?.body], [200, '']);
  t.same([c.status404?.status, c.status404?.body], [204, ''], 'an invalid status is 204');
  for (const s of ['status201', 'status200', 'status404']) t.equal(c[s]?.stored, true, `${s} stored`);

  const redirect = c.redirect;
  t.equal(redirect?.status, 303);
  const etag303 = py.objects.redirect.etag;
  t.equal(redirect?.headers?.location, `https://app.example.com/done?from=form&bucket=${BUCKET}&key=redirect%2Fa+b.txt&etag=${encodeURIComponent(etag303)}`);
  t.equal(redirect?.stored, true);
  t.equal(c.redirectRelative?.status, 204, 'a URL S3 cannot interpret is ignored');
});

t.test('refusals: AWS codes and messages, nothing stored', async (t) => {
  errorIs(t, 'badSignature', 403, 'SignatureDoesNotMatch');
  errorIs(t, 'conditionFailed', 403, 'AccessDenied', 'Invalid according to Policy: Policy Condition failed: ["eq", "$Content-Type", "text/plain"]');
  errorIs(t, 'extraField', 403, 'AccessDenied', 'Invalid according to Policy: Extra input fields: x-amz-meta-sneaky');
  errorIs(t, 'tooLarge', 400, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
  errorIs(t, 'tooSmall', 400, 'EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed size');
  t.match(c.tooSmall?.body ?? '', /<ProposedSize>1<\/ProposedSize><MinSizeAllowed>2<\/MinSizeAllowed>/);
  errorIs(t, 'missingSignature', 400, 'InvalidArgument', "Bucket POST must contain a field named 'X-Amz-Signature'.  If it is specified, please check the order of the fields.");
  errorIs(t, 'missingKey', 400, 'InvalidArgument', "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.");
  errorIs(t, 'keyAfterFile', 400, 'InvalidArgument', "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.");
  errorIs(t, 'anonymous', 403, 'AccessDenied', 'Access Denied');
  errorIs(t, 'notMultipart', 412, 'PreconditionFailed');
  t.match(c.notMultipart?.body ?? '', '<Condition>Bucket POST must be of the enclosure-type multipart/form-data</Condition>');
  errorIs(t, 'missingFile', 400, 'InvalidArgument', 'POST requires exactly one file upload per request.');
  errorIs(t, 'expired', 403, 'AccessDenied', 'Invalid according to Policy: Policy expired.');
  errorIs(t, 'truncated', 400, 'MalformedPOSTRequest', 'The body of your POST request is not well-formed multipart/form-data.');
  errorIs(t, 'malformedPolicy', 400, 'InvalidPolicyDocument', 'Invalid Policy: Invalid JSON.');
  errorIs(t, 'readOnlyKey', 403, 'AccessDenied', 'Access Denied');
  errorIs(t, 'otherBucketKey', 403, 'AccessDenied', 'Access Denied');
  errorIs(t, 'wrongBucket', 403, 'AccessDenied', `Invalid according to Policy: Policy Condition failed: ["eq", "$bucket", "${BUCKET}"]`);
  t.equal(c.wrongBucket?.storedInOther, false);
});

t.test('virtual-hosted POST, with the bucket CORS grant for a browser origin', async (t) => {
  const v = c.vhost;
  t.equal(v?.status, 204, v?.body ?? '');
  t.equal(v?.stored, true);
  t.equal(v?.headers?.location, `http://${BUCKET}.${DOMAIN}/vhost.txt`);
  t.equal(v?.headers?.['access-control-allow-origin'], appOrigin);
  t.match(v?.headers?.['access-control-expose-headers'] ?? '', /ETag/);
});

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The upload form as an application serves it: hidden policy fields, the file, a named submit button after it. */
function formPage(p: Presigned): string {
  const hidden = Object.entries(p.fields).map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`).join('\n    ');
  return `<!doctype html><html><head><meta charset="utf-8"><title>Upload</title></head><body>
  <h1>Upload a picture</h1>
  <form action="${escapeHtml(p.url)}" method="post" enctype="multipart/form-data">
    ${hidden}
    <input type="file" name="file">
    <button type="submit" name="submit" value="Upload">Upload</button>
  </form></body></html>`;
}

t.test('chromium submits real forms', async (t) => {
  pages.set('/redirect.html', formPage(py.browser.redirect));
  pages.set('/created.html', formPage(py.browser.created));
  pages.set('/fetch.html', '<!doctype html><meta charset="utf-8"><title>fetch</title>');
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 900, height: 500 } });
  const picture = Buffer.from('\x89PNG\r\n\x1a\n not really a picture, but bytes a browser sends as they are \u00ff', 'latin1');

  // 1. success_action_redirect: the browser follows the 303 back to the application.
  await page.goto(`${appOrigin}/redirect.html`);
  await page.setInputFiles('input[type=file]', { name: 'pixel.png', mimeType: 'image/png', buffer: picture });
  await Promise.all([page.waitForURL(`${appOrigin}/done?**`), page.click('button[type=submit]')]);
  const done = new URL(page.url());
  t.same(Object.fromEntries(done.searchParams), { bucket: BUCKET, key: 'browser/pixel.png', etag: `"${md5Hex(picture)}"` });
  await page.screenshot({ path: '/tmp/post-object-browser.png' });
  const got = await root.send({ method: 'GET', bucket: BUCKET, key: 'browser/pixel.png' });
  t.equal(got.status, 200);
  t.ok(got.body.equals(picture), 'the stored bytes are the file');
  t.equal(got.headers['content-type'], 'image/png');
  t.equal(got.headers['x-amz-meta-from'], 'chromium');

  // 2. success_action_status 201: the browser shows S3's PostResponse document.
  await page.goto(`${appOrigin}/created.html`);
  await page.setInputFiles('input[type=file]', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('typed in a browser') });
  const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('button[type=submit]')]);
  t.equal(response.status(), 201);
  t.match(await response.text(), '<Key>browser-201/notes.txt</Key>');
  const notes = await root.send({ method: 'GET', bucket: BUCKET, key: 'browser-201/notes.txt' });
  t.equal(notes.body.toString(), 'typed in a browser');

  // 3. fetch() of a FormData from the application's origin: readable only through the bucket's CORS rule.
  await page.goto(`${appOrigin}/fetch.html`);
  const fetched = await page.evaluate(async (p: Presigned) => {
    const fd = new FormData();
    for (const [k, v] of Object.entries(p.fields)) fd.append(k, v);
    fd.append('file', new Blob(['sent by fetch'], { type: 'text/plain' }), 'f.txt');
    const r = await fetch(p.url, { method: 'POST', body: fd });
    return { status: r.status, etag: r.headers.get('etag') };
  }, py.browser.fetch);
  t.same(fetched, { status: 204, etag: `"${md5Hex(Buffer.from('sent by fetch'))}"` });
  const viaFetch = await root.send({ method: 'GET', bucket: BUCKET, key: 'browser-fetch.bin' });
  t.equal(viaFetch.body.toString(), 'sent by fetch');
});
