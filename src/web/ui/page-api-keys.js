// API keys: create with scopes (the token shown once), list, delete, and rotation as SPEC.md §5.3 says:
// a replacement with the same scopes, then the old key deleted once the new one is deployed.
import { html, useState } from './preact-htm.js';
import { del, get, post } from './api.js';
import { Card, ConfirmButton, Dialog, ErrorNotice, Loaded, Notice, Page, SecretValue, Table, useAction, useLoad } from './components.js';
import { dateTime } from './format.js';

function NewKeyForm({ scopes, initial, onCreated }) {
  const [name, setName] = useState(initial?.name ?? '');
  const [chosen, setChosen] = useState(new Set(initial?.scopes ?? ['assets:read', 'assets:write']));
  const { busy, error, onSubmit } = useAction(async () => onCreated((await post('/api/v3/api-keys', { name, scopes: [...chosen] })).apiKey));
  const toggle = (scope) => {
    const next = new Set(chosen);
    if (next.has(scope)) next.delete(scope);
    else next.add(scope);
    setChosen(next);
  };
  return html`<form onSubmit=${onSubmit} class="stack">
    <${ErrorNotice} error=${error} />
    <label>Name<input name="key-name" value=${name} maxlength="100" placeholder="e.g. website backend" onInput=${(e) => setName(e.target.value)} /></label>
    <fieldset><legend>Scopes</legend>
      ${scopes.map((s) => html`<label class="check"><input type="checkbox" name="scope" value=${s.name} checked=${chosen.has(s.name)} onChange=${() => toggle(s.name)} />
        <span><code>${s.name}</code> <span class="muted">${s.description}</span></span></label>`)}
    </fieldset>
    <button type="submit" class="primary" disabled=${busy || chosen.size === 0}>${busy ? 'Creating…' : 'Create key'}</button>
  </form>`;
}

function CreatedKey({ apiKey, replaces, onDeleteOld }) {
  return html`<div class="stack" data-testid="new-api-key">
    <${Notice} tone="warn">Copy the token now: it is shown only this once. Keep it on servers, never in code a browser loads.<//>
    <${SecretValue} label=${`Token of ${apiKey.name || 'the new key'}`} value=${apiKey.token} testId="api-key-token" />
    <p class="muted">Use it as <code>${'Authorization: Bearer <token>'}</code>:</p>
    <pre class="snippet">curl -H "Authorization: Bearer ${apiKey.token}" ${location.origin}/api/v3/cdn/summary</pre>
    ${replaces
      ? html`<p>Once the new token is deployed where the old key was used, delete the old key <strong class="file-name">${replaces.name || replaces.id}</strong>.</p>
        <${ConfirmButton} label="Delete the old key" question=${`Delete the old key ${replaces.name || replaces.id}? Requests with its token are refused at once.`} onConfirm=${onDeleteOld} />`
      : null}
  </div>`;
}

export function ApiKeysPage({ session }) {
  const state = useLoad(() => get('/api/v3/api-keys'));
  const [dialog, setDialog] = useState(null);
  const close = () => {
    setDialog(null);
    state.reload();
  };
  const columns = [
    { label: 'Name', sortValue: (k) => k.name, render: (k) => html`<span class="file-name" data-testid="api-key-name">${k.name || '(no name)'}</span>` },
    { label: 'Scopes', render: (k) => html`<span class="scopes">${k.scopes.map((s) => html`<code>${s}</code> `)}</span>` },
    { label: 'Created', sortValue: (k) => k.createdAt, render: (k) => dateTime(k.createdAt) },
    {
      label: 'Actions',
      className: 'row-actions',
      render: (k) => html`<button type="button" class="small" onClick=${() => setDialog({ mode: 'rotate', old: k })}>Rotate</button>
        <${ConfirmButton} label="Delete" className="small danger" question=${`Delete the key ${k.name || k.id}? Requests with its token are refused at once.`}
          onConfirm=${async () => { await del(`/api/v3/api-keys/${encodeURIComponent(k.id)}`); state.reload(); }} />`,
    },
  ];
  const created = (apiKey) => setDialog((d) => ({ ...d, created: apiKey }));
  const title = dialog?.mode === 'rotate' ? 'Rotate key' : 'New API key';
  return html`<${Page} title="API keys" actions=${html`<button type="button" class="primary" onClick=${() => setDialog({ mode: 'new' })}>New API key</button>`}>
    <${Card}>
      <p class="muted">Bearer tokens for the management API (<code>/api/v3</code>). A key can do what its scopes allow, for your account only.</p>
      <${Loaded} state=${state}>${(data) => html`<${Table} caption="Your API keys" columns=${columns} rows=${data.apiKeys.map((k) => ({ ...k, key: k.id }))} empty="No API keys yet." />`}<//>
    <//>
    <${Dialog} open=${dialog !== null} title=${title} onClose=${close}>
      ${dialog?.created
        ? html`<${CreatedKey} apiKey=${dialog.created} replaces=${dialog.mode === 'rotate' ? dialog.old : null}
            onDeleteOld=${async () => { await del(`/api/v3/api-keys/${encodeURIComponent(dialog.old.id)}`); close(); }} />`
        : html`${dialog?.mode === 'rotate' ? html`<p>A replacement for <strong class="file-name">${dialog.old.name || dialog.old.id}</strong> with the same scopes. The old key keeps working until you delete it.</p>` : null}
          <${NewKeyForm} scopes=${session.scopes} initial=${dialog?.mode === 'rotate' ? { name: `${dialog.old.name || 'key'} (rotated)`, scopes: dialog.old.scopes } : null} onCreated=${created} />`}
      <div class="dialog-actions"><button type="button" onClick=${close}>${dialog?.created ? 'Done' : 'Cancel'}</button></div>
    <//>
  <//>`;
}
