// The object browser: a bucket's keys as folders (the "/" delimiter), a page of keys at a time by S3's
// continuation tokens (so 10,000 keys are pages, never one answer), uploads with progress, previews of
// images and text, presigned links to share, downloads, deletes one at a time or selected together.
// The page holds no S3 credentials: POST /api/v3/buckets/:bucket/presign signs one operation on one key
// for a few minutes, and the browser then makes that S3 request itself, on this same origin.
import { html, useEffect, useState } from './preact-htm.js';
import { ApiError, get, post } from './api.js';
import { ConfirmButton, CopyButton, Dialog, ErrorNotice, Loaded, Notice, Page, Skeleton, useAction, useLoad } from './components.js';
import { bytes, count, dateTime } from './format.js';

const PAGE_SIZES = [100, 500, 1000];
const TEXT_PREVIEW_BYTES = 256 * 1024;
const IMAGE = /\.(png|jpe?g|gif|webp|avif|svg|ico|bmp)$/i;
const TEXT = /\.(txt|md|csv|json|log|xml|ya?ml|ini|conf|toml|ts|js|css|html?|py|sh)$/i;
const LINK_TIMES = [[3600, '1 hour'], [86400, '1 day'], [604800, '7 days']];

/** The browser's address of this page: #/objects?bucket=NAME&prefix=PATH. */
function readHash() {
  const q = new URLSearchParams(location.hash.split('?')[1] ?? '');
  return { bucket: q.get('bucket') ?? '', prefix: q.get('prefix') ?? '' };
}
function hashFor(bucket, prefix) {
  const q = new URLSearchParams({ bucket, ...(prefix ? { prefix } : {}) });
  return `#/objects?${q}`;
}

const presign = (bucket, body) => post(`/api/v3/buckets/${encodeURIComponent(bucket)}/presign`, body);

/** An S3 answer that is not 2xx, as an ApiError with S3's own code and message. */
async function s3Failure(res) {
  const text = await res.text();
  const doc = new DOMParser().parseFromString(text, 'application/xml');
  const code = doc.querySelector('Error > Code')?.textContent ?? `HTTP ${res.status}`;
  const message = doc.querySelector('Error > Message')?.textContent ?? res.statusText;
  return new ApiError(res.status, `${message} (${code})`, code);
}

async function s3(bucket, body, init = {}) {
  const signed = await presign(bucket, body);
  let res;
  try {
    res = await fetch(signed.url, { method: signed.method, ...init });
  } catch {
    throw new ApiError(0, 'The server could not be reached: check your connection and try again.', 'network');
  }
  if (!res.ok) throw await s3Failure(res);
  return res;
}

const text = (el, name) => el.getElementsByTagName(name)[0]?.textContent ?? '';

/** One page of ListObjectsV2 under `prefix`: folders, objects and the token of the next page. */
async function listPage(bucket, prefix, token, size) {
  const res = await s3(bucket, { operation: 'list', prefix, delimiter: '/', maxKeys: size, ...(token ? { continuationToken: token } : {}) });
  const doc = new DOMParser().parseFromString(await res.text(), 'application/xml');
  const folders = [...doc.getElementsByTagName('CommonPrefixes')].map((p) => text(p, 'Prefix'));
  const objects = [...doc.getElementsByTagName('Contents')].map((c) => ({ key: text(c, 'Key'), size: Number(text(c, 'Size')), lastModified: text(c, 'LastModified') }));
  return { folders, objects, next: text(doc.documentElement, 'IsTruncated') === 'true' ? text(doc.documentElement, 'NextContinuationToken') : null };
}

function Breadcrumbs({ bucket, prefix }) {
  const parts = prefix.split('/').filter(Boolean);
  return html`<nav class="crumbs" aria-label="Folder">
    <a href=${hashFor(bucket, '')}>${bucket}</a>
    ${parts.map((part, i) => html` / <a href=${hashFor(bucket, `${parts.slice(0, i + 1).join('/')}/`)} aria-current=${i === parts.length - 1 ? 'location' : undefined}>${part}</a>`)}
  </nav>`;
}

function Preview({ bucket, object }) {
  const [state, setState] = useState({ loading: true });
  useEffect(() => {
    let live = true;
    (async () => {
      if (IMAGE.test(object.key)) return { image: (await presign(bucket, { operation: 'get', key: object.key })).url };
      if (TEXT.test(object.key) && object.size <= TEXT_PREVIEW_BYTES) return { text: await (await s3(bucket, { operation: 'get', key: object.key })).text() };
      return { none: true };
    })().then((r) => live && setState(r), (error) => live && setState({ error }));
    return () => {
      live = false;
    };
  }, [object.key]);
  if (state.loading) return html`<${Skeleton} label="Loading the preview" />`;
  if (state.error) return html`<${ErrorNotice} error=${state.error} />`;
  if (state.image) return html`<img class="preview-image" src=${state.image} alt=${`Preview of ${object.key}`} data-testid="preview-image" />`;
  if (state.text !== undefined) return html`<pre class="snippet preview-text" data-testid="preview-text">${state.text}</pre>`;
  return html`<p class="muted">No preview for this kind of file (${bytes(object.size)}): download it instead.</p>`;
}

function ShareLink({ bucket, object }) {
  const [seconds, setSeconds] = useState(3600);
  const [link, setLink] = useState(null);
  const { busy, error, run } = useAction(async () => {
    const signed = await presign(bucket, { operation: 'get', key: object.key, expiresIn: seconds });
    setLink({ url: new URL(signed.url, location.origin).href, expiresAt: signed.expiresAt });
  });
  return html`<div class="stack tight share">
    <div class="inline-form tight">
      <div><label for="link-time">Link good for</label><select id="link-time" value=${seconds} onChange=${(e) => { setSeconds(Number(e.target.value)); setLink(null); }}>
        ${LINK_TIMES.map(([s, label]) => html`<option value=${s}>${label}</option>`)}
      </select></div>
      <button type="button" disabled=${busy} onClick=${() => run()}>Make a presigned link</button>
    </div>
    <${ErrorNotice} error=${error} />
    ${link ? html`<div class="secret-row"><code data-testid="presigned-link">${link.url}</code><${CopyButton} text=${link.url} /></div>
      <p class="hint">Anyone with the link can download it until ${dateTime(link.expiresAt)}.</p>` : null}
  </div>`;
}

async function download(bucket, key) {
  const signed = await presign(bucket, { operation: 'get', key, download: true });
  const a = document.createElement('a');
  a.href = signed.url;
  a.download = key.split('/').pop() ?? 'download';
  document.body.appendChild(a);
  a.click();
  a.remove();
}

/** PUT of one file to a presigned URL, with its progress; resolves when S3 has stored it. */
function putFile(url, file, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    if (file.type) xhr.setRequestHeader('content-type', file.type);
    xhr.upload.addEventListener('progress', (e) => e.lengthComputable && onProgress(e.loaded / e.total));
    xhr.addEventListener('load', () => {
      if (xhr.status >= 200 && xhr.status < 300) return resolve();
      const doc = new DOMParser().parseFromString(xhr.responseText, 'application/xml');
      reject(new ApiError(xhr.status, `${doc.querySelector('Error > Message')?.textContent ?? 'Upload failed'} (${doc.querySelector('Error > Code')?.textContent ?? xhr.status})`, 'upload'));
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, 'The upload could not reach the server: check your connection and try again.', 'network')));
    xhr.send(file);
  });
}

function Uploads({ bucket, prefix, onUploaded }) {
  const [items, setItems] = useState([]);
  const update = (id, patch) => setItems((list) => list.map((it) => (it.id === id ? { ...it, ...patch } : it)));
  const start = async (files) => {
    for (const file of files) {
      const id = `${Date.now()}-${Math.random()}`;
      const key = `${prefix}${file.name}`;
      setItems((list) => [{ id, key, size: file.size, progress: 0, state: 'sending' }, ...list]);
      try {
        const signed = await presign(bucket, { operation: 'put', key });
        await putFile(signed.url, file, (progress) => update(id, { progress }));
        update(id, { state: 'done', progress: 1 });
        onUploaded();
      } catch (error) {
        update(id, { state: 'error', error });
      }
    }
  };
  return html`<div class="object-upload">
    <label class="button primary">Upload files here<input class="sr-only" type="file" multiple data-testid="object-file-input" onChange=${(e) => { void start([...e.target.files]); e.target.value = ''; }} /></label>
    ${items.length ? html`<ul class="uploads">${items.map((it) => html`<li class="upload" key=${it.id} data-testid="object-upload-row">
      <div class="upload-head"><span class="file-name">${it.key}</span><span class="muted">${bytes(it.size)}</span>
        <span class="upload-state">${it.state === 'done' ? 'Uploaded' : it.state === 'error' ? 'Failed' : `${Math.floor(it.progress * 100)}%`}</span></div>
      ${it.state === 'error' ? html`<${ErrorNotice} error=${it.error} />` : html`<progress max="100" value=${Math.floor(it.progress * 100)} aria-label=${`Upload of ${it.key}`}></progress>`}
    </li>`)}</ul>` : null}
  </div>`;
}

function Listing({ bucket, prefix }) {
  const [size, setSize] = useState(PAGE_SIZES[0]);
  // The tokens of the pages seen so far: [null, t2, t3, ...]; the last is the page shown. A folder is a
  // Listing of its own (keyed by bucket and prefix), so its pages start again at the first.
  const [tokens, setTokens] = useState([null]);
  const [selected, setSelected] = useState(new Set());
  const [open, setOpen] = useState(null);
  const token = tokens[tokens.length - 1];
  const state = useLoad(() => listPage(bucket, prefix, token, size), [bucket, prefix, token, size]);
  const reload = () => {
    setSelected(new Set());
    state.reload();
  };
  const remove = async (keys) => {
    for (const key of keys) await s3(bucket, { operation: 'delete', key });
    reload();
  };
  const toggle = (key) => setSelected((s) => {
    const next = new Set(s);
    if (next.has(key)) next.delete(key);
    else next.add(key);
    return next;
  });
  const name = (key) => key.slice(prefix.length);
  return html`<div class="card">
    <div class="object-toolbar">
      <${Breadcrumbs} bucket=${bucket} prefix=${prefix} />
      <div><label for="page-size" class="inline-label">Per page<select id="page-size" value=${size} onChange=${(e) => { setSize(Number(e.target.value)); setTokens([null]); setSelected(new Set()); }}>${PAGE_SIZES.map((n) => html`<option value=${n}>${n}</option>`)}</select></label></div>
    </div>
    <${Uploads} bucket=${bucket} prefix=${prefix} onUploaded=${reload} />
    <${Loaded} state=${state} lines=${6}>${(page) => html`
      ${selected.size ? html`<div class="bulk" role="group" aria-label="Selected objects">
        <span>${count(selected.size)} selected</span>
        <${ConfirmButton} label="Delete selected" className="small danger" confirmLabel="Delete" question=${`Delete ${selected.size} object${selected.size === 1 ? '' : 's'}? This cannot be undone (unless the bucket keeps versions).`} onConfirm=${() => remove([...selected])} />
      </div>` : null}
      ${page.folders.length || page.objects.length ? html`<div class="table-wrap" tabindex="0" role="region" aria-label=${`Objects in ${bucket}/${prefix}`}><table>
        <caption class="sr-only">Objects in ${bucket}/${prefix}</caption>
        <thead><tr><th scope="col"><span class="sr-only">Select</span></th><th scope="col">Name</th><th scope="col" class="num">Size</th><th scope="col">Modified</th><th scope="col">Actions</th></tr></thead>
        <tbody>
          ${page.folders.map((f) => html`<tr key=${f}><td></td><td data-label="Name"><div class="cell"><a class="folder" href=${hashFor(bucket, f)} data-testid="folder">${name(f)}</a></div></td><td class="num" data-label="Size">–</td><td data-label="Modified">–</td><td></td></tr>`)}
          ${page.objects.map((o) => html`<tr key=${o.key} data-testid="object-row">
            <td><input type="checkbox" aria-label=${`Select ${name(o.key)}`} checked=${selected.has(o.key)} onChange=${() => toggle(o.key)} /></td>
            <td data-label="Name"><div class="cell"><span class="file-name truncate" title=${o.key} data-testid="object-name">${name(o.key)}</span></div></td>
            <td class="num" data-label="Size">${bytes(o.size)}</td>
            <td data-label="Modified">${dateTime(o.lastModified)}</td>
            <td class="row-actions" data-label="Actions"><div class="cell">
              <button type="button" class="small" onClick=${() => setOpen(o)}>Open</button>
              <button type="button" class="small" onClick=${() => download(bucket, o.key)}>Download</button>
              <${ConfirmButton} label="Delete" className="small danger" question=${`Delete ${o.key}? This cannot be undone (unless the bucket keeps versions).`} onConfirm=${() => remove([o.key])} />
            </div></td>
          </tr>`)}
        </tbody></table></div>` : html`<p class="muted empty">${prefix ? 'This folder is empty.' : 'This bucket is empty: upload a file, or put objects with any S3 client.'}</p>`}
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled=${tokens.length <= 1} onClick=${() => setTokens((t) => t.slice(0, -1))}>Previous</button>
        <span data-testid="object-page">Page ${tokens.length}</span>
        <button type="button" disabled=${!page.next} onClick=${() => setTokens((t) => [...t, page.next])}>Next</button>
      </nav>`}<//>
    <${Dialog} open=${open !== null} title=${open ? open.key : ''} onClose=${() => setOpen(null)}>
      ${open ? html`<div class="stack">
        <p class="muted">${bytes(open.size)} · modified ${dateTime(open.lastModified)}</p>
        <${Preview} bucket=${bucket} object=${open} />
        <${ShareLink} bucket=${bucket} object=${open} />
      </div>` : null}
      <div class="dialog-actions"><button type="button" onClick=${() => download(bucket, open.key)}>Download</button><button type="button" onClick=${() => setOpen(null)}>Close</button></div>
    <//>
  </div>`;
}

export function ObjectsPage() {
  const [where, setWhere] = useState(readHash());
  useEffect(() => {
    const onHash = () => setWhere(readHash());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  const buckets = useLoad(() => get('/api/v3/buckets'));
  return html`<${Page} title="Objects">
    <${Loaded} state=${buckets}>${(data) => {
      if (!data.buckets.length) return html`<${Notice}>No buckets yet: create one under <a href="#/storage">Buckets & keys</a>.<//>`;
      const bucket = data.buckets.some((b) => b.name === where.bucket) ? where.bucket : data.buckets[0].name;
      // A folder and its pages belong to one bucket: another bucket starts at its top.
      const prefix = bucket === where.bucket ? where.prefix : '';
      return html`<div class="card">
          <label for="object-bucket" class="inline-label">Bucket<select id="object-bucket" value=${bucket} onChange=${(e) => { location.hash = hashFor(e.target.value, ''); }}>
            ${data.buckets.map((b) => html`<option value=${b.name}>${b.name}</option>`)}
          </select></label>
        </div>
        <${Listing} key=${`${bucket}/${prefix}`} bucket=${bucket} prefix=${prefix} />`;
    }}<//>
  <//>`;
}
