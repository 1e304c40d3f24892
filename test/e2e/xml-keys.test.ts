// Keys and XML 1.0 (docs/COMPATIBILITY.md "Keys are opaque"): a key with a C0 control character XML
// cannot carry is refused when written; a key with tab, CR or LF is stored and every listing without
// encoding-type=url is well-formed XML that gives it back byte for byte. Listing parameters with such
// a character are InvalidArgument unless encoding-type=url (then echoed URL-encoded); errors that echo
// one, and keys stored before they were refused, still give well-formed XML. Judged by Python's expat
// (xml.etree), an XML parser that is not ours, and by boto3.
import t from 'tap';
import { openSqlite } from '../../src/db/sqlite/index.js';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { writeAwsConfig, isolatedAwsEnv } from '../helpers/aws-cli.js';
import { run } from '../helpers/conformance.js';
import { RawS3, errorCode } from '../helpers/s3-client.js';
import { startServer } from '../helpers/server.js';
import type { RawResponse } from '../helpers/raw-http.js';

const server = await startServer();
t.teardown(() => server.stop());
const s3 = new RawS3({ url: server.url }, server.rootKey);
const BUCKET = 'xmlkeys';
t.equal((await s3.createBucket(BUCKET)).status, 200);

/** Every element as expat reads it, [local name, text] in document order; throws on ill-formed XML. */
async function elementsByExpat(xml: string): Promise<[string, string][]> {
  const script = [
    'import sys, json, xml.etree.ElementTree as ET',
    'root = ET.fromstring(sys.stdin.buffer.read())',
    "print(json.dumps([[e.tag.split('}')[-1], e.text or ''] for e in root.iter()]))",
  ].join('\n');
  const r = await run('python3', ['-c', script], { input: xml });
  if (r.code !== 0) throw new Error(`expat refused the XML: ${r.stderr}`);
  return JSON.parse(r.stdout) as [string, string][];
}

/** Every <Key> text as expat reads it; throws on ill-formed XML. */
async function keysByExpat(xml: string): Promise<string[]> {
  return textsOf(await elementsByExpat(xml), 'Key');
}

function textsOf(elements: [string, string][], name: string): string[] {
  return elements.filter(([n]) => n === name).map(([, text]) => text);
}

/** Control characters XML 1.0 cannot carry in the raw bytes of an answer (tab, LF and CR are fine). */
function rawControls(res: RawResponse): number[] {
  return [...res.body].filter((b) => b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d);
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

const LISTINGS: { name: string; query: Record<string, string>; params: Record<string, string>; echo: Record<string, string> }[] = [
  { name: 'ListObjectsV2', query: { 'list-type': '2' }, params: { prefix: '\u0001', delimiter: '\u0002', 'start-after': '\u0003' }, echo: { prefix: 'Prefix', delimiter: 'Delimiter', 'start-after': 'StartAfter' } },
  { name: 'ListObjects', query: {}, params: { prefix: '\u0001', delimiter: '\u0002', marker: '\u0003' }, echo: { prefix: 'Prefix', delimiter: 'Delimiter', marker: 'Marker' } },
  { name: 'ListMultipartUploads', query: { uploads: '' }, params: { prefix: '\u0005', delimiter: '\u0005', 'key-marker': '\u0005' }, echo: { prefix: 'Prefix', delimiter: 'Delimiter', 'key-marker': 'KeyMarker' } },
];

t.test('listing parameters XML cannot carry: InvalidArgument naming them, or URL-encoded with encoding-type=url', async (t) => {
  for (const l of LISTINGS) {
    for (const [param, value] of [...Object.entries(l.params), ['prefix', '\u0000'], ['delimiter', '\uffff']] as [string, string][]) {
      const what = `${l.name} ${param}=${encodeURIComponent(value)}`;
      const refused = await s3.send({ method: 'GET', bucket: BUCKET, query: { ...l.query, [param]: value } });
      t.equal(refused.status, 400, `${what}: 400`);
      const els = await elementsByExpat(refused.text);
      t.same(textsOf(els, 'Code'), ['InvalidArgument'], `${what}: InvalidArgument, well-formed`);
      t.same(textsOf(els, 'ArgumentName'), [param], `${what}: names the parameter`);
      t.match(textsOf(els, 'Message')[0], /encoding-type=url/, `${what}: says how to list with it`);
    }
    // All three at once, with encoding-type=url: honoured, and echoed URL-encoded as AWS does.
    const listed = await s3.send({ method: 'GET', bucket: BUCKET, query: { ...l.query, ...l.params, 'encoding-type': 'url' } });
    t.equal(listed.status, 200, `${l.name} with encoding-type=url: 200`);
    t.same(rawControls(listed), [], `${l.name}: no raw control character`);
    const els = await elementsByExpat(listed.text);
    for (const [param, element] of Object.entries(l.echo)) {
      t.same(textsOf(els, element), [encodeURIComponent(l.params[param] ?? '')], `${l.name}: <${element}> URL-encoded`);
    }
    t.same(textsOf(els, 'EncodingType'), ['url']);
  }
  const idMarker = await s3.send({ method: 'GET', bucket: BUCKET, query: { uploads: '', 'key-marker': 'a', 'upload-id-marker': '\u0005', 'encoding-type': 'url' } });
  t.same(textsOf(await elementsByExpat(idMarker.text), 'ArgumentName'), ['upload-id-marker'], 'an upload id marker is never encoded: refused even with encoding-type=url');
});

t.test('errors that echo such a character are well-formed XML', async (t) => {
  t.equal((await s3.putObject(BUCKET, 'mpu-target', Buffer.from('x'))).status, 200);
  const cases: [string, Promise<RawResponse>][] = [
    ['ListParts uploadId=%05', s3.send({ method: 'GET', bucket: BUCKET, key: 'mpu-target', query: { uploadId: '\u0005' } })],
    ['AbortMultipartUpload uploadId=%05', s3.send({ method: 'DELETE', bucket: BUCKET, key: 'mpu-target', query: { uploadId: '\u0005' } })],
    ['UploadPart uploadId=%05', s3.send({ method: 'PUT', bucket: BUCKET, key: 'mpu-target', query: { uploadId: '\u0005', partNumber: '1' }, body: Buffer.from('x') })],
  ];
  for (const [what, pending] of cases) {
    const res = await pending;
    t.equal(res.status, 404, `${what}: 404`);
    t.same(rawControls(res), [], `${what}: no raw control character`);
    const els = await elementsByExpat(res.text);
    t.same(textsOf(els, 'Code'), ['NoSuchUpload'], `${what}: NoSuchUpload, well-formed`);
    for (const id of textsOf(els, 'UploadId')) t.equal(id, '\ufffd', `${what}: the id echoed as U+FFFD`);
  }
  const maxKeys = await s3.send({ method: 'GET', bucket: BUCKET, query: { 'list-type': '2', 'max-keys': '\u0001' } });
  const els = await elementsByExpat(maxKeys.text);
  t.same([textsOf(els, 'Code'), textsOf(els, 'ArgumentValue')], [['InvalidArgument'], ['\ufffd']], 'max-keys=%01: InvalidArgument, its value echoed as U+FFFD');
});

t.test('keys stored before such keys were refused still list as well-formed XML', async (t) => {
  const OLD = 'olddata';
  t.equal((await s3.createBucket(OLD)).status, 200);
  // Stored now under stand-in names, then renamed in the database as an older version left them.
  const renames: [string, string][] = [['old-a', 'old\u0001a'], ['old-b', 'old\u001fb/x'], ['old-c', 'old-c']];
  for (const [name] of renames) t.equal((await s3.putObject(OLD, name, Buffer.from(name))).status, 200);
  const upload = await s3.send({ method: 'POST', bucket: OLD, key: 'old-up', query: { uploads: '' } });
  t.equal(upload.status, 200);
  const db = openSqlite(join(server.dataDir, 'meta.db'));
  try {
    db.pragma('busy_timeout = 5000');
    for (const [from, to] of renames) db.prepare('UPDATE objects SET key = ? WHERE key = ?').run(to, from);
    db.prepare('UPDATE multipart_uploads SET key = ? WHERE key = ?').run('old\u0002up', 'old-up');
  } finally {
    db.close();
  }
  const stored = renames.map(([, to]) => to).sort();
  const shown = stored.map((k) => k.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '\ufffd'));
  const listings: [string, Record<string, string>][] = [
    ['ListObjectsV2', { 'list-type': '2' }],
    ['ListObjects', {}],
    ['ListMultipartUploads', { uploads: '' }],
  ];
  for (const [name, query] of listings) {
    const plain = await s3.send({ method: 'GET', bucket: OLD, query });
    t.equal(plain.status, 200, `${name}: 200`);
    t.same(rawControls(plain), [], `${name}: no raw control character`);
    const keys = await keysByExpat(plain.text);
    t.same(keys, name === 'ListMultipartUploads' ? ['old\ufffdup'] : shown, `${name}: parses; such keys shown with U+FFFD`);
    const encoded = await s3.send({ method: 'GET', bucket: OLD, query: { ...query, 'encoding-type': 'url' } });
    const exact = (await keysByExpat(encoded.text)).map((k) => decodeURIComponent(k));
    t.same(exact, name === 'ListMultipartUploads' ? ['old\u0002up'] : stored, `${name} with encoding-type=url: the exact keys`);
  }
  // Paging over them: NextMarker (v1 with a delimiter) and a common prefix are keys too.
  const page = await s3.send({ method: 'GET', bucket: OLD, query: { delimiter: '/', 'max-keys': '1' } });
  const els = await elementsByExpat(page.text);
  t.same([textsOf(els, 'Key'), textsOf(els, 'NextMarker')], [['old\ufffda'], ['old\ufffda']], 'ListObjects page: Key and NextMarker parse');
  const prefixes = await elementsByExpat((await s3.send({ method: 'GET', bucket: OLD, query: { 'list-type': '2', delimiter: '/' } })).text);
  t.ok(textsOf(prefixes, 'Prefix').includes('old\ufffdb/'), 'a common prefix of such a key parses');
  const v2 = await s3.send({ method: 'GET', bucket: OLD, query: { 'list-type': '2', 'max-keys': '1' } });
  const token = textsOf(await elementsByExpat(v2.text), 'NextContinuationToken')[0] ?? '';
  const next = await s3.send({ method: 'GET', bucket: OLD, query: { 'list-type': '2', 'max-keys': '5', 'continuation-token': token } });
  t.same(await keysByExpat(next.text), shown.slice(1), 'ListObjectsV2 pages past such a key exactly (its token is opaque)');

  // Still reachable by their exact names: read, copied to a clean name, deleted; never written anew.
  const got = await s3.getObject(OLD, 'old\u0001a');
  t.same([got.status, got.text], [200, 'old-a'], 'GetObject of such a key');
  const copied = await s3.send({ method: 'PUT', bucket: OLD, key: 'rescued-a', headers: { 'x-amz-copy-source': `/${OLD}/old%01a` } });
  t.equal(copied.status, 200, 'CopyObject from such a key to a clean name');
  t.equal((await s3.getObject(OLD, 'rescued-a')).text, 'old-a');
  t.equal(errorCode(await s3.putObject(OLD, 'old\u0001a', Buffer.from('again'))), 'InvalidArgument', 'PutObject over it: still refused');
  const missing = await s3.getObject(OLD, 'absent\u0001key');
  t.equal(missing.status, 404, 'GetObject of such a key that does not exist: 404');
  t.same(rawControls(missing), [], 'its error is well-formed');
  t.equal((await s3.send({ method: 'DELETE', bucket: OLD, key: 'old\u0001a' })).status, 204, 'DeleteObject of such a key');
  const uploadId = textsOf(await elementsByExpat(upload.text), 'UploadId')[0] ?? '';
  const complete = await s3.send({ method: 'POST', bucket: OLD, key: 'old\u0002up', query: { uploadId }, body: Buffer.from('<CompleteMultipartUpload></CompleteMultipartUpload>') });
  t.equal(errorCode(complete), 'InvalidArgument', 'CompleteMultipartUpload of such an upload: refused, it would write the key');
  t.equal((await s3.send({ method: 'DELETE', bucket: OLD, key: 'old\u0002up', query: { uploadId } })).status, 204, 'AbortMultipartUpload of such an upload');
  t.same(await s3.listAllKeys(OLD), ['old\ufffdb/x', 'old-c', 'rescued-a'], 'what is left (in byte order; the old key shown with U+FFFD)');
});

t.test('boto3: list_multipart_uploads with such a prefix fails at once with InvalidArgument; with EncodingType=url it lists', async (t) => {
  const files = await writeAwsConfig(server.tmpRoot);
  const script = `
import json, sys, boto3
from botocore.config import Config
from botocore.exceptions import ClientError
s3 = boto3.client('s3', endpoint_url=sys.argv[1], config=Config(s3={'addressing_style': 'path'}, retries={'mode': 'standard', 'max_attempts': 5}))
out = {}
try:
    s3.list_multipart_uploads(Bucket=sys.argv[2], Prefix='\\x05')
    out['plain'] = {'ok': True}
except ClientError as e:
    out['plain'] = {'code': e.response['Error']['Code'], 'argument': e.response['Error'].get('ArgumentName'), 'retries': e.response['ResponseMetadata'].get('RetryAttempts')}
r = s3.list_multipart_uploads(Bucket=sys.argv[2], Prefix='\\x05', EncodingType='url')
out['url'] = {'prefix': r.get('Prefix'), 'uploads': len(r.get('Uploads', []))}
r = s3.list_objects_v2(Bucket=sys.argv[2], Prefix='\\x01')
out['v2'] = {'prefix': r.get('Prefix'), 'count': r.get('KeyCount')}
print(json.dumps(out))
`;
  const r = await run('python3', ['-c', script, server.url, BUCKET], { env: isolatedAwsEnv(files, server.rootKey), timeoutMs: 120_000 });
  t.equal(r.code, 0, `boto3 script: ${r.stderr.slice(-2000)}`);
  const out = JSON.parse(r.stdout || '{}') as Record<string, Record<string, unknown>>;
  t.same(out['plain'], { code: 'InvalidArgument', argument: 'prefix', retries: 0 }, 'InvalidArgument naming prefix, not retried');
  // botocore decodes ListObjects* answers itself but leaves ListMultipartUploads' as sent.
  t.same(out['url'], { prefix: '%05', uploads: 0 }, 'EncodingType=url: listed, the prefix echoed URL-encoded');
  t.same(out['v2'], { prefix: '\u0001', count: 0 }, 'list_objects_v2 (boto3 asks for encoding-type=url itself): listed, prefix decoded');
});
