// Keys and XML 1.0 (docs/COMPATIBILITY.md "Keys are opaque"): a key with a C0 control character XML
// cannot carry is refused when written; a key with tab, CR or LF is stored and every listing without
// encoding-type=url is well-formed XML that gives it back byte for byte. Judged by Python's expat
// (xml.etree), an XML parser that is not ours.
import t from 'tap';
import { createHash } from 'node:crypto';
import { run } from '../helpers/conformance.js';
import { RawS3, errorCode } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';

const server = await startServer();
t.teardown(() => server.stop());
const s3 = new RawS3({ url: server.url }, server.rootKey);
const BUCKET = 'xmlkeys';
t.equal((await s3.createBucket(BUCKET)).status, 200);

/** Every <Key> (and <Prefix> of CommonPrefixes) text as expat reads it; throws on ill-formed XML. */
async function keysByExpat(xml: string): Promise<string[]> {
  const script = [
    'import sys, json, xml.etree.ElementTree as ET',
    'root = ET.fromstring(sys.stdin.buffer.read())',
    "print(json.dumps([e.text or '' for e in root.iter() if e.tag.split('}')[-1] == 'Key']))",
  ].join('\n');
  const r = await run('python3', ['-c', script], { input: xml });
  if (r.code !== 0) throw new Error(`expat refused the XML: ${r.stderr}`);
  return JSON.parse(r.stdout) as string[];
}

const WHITESPACE_KEYS = ['tab\there', 'crlf\r\nline', 'lone\rcr', 'lf\nonly', 'amp&<lt>"q\''];

t.test('control characters XML cannot carry are refused on every write path', async (t) => {
  for (const key of ['unit\u001fsep', 'bell\u0007', 'esc\u001b[31m', 'nonchar\uffff']) {
    const put = await s3.putObject(BUCKET, key, Buffer.from('x'));
    t.equal(put.status, 400, `PutObject ${JSON.stringify(key)}: 400`);
    t.equal(errorCode(put), 'InvalidArgument');
    const mpu = await s3.send({ method: 'POST', bucket: BUCKET, key, query: { uploads: '' } });
    t.equal(errorCode(mpu), 'InvalidArgument', `CreateMultipartUpload ${JSON.stringify(key)}`);
    const copy = await s3.send({ method: 'PUT', bucket: BUCKET, key, headers: { 'x-amz-copy-source': `/${BUCKET}/absent` } });
    t.equal(errorCode(copy), 'InvalidArgument', `CopyObject to ${JSON.stringify(key)}`);
    t.ok(Buffer.from(put.text).every((b) => b >= 0x20 || b === 0x0a), 'the error answer echoes no control character');
  }
  t.same(await s3.listAllKeys(BUCKET), [], 'nothing was stored');
});

t.test('tab, CR and LF in keys: stored, and every listing parses and gives them back exactly', async (t) => {
  for (const key of WHITESPACE_KEYS) t.equal((await s3.putObject(BUCKET, key, Buffer.from(key))).status, 200, `PutObject ${JSON.stringify(key)}`);
  const v2 = await s3.send({ method: 'GET', bucket: BUCKET, query: { 'list-type': '2' } });
  t.same((await keysByExpat(v2.text)).sort(), [...WHITESPACE_KEYS].sort(), 'ListObjectsV2');
  const v1 = await s3.send({ method: 'GET', bucket: BUCKET });
  t.same((await keysByExpat(v1.text)).sort(), [...WHITESPACE_KEYS].sort(), 'ListObjects v1');
  const page = await s3.send({ method: 'GET', bucket: BUCKET, query: { 'list-type': '2', 'max-keys': '1', 'start-after': 'crlf\r\nline' } });
  t.equal((await keysByExpat(page.text))[0], 'lf\nonly', 'start-after with a CR LF key');
  const upload = await s3.send({ method: 'POST', bucket: BUCKET, key: 'crlf\r\nline', query: { uploads: '' } });
  t.same(await keysByExpat(upload.text), ['crlf\r\nline'], 'CreateMultipartUpload result');
  const uploads = await s3.send({ method: 'GET', bucket: BUCKET, query: { uploads: '' } });
  t.same(await keysByExpat(uploads.text), ['crlf\r\nline'], 'ListMultipartUploads');
  for (const key of WHITESPACE_KEYS) {
    const got = await s3.getObject(BUCKET, key);
    t.equal(got.text, key, `GET ${JSON.stringify(key)} by the listed name`);
  }
  const del = Buffer.from(`<Delete>${WHITESPACE_KEYS.map((k) => `<Object><Key>${k.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\r/g, '&#13;')}</Key></Object>`).join('')}</Delete>`);
  const deleted = await s3.send({ method: 'POST', bucket: BUCKET, query: { delete: '' }, body: del, headers: { 'content-md5': createHash('md5').update(del).digest('base64') } });
  t.equal(deleted.status, 200);
  t.same((await keysByExpat(deleted.text)).sort(), [...WHITESPACE_KEYS].sort(), 'DeleteObjects result');
  t.same(await s3.listAllKeys(BUCKET), [], 'all deleted by their exact names');
});
