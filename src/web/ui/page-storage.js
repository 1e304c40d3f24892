// Buckets and storage access keys (SPEC.md §2.9): the user's buckets, a new bucket, and per bucket its
// S3 keys (read or read_write). A new key's secret is shown once, with ready-to-paste settings for
// aws cli, rclone and boto3.
import { html, useState } from './preact-htm.js';
import { del, get, post, put } from './api.js';
import { Card, ConfirmButton, CopyButton, Dialog, ErrorNotice, Loaded, Notice, Page, PurgeButton, QuotaLine, SecretValue, Table, useAction, useLoad } from './components.js';
import { count, dateTime } from './format.js';

const keysPath = (bucket) => `/storage/buckets/${encodeURIComponent(bucket)}/access-keys`;

function snippets(k) {
  const aws = [
    `export AWS_ACCESS_KEY_ID=${k.accessKeyId}`,
    `export AWS_SECRET_ACCESS_KEY=${k.secretAccessKey}`,
    `export AWS_DEFAULT_REGION=${k.region}`,
    `aws --endpoint-url ${k.endpoint} s3 ls s3://${k.bucket}/`,
  ].join('\n');
  const rclone = [
    `rclone config create s3edge s3 provider=Other \\`,
    `  access_key_id=${k.accessKeyId} secret_access_key=${k.secretAccessKey} \\`,
    `  endpoint=${k.endpoint} region=${k.region} force_path_style=true`,
    `rclone ls s3edge:${k.bucket}`,
  ].join('\n');
  const boto3 = [
    'import boto3',
    'from botocore.config import Config',
    '',
    's3 = boto3.client(',
    `    "s3", endpoint_url="${k.endpoint}", region_name="${k.region}",`,
    `    aws_access_key_id="${k.accessKeyId}",`,
    `    aws_secret_access_key="${k.secretAccessKey}",`,
    '    config=Config(s3={"addressing_style": "path"}),',
    ')',
    `print(s3.list_objects_v2(Bucket="${k.bucket}").get("KeyCount"))`,
  ].join('\n');
  return [['aws cli', aws], ['rclone', rclone], ['boto3', boto3]];
}

function NewStorageKey({ accessKey }) {
  const [tab, setTab] = useState(0);
  const list = snippets(accessKey);
  return html`<div class="stack" data-testid="new-storage-key">
    <${Notice} tone="warn">Copy the secret access key now: it is shown only this once.<//>
    <dl class="facts">
      <dt>Endpoint</dt><dd><code data-testid="storage-endpoint">${accessKey.endpoint}</code></dd>
      <dt>Region</dt><dd><code>${accessKey.region}</code></dd>
      <dt>Bucket</dt><dd><code>${accessKey.bucket}</code></dd>
      <dt>Addressing</dt><dd>path-style (<code>${accessKey.endpoint}/${accessKey.bucket}/key</code>)</dd>
      <dt>Permission</dt><dd>${accessKey.permission === 'read' ? 'read only' : 'read and write'}</dd>
    </dl>
    <${SecretValue} label="Access key id" value=${accessKey.accessKeyId} testId="storage-key-id" />
    <${SecretValue} label="Secret access key" value=${accessKey.secretAccessKey} testId="storage-key-secret" />
    <div class="tabs" role="tablist">${list.map(([name], i) => html`<button type="button" role="tab" aria-selected=${i === tab} onClick=${() => setTab(i)}>${name}</button>`)}</div>
    <div class="snippet-box"><pre class="snippet" data-testid="storage-snippet">${list[tab][1]}</pre><${CopyButton} text=${list[tab][1]} /></div>
  </div>`;
}

function NewKeyForm({ bucket, onCreated }) {
  const [name, setName] = useState('');
  const [permission, setPermission] = useState('read_write');
  const { busy, error, onSubmit } = useAction(async () => onCreated((await post(keysPath(bucket), { name, permission })).accessKey));
  return html`<form class="stack" onSubmit=${onSubmit}>
    <${ErrorNotice} error=${error} />
    <label>Name<input name="storage-key-name" required maxlength="100" value=${name} placeholder="e.g. backups" onInput=${(e) => setName(e.target.value)} /></label>
    <fieldset class="inline"><legend>Permission</legend>
      <label><input type="radio" name="permission" value="read" checked=${permission === 'read'} onChange=${() => setPermission('read')} /> read</label>
      <label><input type="radio" name="permission" value="read_write" checked=${permission === 'read_write'} onChange=${() => setPermission('read_write')} /> read_write</label>
    </fieldset>
    <button type="submit" class="primary" disabled=${busy}>${busy ? 'Creating…' : 'Create key'}</button>
  </form>`;
}

function BucketKeys({ bucket, stored, onChanged }) {
  const state = useLoad(() => get(keysPath(bucket.name)), [bucket.name]);
  const [dialog, setDialog] = useState(null);
  const close = () => {
    setDialog(null);
    state.reload();
  };
  const columns = [
    { label: 'Name', sortValue: (k) => k.name, render: (k) => html`<span class="file-name">${k.name}</span>` },
    { label: 'Access key id', render: (k) => html`<code data-testid="storage-key-row-id">${k.accessKeyId}</code>` },
    { label: 'Permission', render: (k) => k.permission },
    { label: 'Created', sortValue: (k) => k.createdAt, render: (k) => dateTime(k.createdAt) },
    {
      label: 'Actions',
      className: 'row-actions',
      render: (k) => html`<${ConfirmButton} label="Delete" className="small danger" question=${`Delete the access key ${k.name} (${k.accessKeyId})? S3 clients using it are refused at once.`}
        onConfirm=${async () => { await del(`${keysPath(bucket.name)}/${encodeURIComponent(k.accessKeyId)}`); state.reload(); }} />`,
    },
  ];
  return html`<${Card} title=${`Bucket ${bucket.name}`}>
    <p class="muted">${count(bucket.objects)} object${bucket.objects === 1 ? "" : "s"} · region ${bucket.region} · created ${dateTime(bucket.createdAt)} · <a href=${`#/objects?bucket=${encodeURIComponent(bucket.name)}`}>Browse its objects</a></p>
    ${stored ? html`<${QuotaLine} stored=${stored.storedBytes} quota=${stored.quotaBytes} label=${`Storage quota of ${bucket.name} used`} testId="bucket-storage" />` : null}
    <div class="bucket-cdn" data-testid="bucket-visibility">
      ${bucket.public
        ? html`<span class="badge public">public on the CDN</span> <span class="muted">anyone can read its objects at <code>/b/${bucket.name}/${'<key>'}</code> on the CDN host</span>
          <${ConfirmButton} label="Make private" className="small" confirmLabel="Make private" question=${`Stop serving ${bucket.name} on the CDN? Its objects are refused there at once and their cached copies dropped.`}
            onConfirm=${async () => { await put(`/api/v3/buckets/${encodeURIComponent(bucket.name)}/public`, { public: false }); onChanged(); }} />
          <${PurgeButton} path="/api/v3/cdn/purge" body=${{ bucket: bucket.name }} what=${`the bucket ${bucket.name}`} />`
        : html`<span class="badge">private</span> <span class="muted">read only with an access key or a presigned URL</span>
          <${ConfirmButton} label="Make public" className="small" confirmLabel="Make public" question=${`Serve every object of ${bucket.name} to anyone on the CDN host at /b/${bucket.name}/<key>? Keys and presigned URLs keep working as before.`}
            onConfirm=${async () => { await put(`/api/v3/buckets/${encodeURIComponent(bucket.name)}/public`, { public: true }); onChanged(); }} />`}
    </div>
    <${Loaded} state=${state}>${(data) => html`<${Table} caption=${`Access keys of ${bucket.name}`} columns=${columns} rows=${data.accessKeys.map((k) => ({ ...k, key: k.accessKeyId }))} empty="No access keys for this bucket." />`}<//>
    <button type="button" class="primary" onClick=${() => setDialog({})}>New access key</button>
    <${Dialog} open=${dialog !== null} title=${`New access key for ${bucket.name}`} onClose=${close}>
      ${dialog?.created ? html`<${NewStorageKey} accessKey=${dialog.created} />` : html`<${NewKeyForm} bucket=${bucket.name} onCreated=${(k) => setDialog({ created: k })} />`}
      <div class="dialog-actions"><button type="button" onClick=${close}>${dialog?.created ? 'Done' : 'Cancel'}</button></div>
    <//>
  <//>`;
}

function NewBucket({ onCreated }) {
  const [name, setName] = useState('');
  const { error, onSubmit } = useAction(async () => {
    await post('/api/v3/buckets', { name });
    setName('');
    onCreated();
  });
  return html`<form class="inline-form" onSubmit=${onSubmit}>
    <label>New bucket<input name="bucket-name" required minlength="3" maxlength="63" placeholder="lowercase-name" value=${name} onInput=${(e) => setName(e.target.value)} /></label>
    <button type="submit">Create bucket</button>
    <${ErrorNotice} error=${error} />
  </form>`;
}

export function StoragePage() {
  // The buckets with what each stores against its quota, read together: a quota line arriving after the
  // cards would shift their buttons under a pointer (the page does without it if it cannot be read).
  const state = useLoad(() => Promise.all([get('/api/v3/buckets'), get('/api/v3/storage/quota').catch(() => null)])
    .then(([listed, quota]) => ({ ...listed, quota: quota?.data ?? null })));
  const storedOf = (name) => state.data?.quota?.buckets.find((b) => b.name === name);
  return html`<${Page} title="Buckets and access keys">
    <${Card}>
      <p class="muted">S3 access keys work with aws cli, rclone, s3cmd, boto3 and the AWS SDKs; each is limited to one bucket.</p>
      <${NewBucket} onCreated=${state.reload} />
    <//>
    <${Loaded} state=${state}>${(data) =>
      data.buckets.length ? data.buckets.map((b) => html`<${BucketKeys} key=${b.name} bucket=${b} stored=${storedOf(b.name)} onChanged=${state.reload} />`) : html`<p class="muted empty">No buckets yet.</p>`}<//>
  <//>`;
}
