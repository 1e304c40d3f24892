// Assets: the list (search, kind, sorted by the server, pages, thumbnails of images), uploads by picker
// or drag and drop with a progress bar per file, public URLs and signed links, downloads, deletes one by
// one or of the rows chosen (SPEC.md §2.1, §4).
import { html, useRef, useState } from './preact-htm.js';
import { del, get, post, query, uploadAsset } from './api.js';
import { ConfirmButton, CopyButton, ErrorNotice, Loaded, Notice, Page, Pager, PurgeButton, Table, errorText, useLoad } from './components.js';
import { bytes, dateTime } from './format.js';

const PAGE_SIZE = 20;
// What GET .../preview serves (src/api/v3/assets.ts): raster images up to 5 MiB.
const PREVIEW_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif']);
const PREVIEW_MAX_BYTES = 5 * 1024 * 1024;
// Bytes labelled as an image that are not one: no broken-image box in the row.
const hideBroken = (e) => {
  e.currentTarget.hidden = true;
};
const previewable = (a) => PREVIEW_TYPES.has(a.contentType.split(';')[0].trim().toLowerCase()) && a.size <= PREVIEW_MAX_BYTES;

function UploadRow({ item }) {
  const pct = Math.floor(item.progress * 100);
  return html`<li class="upload" data-testid="upload-row">
    <div class="upload-head"><span class="file-name">${item.name}</span><span class="muted" data-testid="upload-size">${bytes(item.size)}</span>
      <span class="upload-state" data-testid="upload-state">${item.state === 'done' ? 'Uploaded' : item.state === 'error' ? 'Failed' : `${pct}%`}</span>
      ${item.state === 'sending' ? html`<button type="button" class="small" onClick=${item.abort}>Cancel</button>` : null}</div>
    ${item.state === 'error'
      ? null
      : html`<progress max="100" value=${item.state === 'done' ? 100 : pct} aria-label=${`Upload of ${item.name}`} data-testid="upload-progress"></progress>`}
    ${item.forcedPrivate
      ? html`<${Notice} tone="warn">${item.name} can run as a web page or script in a browser, so it was stored as private: it is served only by download or signed link, never from a public URL.<//>`
      : null}
    <${ErrorNotice} error=${item.error} />
  </li>`;
}

/** Where new uploads go: kind, and a project with one of its deployments (both optional). */
function UploadOptions({ options, onChange }) {
  const projects = useLoad(() => get('/api/v3/projects'));
  const deployments = useLoad(() => (options.projectId ? get(`/api/v3/projects/${encodeURIComponent(options.projectId)}/deployments`) : Promise.resolve({ deployments: [] })), [options.projectId]);
  const set = (patch) => onChange({ ...options, ...patch });
  // Labels by for/id: a <label> wrapping a <select> would take the options' text into its name.
  return html`<div class="inline-form tight upload-options">
    <div><label for="upload-kind">Upload as</label><select id="upload-kind" name="upload-kind" value=${options.kind} onChange=${(e) => set({ kind: e.target.value })}>
      <option value="file">File</option><option value="artifact">Artifact (a build output)</option>
    </select></div>
    <div><label for="upload-project">Project</label><select id="upload-project" name="upload-project" value=${options.projectId} onChange=${(e) => set({ projectId: e.target.value, deploymentId: '' })}>
      <option value="">None</option>
      ${(projects.data?.projects ?? []).map((p) => html`<option value=${p.id}>${p.name}</option>`)}
    </select></div>
    <div><label for="upload-deployment">Deployment</label><select id="upload-deployment" name="upload-deployment" value=${options.deploymentId} disabled=${!options.projectId} onChange=${(e) => set({ deploymentId: e.target.value })}>
      <option value="">None</option>
      ${(deployments.data?.deployments ?? []).map((d) => html`<option value=${d.id}>${d.name}</option>`)}
    </select></div>
  </div>`;
}

function Uploader({ onUploaded }) {
  const [visibility, setVisibility] = useState('public');
  const [options, setOptions] = useState({ kind: 'file', projectId: '', deploymentId: '' });
  const [items, setItems] = useState([]);
  const [dragging, setDragging] = useState(false);
  const picker = useRef(null);
  const update = (id, patch) => setItems((list) => list.map((it) => (it.id === id ? { ...it, ...patch } : it)));

  const start = (files) => {
    for (const file of files) {
      const id = `${Date.now()}-${Math.random()}`;
      const handle = uploadAsset(file, { visibility, ...options }, (progress) => update(id, { progress }));
      setItems((list) => [{ id, name: file.name, size: file.size, progress: 0, state: 'sending', abort: handle.abort }, ...list]);
      handle.done.then(
        (body) => {
          update(id, { state: 'done', progress: 1, forcedPrivate: visibility === 'public' && body.asset.visibility === 'private' });
          onUploaded();
        },
        (error) => update(id, { state: 'error', error }),
      );
    }
  };
  const onDrop = (e) => {
    e.preventDefault();
    setDragging(false);
    if (e.dataTransfer?.files?.length) start([...e.dataTransfer.files]);
  };
  return html`<div class="card">
    <h2>Upload</h2>
    <fieldset class="inline">
      <legend>Visibility of new uploads</legend>
      <label><input type="radio" name="visibility" value="public" checked=${visibility === 'public'} onChange=${() => setVisibility('public')} /> Public (served from the CDN)</label>
      <label><input type="radio" name="visibility" value="private" checked=${visibility === 'private'} onChange=${() => setVisibility('private')} /> Private (download or signed link)</label>
    </fieldset>
    <${UploadOptions} options=${options} onChange=${setOptions} />
    <div class=${dragging ? 'drop dragging' : 'drop'} data-testid="drop-zone"
      onDragOver=${(e) => { e.preventDefault(); setDragging(true); }} onDragLeave=${() => setDragging(false)} onDrop=${onDrop}>
      <p>Drop files here, or</p>
      <button type="button" class="primary" onClick=${() => picker.current.click()}>Choose files</button>
      <input ref=${picker} class="sr-only" type="file" multiple aria-label="Files to upload" data-testid="file-input"
        onChange=${(e) => { start([...e.target.files]); e.target.value = ''; }} />
    </div>
    ${items.length ? html`<ul class="uploads">${items.map((item) => html`<${UploadRow} key=${item.id} item=${item} />`)}</ul>` : null}
  </div>`;
}

function SignedLink({ asset }) {
  const [link, setLink] = useState(null);
  const [error, setError] = useState(null);
  const make = () => post(`/api/v3/cdn/assets/${encodeURIComponent(asset.id)}/signed-url`, { expiresIn: 3600 }).then((b) => setLink(b), setError);
  if (link) return html`<${CopyButton} text=${link.url} label="Copy signed link (1 h)" />`;
  return html`<button type="button" class="small" onClick=${make} title=${error ? error.message : ''}>Signed link</button>`;
}

export function AssetsPage() {
  const [search, setSearch] = useState('');
  const [kind, setKind] = useState('');
  const [page, setPage] = useState(1);
  const [sort, setSort] = useState({ key: 'createdAt', descending: true });
  const [chosen, setChosen] = useState(() => new Set());
  const state = useLoad(
    () => get(`/api/v3/cdn/assets${query({ page, limit: PAGE_SIZE, search, kind, sort: sort.key, order: sort.descending ? 'desc' : 'asc' })}`),
    [page, search, kind, sort],
  );
  const rows = state.data?.assets ?? [];
  const onSort = (key) => {
    setSort((s) => (s.key === key ? { key, descending: !s.descending } : { key, descending: key === 'createdAt' }));
    setPage(1);
  };
  const choose = (id, on) => setChosen((set) => {
    const next = new Set(set);
    if (on) next.add(id);
    else next.delete(id);
    return next;
  });
  const [bulkError, setBulkError] = useState(null);
  async function deleteChosen() {
    setBulkError(null);
    const failed = [];
    for (const id of chosen) {
      try {
        await del(`/api/v3/cdn/assets/${encodeURIComponent(id)}`);
      } catch (err) {
        failed.push(errorText(err));
      }
    }
    setChosen(new Set());
    if (failed.length) setBulkError(new Error(`${failed.length} could not be deleted: ${failed[0]}`));
    state.reload();
  }
  const allChosen = rows.length > 0 && rows.every((a) => chosen.has(a.id));

  const columns = [
    {
      label: 'Choose',
      render: (a) => html`<input type="checkbox" checked=${chosen.has(a.id)} onChange=${(e) => choose(a.id, e.target.checked)} aria-label=${`Choose ${a.fileName}`} />`,
    },
    {
      label: 'Name',
      sortKey: 'name',
      render: (a) => html`<span class="thumb-cell">${previewable(a)
        ? html`<img class="thumb" src=${`/api/v3/cdn/assets/${encodeURIComponent(a.id)}/preview`} alt="" loading="lazy" width="40" height="40" onError=${hideBroken} />`
        : null}<span class="truncate file-name" data-testid="asset-name" title=${a.fileName} tabindex="0">${a.fileName}</span></span>`,
    },
    { label: 'Size', sortKey: 'size', className: 'num', render: (a) => html`<span class="nowrap">${bytes(a.size)}</span>` },
    { label: 'Type', render: (a) => html`<span class="muted">${a.kind === 'artifact' ? html`<span class="badge">artifact</span> ` : null}${a.contentType}</span>` },
    { label: 'Visibility', render: (a) => html`<span class=${`badge ${a.visibility}`}>${a.visibility}</span>` },
    { label: 'Uploaded', sortKey: 'createdAt', render: (a) => html`<span class="nowrap">${dateTime(a.createdAt)}</span>` },
    {
      label: 'Actions',
      className: 'row-actions',
      render: (a) => html`
        ${a.visibility === 'public' && a.publicUrl ? html`<${CopyButton} text=${a.publicUrl} label="Copy URL" />` : html`<${SignedLink} asset=${a} />`}
        <a class="button small" href=${`/api/v3/cdn/assets/${encodeURIComponent(a.id)}/download`} download>Download</a>
        ${a.visibility === 'public' ? html`<${PurgeButton} path="/api/v3/cdn/purge" body=${{ assetId: a.id }} what=${a.fileName} label="Purge" />` : null}
        <${ConfirmButton} label="Delete" className="small danger" question=${`Delete ${a.fileName}? Its public URL stops working.`}
          onConfirm=${async () => { await del(`/api/v3/cdn/assets/${encodeURIComponent(a.id)}`); state.reload(); }} />`,
    },
  ];

  return html`<${Page} title="Assets" actions=${html`<${PurgeButton} path="/api/v3/cdn/purge" body=${{ all: true }} what="all your assets and public buckets" label="Purge all cached copies" />`}>
    <${Uploader} onUploaded=${state.reload} />
    <div class="card">
      <form class="filters" role="search" onSubmit=${(e) => e.preventDefault()}>
        <label>Search<input type="search" value=${search} placeholder="File name" onInput=${(e) => { setSearch(e.target.value); setPage(1); }} /></label>
        <label>Kind<select value=${kind} onChange=${(e) => { setKind(e.target.value); setPage(1); }}>
          <option value="">All</option><option value="file">Files</option><option value="artifact">Artifacts</option>
        </select></label>
      </form>
      <${Loaded} state=${state}>${(data) => html`
        ${data.assets.length ? html`<div class="bulk-bar">
          <label class="check"><input type="checkbox" checked=${allChosen}
            onChange=${(e) => setChosen(e.target.checked ? new Set(data.assets.map((a) => a.id)) : new Set())} /> All on this page</label>
          <${ConfirmButton} label=${chosen.size ? `Delete ${chosen.size} chosen` : 'Delete chosen'} className="small danger" disabled=${chosen.size === 0}
            question=${`Delete ${chosen.size} asset${chosen.size === 1 ? '' : 's'}? Their public URLs stop working.`} onConfirm=${deleteChosen} />
          <${ErrorNotice} error=${bulkError} />
        </div>` : null}
        <${Table} caption="Your assets" columns=${columns} rows=${data.assets.map((a) => ({ ...a, key: a.id }))} sort=${sort} onSort=${onSort}
          empty=${search || kind ? 'No asset matches.' : 'No assets yet.'} />
        <p class="muted">${data.pagination.total} asset${data.pagination.total === 1 ? '' : 's'}</p>
        <${Pager} page=${data.pagination.page} pages=${data.pagination.pages} onPage=${setPage} />`}<//>
    </div>
  <//>`;
}
