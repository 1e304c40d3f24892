// The POST Object form reader: fields up to the file (case-insensitive names, repeats joined with
// commas), the file part by its name, whatever follows ignored, the 20 KiB limit, broken bodies.
import t from 'tap';
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { text } from 'node:stream/consumers';
import { S3Error } from '../../src/errors/s3-errors.js';
import { readPostForm } from '../../src/s3/post-form.js';

const BOUNDARY = 'b0undary';

function part(name: string, value: string, filename?: string): string {
  const disposition = `form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"`}`;
  return `--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n\r\n${value}\r\n`;
}

/** A request whose body is `body`: a stream with the headers busboy reads. */
function request(body: string, contentType = `multipart/form-data; boundary=${BOUNDARY}`): IncomingMessage {
  const req = new PassThrough() as unknown as IncomingMessage;
  req.headers = { 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) };
  (req as unknown as PassThrough).end(body);
  return req;
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof S3Error ? err.code : String(err);
  }
  return 'no error';
}

t.test('fields before the file, the file, the rest ignored', async (t) => {
  const body = part('Key', 'a/${filename}') + part('x-amz-meta-tag', 'Ninja') + part('X-Amz-Meta-Tag', 'Stallman')
    + part('acl', 'private', 'acl') // a filename on a field part (requests/s3-tests) does not make it the file
    + part('FILE', 'the bytes\r\nwith a line break', 'C:\\dir\\photo.jpg')
    + part('submit', 'Upload') + part('file', 'a second file', 'b.txt') + `--${BOUNDARY}--\r\n`;
  const form = await readPostForm(request(body));
  t.same(Object.fromEntries(form.fields), {
    key: { name: 'Key', value: 'a/${filename}' },
    'x-amz-meta-tag': { name: 'x-amz-meta-tag', value: 'Ninja,Stallman' },
    acl: { name: 'acl', value: 'private' },
  });
  t.equal(form.file?.filename, 'C:\\dir\\photo.jpg', 'the filename as sent (expandFilename takes its last segment)');
  t.equal(await text(form.file!.stream), 'the bytes\r\nwith a line break');
  await form.done;
  t.notOk(form.fields.has('submit'), 'a field after the file is not read into the form');
});

t.test('a file part without a filename; a form without a file', async (t) => {
  const form = await readPostForm(request(part('key', 'k') + part('file', 'plain') + `--${BOUNDARY}--\r\n`));
  t.equal(form.file?.filename, undefined);
  t.equal(await text(form.file!.stream), 'plain');
  const none = await readPostForm(request(part('key', 'k') + `--${BOUNDARY}\r\nContent-Disposition: form-data\r\n\r\nnameless\r\n--${BOUNDARY}--\r\n`));
  t.equal(none.file, undefined);
  t.same(Object.fromEntries(none.fields), { key: { name: 'key', value: 'k' }, '': { name: '', value: 'nameless' } }, 'a part without a name is a field named ""');
});

t.test('limits and broken bodies', async (t) => {
  t.equal(await code(readPostForm(request(part('key', 'k'.repeat(21 * 1024)) + `--${BOUNDARY}--\r\n`))), 'MaxPostPreDataLengthExceeded', 'one large field');
  const many = Array.from({ length: 500 }, (_, i) => part(`f${i}`, '')).join('') + `--${BOUNDARY}--\r\n`;
  t.equal(await code(readPostForm(request(many))), 'MaxPostPreDataLengthExceeded', 'many empty fields count their delimiters');
  t.equal(await code(readPostForm(request('x', 'multipart/form-data'))), 'MalformedPOSTRequest', 'no boundary');
  t.equal(await code(readPostForm(request('no delimiter at all'))), 'MalformedPOSTRequest', 'no part');
  const cut = await readPostForm(request(part('key', 'k') + `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"\r\n\r\nhalf a fi`));
  t.equal(await code(text(cut.file!.stream)), 'MalformedPOSTRequest', 'a file cut short fails its stream');
  t.equal(await code(cut.done), 'MalformedPOSTRequest');
});
