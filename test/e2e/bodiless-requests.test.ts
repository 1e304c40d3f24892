// Requests with neither Content-Length nor Transfer-Encoding have no body (RFC 9112 §6.3), and node hands
// them to s3edge already ended (src/server.ts: optimizeEmptyRequests): nothing may wait for such a
// body's 'end'. Written byte for byte on a socket, each kind that takes a body elsewhere is answered,
// at once, with the error a client can act on; those that take none are served as always.
import t from 'tap';
import { startServer } from '../helpers/server.js';
import { RawS3 } from '../helpers/s3-client.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { EMPTY_SHA256 } from '../helpers/signer.js';
import { apiUser } from '../helpers/api.js';
import { xmlText } from '../helpers/xml.js';

const server = await startServer({ workers: 1 });
t.teardown(() => server.stop());
const root = new RawS3({ url: server.url }, server.rootKey);
const BUCKET = 'bodiless';

t.before(async () => {
  t.equal((await root.createBucket(BUCKET)).status, 200);
  t.equal((await root.putObject(BUCKET, 'there.txt', Buffer.from('here'))).status, 200);
});

/** A SigV4-signed S3 request sent without a length header (rawRequest adds none). */
async function signedWithoutLength(method: string, key: string | undefined, query: Record<string, string> = {}): Promise<RawResponse> {
  const signed = await root.sign({ method, bucket: BUCKET, key, query, payloadHash: EMPTY_SHA256 });
  return rawRequest({ url: server.url }, { method, target: signed.target, headers: signed.headers });
}

t.test('S3: what needs a body says so, the rest is served', async (t) => {
  const put = await signedWithoutLength('PUT', 'new.txt');
  t.equal(put.status, 411);
  t.equal(xmlText(put.text, 'Code'), 'MissingContentLength', 'PutObject');
  // CompleteMultipartUpload reads its document without asking for a digest first: an empty one.
  const init = await root.send({ method: 'POST', bucket: BUCKET, key: 'parts.bin', query: { uploads: '' } });
  const uploadId = xmlText(init.text, 'UploadId') ?? '';
  t.ok(uploadId);
  const complete = await signedWithoutLength('POST', 'parts.bin', { uploadId });
  t.equal(complete.status, 400);
  t.equal(xmlText(complete.text, 'Code'), 'MalformedXML', 'CompleteMultipartUpload with no document');
  const tagging = await signedWithoutLength('PUT', 'there.txt', { tagging: '' });
  t.equal(tagging.status, 400);
  t.equal(xmlText(tagging.text, 'Code'), 'InvalidRequest', 'PutObjectTagging: its Content-MD5 is asked for first');

  const form = await rawRequest({ url: server.url }, {
    method: 'POST',
    target: `/${BUCKET}`,
    headers: [['Host', new URL(server.url).host], ['Content-Type', 'multipart/form-data; boundary=x']],
  });
  t.equal(form.status, 411);
  t.equal(xmlText(form.text, 'Code'), 'MissingContentLength', 'a browser form upload (POST Object)');

  const get = await signedWithoutLength('GET', 'there.txt');
  t.equal(get.status, 200);
  t.equal(get.text, 'here', 'GetObject');
  t.equal((await signedWithoutLength('HEAD', 'there.txt')).status, 200, 'HeadObject');
  t.equal((await signedWithoutLength('DELETE', 'there.txt')).status, 204, 'DeleteObject');
  t.equal((await root.getObject(BUCKET, 'there.txt')).status, 404, 'and it is gone');
  t.equal((await root.getObject(BUCKET, 'new.txt')).status, 404, 'nothing was stored by the refused PUT');
});

t.test('the management API: a JSON route reads an empty body, an upload is refused', async (t) => {
  const { token } = await apiUser(server, ['api-keys:manage', 'assets:write']);
  const host = new URL(server.url).host;
  const headers = (type: string): [string, string][] => [['Host', host], ['Authorization', `Bearer ${token}`], ['Content-Type', type]];
  const json = await rawRequest({ url: server.url }, { method: 'POST', target: '/api/v3/api-keys', headers: headers('application/json') });
  t.equal(json.status, 400, 'POST with a JSON type and no body');
  t.match(JSON.parse(json.text), { success: false, code: 'invalid_request' });
  const upload = await rawRequest({ url: server.url }, {
    method: 'POST',
    target: '/api/v3/cdn/assets',
    headers: headers('multipart/form-data; boundary=x'),
  });
  t.equal(upload.status, 400, 'an upload with no form');
  t.match(JSON.parse(upload.text), { success: false, code: 'invalid_request' });
  const listed = await rawRequest({ url: server.url }, { method: 'GET', target: '/api/v3/api-keys', headers: [['Host', host], ['Authorization', `Bearer ${token}`]] });
  t.equal(listed.status, 200, 'a GET is served');
});
