// Projects and the edge proxy: projects, their deployments and hostnames (verification, origin, rules,
// HTTPS, purge). Their traffic is on the security events page (page-security.js).
import { html, useEffect, useState } from './preact-htm.js';
import { del, get, patch, post, put } from './api.js';
import { Card, ConfirmButton, Dialog, ErrorNotice, Loaded, Notice, Page, PurgeButton, Table, useAction, useLoad } from './components.js';
import { bytes, count, dateTime, duration, fromNow, localDateTime, localTimesIn } from './format.js';

const projectPath = (p) => `/api/v3/projects/${encodeURIComponent(p)}`;
const hostnamePath = (p, h) => `${projectPath(p)}/hostnames/${encodeURIComponent(h)}`;

function originText(origin) {
  if (!origin) return 'no origin yet';
  if (origin.kind === 'bucket') {
    return [`bucket ${origin.bucket ?? '(deleted)'}`, `index ${origin.indexDocument}`, origin.errorDocument ? `error ${origin.errorDocument}` : null].filter(Boolean).join(' · ');
  }
  return origin.preserveHost ? `${origin.url} · visitor's Host` : origin.url;
}

/**
 * The origin of a hostname, every field of PUT .../origin shown and filled from the current one: the
 * API replaces the whole origin, so a field the form left out would be erased by a save.
 */
function OriginForm({ projectId, hostname, onSaved }) {
  const current = hostname.origin;
  const buckets = useLoad(() => get('/api/v3/buckets'));
  const [kind, setKind] = useState(current?.kind ?? 'url');
  const [url, setUrl] = useState(current?.kind === 'url' ? current.url : '');
  const [preserveHost, setPreserveHost] = useState(current?.kind === 'url' ? current.preserveHost : false);
  const [bucket, setBucket] = useState(current?.kind === 'bucket' ? current.bucket ?? '' : '');
  const [indexDocument, setIndexDocument] = useState(current?.kind === 'bucket' ? current.indexDocument : 'index.html');
  const [errorDocument, setErrorDocument] = useState(current?.kind === 'bucket' ? current.errorDocument ?? '' : '');
  const { busy, error, onSubmit } = useAction(async () => {
    const origin = kind === 'url'
      ? { kind, url, preserveHost }
      : { kind, bucket, indexDocument, errorDocument: errorDocument === '' ? null : errorDocument };
    await put(`${hostnamePath(projectId, hostname.id)}/origin`, origin);
    onSaved();
  });
  const names = buckets.data?.buckets.map((b) => b.name) ?? [];
  // A bucket deleted since, or not listed yet, stays selectable so an unchanged save keeps it.
  if (bucket && !names.includes(bucket)) names.unshift(bucket);
  return html`<form class="stack" onSubmit=${onSubmit}>
    <${ErrorNotice} error=${error} />
    <fieldset class="inline"><legend>Origin</legend>
      <label><input type="radio" name="origin-kind" checked=${kind === 'url'} onChange=${() => setKind('url')} /> A server (URL)</label>
      <label><input type="radio" name="origin-kind" checked=${kind === 'bucket'} onChange=${() => setKind('bucket')} /> One of my buckets (static site)</label>
    </fieldset>
    ${kind === 'url'
      ? html`<label>Origin URL<input name="origin-url" required placeholder="https://origin.example.net" value=${url} onInput=${(e) => setUrl(e.target.value)} /></label>
        <label class="check"><input type="checkbox" name="preserve-host" checked=${preserveHost} onChange=${(e) => setPreserveHost(e.target.checked)} />
          <span>Send the visitor's Host header to the origin (for origins that serve several sites), not the origin URL's host</span></label>`
      : html`<div><label for="origin-bucket">Bucket</label><select id="origin-bucket" name="origin-bucket" required value=${bucket} onChange=${(e) => setBucket(e.target.value)}>
          <option value="" disabled>${buckets.loading ? 'Loading your buckets…' : names.length ? 'Choose a bucket' : 'No buckets yet: create one under Buckets & keys'}</option>
          ${names.map((n) => html`<option value=${n}>${n}</option>`)}
        </select></div>
        <div><label>Index document<input name="index-document" required maxlength="1024" aria-describedby="index-document-hint" value=${indexDocument} onInput=${(e) => setIndexDocument(e.target.value)} /></label>
          <p class="hint" id="index-document-hint">Served for <code>/</code> and every path ending in <code>/</code>.</p></div>
        <div><label>Error document (optional)<input name="error-document" maxlength="1024" placeholder="404.html" aria-describedby="error-document-hint" value=${errorDocument} onInput=${(e) => setErrorDocument(e.target.value)} /></label>
          <p class="hint" id="error-document-hint">Served with status 404 when a key does not exist; empty for a plain 404.</p></div>`}
    <button type="submit" class="primary" disabled=${busy}>${busy ? 'Saving…' : 'Save origin'}</button>
  </form>`;
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const SIZE_UNITS = [['B', 1], ['KB', 1e3], ['MB', 1e6], ['GB', 1e9]];
const RATE_DEFAULTS = { requestsPerSecond: 10, burst: 20, banAfter: 0, banWindowSeconds: 60, banSeconds: 60, maxBanSeconds: 3600 };

/** "a, b\n c" as ['a', 'b', 'c']. */
const entries = (text) => text.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);

/** The largest unit that divides n evenly, for showing a stored byte count as the form's number + unit. */
function sizeParts(n) {
  if (n === null || n === undefined) return { amount: '', unit: 'MB' };
  const [unit, size] = [...SIZE_UNITS].reverse().find(([, size]) => n % size === 0 && n >= size) ?? SIZE_UNITS[0];
  return { amount: String(n / size), unit };
}

/**
 * The protection rules as a form: every field of PUT .../rules, filled from the stored rules (the API
 * replaces them whole, so a field the form left out would be cleared by a save). The server checks them
 * and its message names a bad entry. The JSON it sends is shown, for scripts that want the same.
 */
function RulesForm({ projectId, hostname, onSaved }) {
  const r = hostname.rules;
  const [allowIps, setAllowIps] = useState(r.allowIps.join('\n'));
  const [blockIps, setBlockIps] = useState(r.blockIps.join('\n'));
  const [countries, setCountries] = useState(r.blockCountries.join(', '));
  const [methods, setMethods] = useState(new Set(r.allowedMethods));
  const size = sizeParts(r.maxBodyBytes);
  const [bodyAmount, setBodyAmount] = useState(size.amount);
  const [bodyUnit, setBodyUnit] = useState(size.unit);
  const [limited, setLimited] = useState(r.rateLimit !== null);
  const [rate, setRate] = useState({ ...RATE_DEFAULTS, ...(r.rateLimit ?? {}) });
  const setRateField = (field) => (e) => setRate((x) => ({ ...x, [field]: Number(e.target.value) }));
  const toggleMethod = (m) => setMethods((set) => {
    const next = new Set(set);
    if (next.has(m)) next.delete(m);
    else next.add(m);
    return next;
  });
  const rules = {
    allowIps: entries(allowIps),
    blockIps: entries(blockIps),
    blockCountries: entries(countries).map((c) => c.toUpperCase()),
    allowedMethods: METHODS.filter((m) => methods.has(m)),
    maxBodyBytes: bodyAmount === '' ? null : Math.round(Number(bodyAmount) * (SIZE_UNITS.find(([u]) => u === bodyUnit)?.[1] ?? 1)),
    rateLimit: limited ? rate : null,
  };
  const { busy, error, onSubmit } = useAction(async () => {
    await put(`${hostnamePath(projectId, hostname.id)}/rules`, rules);
    onSaved();
  });
  return html`<form class="stack rules-form" onSubmit=${onSubmit}>
    <${ErrorNotice} error=${error} />
    <div class="grid two">
      <div><label for="rules-block-ips">Blocked IPs and CIDRs</label>
        <textarea id="rules-block-ips" name="block-ips" rows="3" spellcheck="false" placeholder=${'203.0.113.7\n198.51.100.0/24'} value=${blockIps} onInput=${(e) => setBlockIps(e.target.value)}></textarea></div>
      <div><label for="rules-allow-ips">Allowed IPs and CIDRs (only these, when any)</label>
        <textarea id="rules-allow-ips" name="allow-ips" rows="3" spellcheck="false" placeholder="2001:db8::/32" value=${allowIps} onInput=${(e) => setAllowIps(e.target.value)}></textarea></div>
    </div>
    <div><label for="rules-countries">Blocked countries</label>
      <input id="rules-countries" name="block-countries" placeholder="ISO codes: CN, RU" aria-describedby="rules-countries-hint" value=${countries} onInput=${(e) => setCountries(e.target.value)} />
      <p class="hint" id="rules-countries-hint">Two-letter ISO 3166 codes, separated by commas or spaces.</p></div>
    <fieldset class="inline"><legend>Allowed methods (none ticked: every method)</legend>
      ${METHODS.map((m) => html`<label><input type="checkbox" name="method" value=${m} checked=${methods.has(m)} onChange=${() => toggleMethod(m)} /> ${m}</label>`)}
    </fieldset>
    <div class="inline-form tight">
      <label>Largest request body<input name="max-body" type="number" min="0" step="any" placeholder="no limit" value=${bodyAmount} onInput=${(e) => setBodyAmount(e.target.value)} /></label>
      <label>Unit<select name="max-body-unit" value=${bodyUnit} onChange=${(e) => setBodyUnit(e.target.value)}>${SIZE_UNITS.map(([u]) => html`<option value=${u}>${u}</option>`)}</select></label>
    </div>
    <fieldset><legend><label class="check"><input type="checkbox" name="rate-limited" checked=${limited} onChange=${(e) => setLimited(e.target.checked)} /> Limit the requests of each client</label></legend>
      ${limited ? html`<div class="inline-form tight">
        <label>Requests per second<input name="rps" type="number" min="0.001" step="any" required value=${rate.requestsPerSecond} onInput=${setRateField('requestsPerSecond')} /></label>
        <label>Burst<input name="burst" type="number" min="1" step="1" required value=${rate.burst} onInput=${setRateField('burst')} /></label>
        <label>Ban after refusals (0: never)<input name="ban-after" type="number" min="0" step="1" required value=${rate.banAfter} onInput=${setRateField('banAfter')} /></label>
        <label>Ban for (seconds)<input name="ban-seconds" type="number" min="1" step="1" required value=${rate.banSeconds} onInput=${setRateField('banSeconds')} /></label>
      </div>
      <p class="hint">Refusals are counted over ${rate.banWindowSeconds} s; a client banned again is banned twice as long, up to ${rate.maxBanSeconds} s.</p>` : null}
    </fieldset>
    <details><summary>As JSON (PUT .../rules)</summary><pre class="snippet" data-testid="rules-json">${JSON.stringify(rules, null, 2)}</pre></details>
    <button type="submit" class="primary" disabled=${busy}>${busy ? 'Saving…' : 'Save rules'}</button>
  </form>`;
}

function ruleSummary(rules) {
  const parts = [];
  if (rules.allowIps.length) parts.push(`${rules.allowIps.length} allowed IP ranges`);
  if (rules.blockIps.length) parts.push(`${rules.blockIps.length} blocked IP ranges`);
  if (rules.blockCountries.length) parts.push(`countries blocked: ${rules.blockCountries.join(', ')}`);
  if (rules.allowedMethods.length) parts.push(`methods: ${rules.allowedMethods.join(', ')}`);
  if (rules.maxBodyBytes !== null) parts.push(`bodies up to ${bytes(rules.maxBodyBytes)}`);
  if (rules.rateLimit) parts.push(`${rules.rateLimit.requestsPerSecond}/s per client`);
  return parts.length ? parts.join(' · ') : 'no rules';
}

/** The state of a hostname's HTTPS as a badge: its words and its tone. */
function tlsBadge(tls) {
  if (tls.certificate?.expired) return { label: 'Expired', tone: 'error' };
  switch (tls.state) {
    case 'unverified': return { label: 'Not verified', tone: 'warn' };
    case 'acme-off': return { label: 'No certificate', tone: 'warn' };
    case 'pending': return { label: 'Waiting', tone: 'warn' };
    case 'issuing': return { label: 'Requesting', tone: 'warn' };
    case 'failed': return { label: tls.certificate ? 'Renewal failed' : 'Failed', tone: 'error' };
    case 'issued': return { label: 'Issued', tone: 'ok' };
    case 'uploaded': return { label: 'Uploaded', tone: 'ok' };
    default: return { label: tls.state, tone: '' };
  }
}

/** A time as the reader's date and how far it is: "12 Mar 2026, 10:00 (in 89 days)". */
const when = (iso) => html`${localDateTime(iso)} <span class="nowrap">(${fromNow(iso)})</span>`;

/** What the hostname serves over HTTPS, its certificate's facts, and the last error (as text). */
function TlsStatusView({ tls }) {
  const badge = tlsBadge(tls);
  const cert = tls.certificate;
  return html`<div class="stack tight tls-status">
      <span class=${`badge ${badge.tone}`} data-testid="tls-state">${badge.label}</span>
      <p class="tls-summary" data-testid="tls-summary">${localTimesIn(tls.summary)}</p>
    </div>
    <dl class="facts" data-testid="tls-facts">
      ${cert ? html`
        <dt>Certificate</dt><dd>${cert.source === 'uploaded' ? 'Uploaded by you' : 'Issued automatically (ACME)'}</dd>
        <dt>Names</dt><dd>${cert.names.length ? cert.names.join(', ') : 'no DNS name'}</dd>
        <dt>Valid from</dt><dd>${localDateTime(cert.notBefore)}</dd>
        <dt>${cert.expired ? 'Expired' : 'Expires'}</dt><dd data-testid="tls-expires">${when(cert.notAfter)}</dd>
        ${cert.renewsAt ? html`<dt>Renews</dt><dd data-testid="tls-renews">${when(cert.renewsAt)}</dd>` : null}
        <dt>SHA-256</dt><dd><code class="fingerprint">${cert.fingerprint}</code></dd>` : html`
        <dt>Certificate</dt><dd>none: browsers show a certificate warning for https://${tls.hostname}</dd>`}
      ${tls.failures > 0 ? html`<dt>Failed attempts</dt><dd data-testid="tls-failures">${count(tls.failures)} in a row (the reason is in the sentence above)</dd>` : null}
      ${tls.nextAttemptAt ? html`<dt>Next attempt</dt><dd>${when(tls.nextAttemptAt)}</dd>` : null}
    </dl>`;
}

/** A PEM field: pasted into the textarea or read from a file picked beside it. */
function PemField({ id, name, label, fileLabel, hint, value, onChange, placeholder }) {
  const pick = async (e) => {
    const file = e.target.files?.[0];
    if (file) onChange(await file.text());
    e.target.value = '';
  };
  return html`<div class="pem-field">
    <label for=${id}>${label}</label>
    <textarea id=${id} name=${name} rows="4" required spellcheck="false" autocomplete="off" placeholder=${placeholder} aria-describedby=${`${id}-hint`} value=${value} onInput=${(e) => onChange(e.target.value)}></textarea>
    <p class="hint" id=${`${id}-hint`}>${hint}</p>
    <label class="file-pick">${fileLabel}<input type="file" name=${`${name}-file`} accept=".pem,.crt,.cer,.key,.txt,text/plain" onChange=${pick} /></label>
  </div>`;
}

/** An uploaded certificate: the chain and its key. The key goes to the server once and is never shown again. */
function TlsUploadForm({ path, hostname, replacing, onDone }) {
  const [certificate, setCertificate] = useState('');
  const [privateKey, setPrivateKey] = useState('');
  const { busy, error, onSubmit } = useAction(async () => {
    await put(`${path}/certificate`, { certificate, privateKey });
    setCertificate('');
    setPrivateKey('');
    onDone();
  });
  return html`<form class="stack" onSubmit=${onSubmit} aria-labelledby="tls-upload-title">
    <h3 id="tls-upload-title">${replacing ? 'Replace it with a certificate of your own' : 'Upload a certificate'}</h3>
    <div class="grid two">
      <${PemField} id="tls-certificate" name="certificate" label="Certificate chain (PEM)" fileLabel="Or read the chain from a file" value=${certificate} onChange=${setCertificate}
        placeholder="-----BEGIN CERTIFICATE-----" hint=${`The certificate for ${hostname} first, then its intermediates.`} />
      <${PemField} id="tls-private-key" name="private-key" label="Private key (PEM)" fileLabel="Or read the key from a file" value=${privateKey} onChange=${setPrivateKey}
        placeholder="-----BEGIN PRIVATE KEY-----" hint="Unencrypted. Stored encrypted and never shown again, here or by the API." />
    </div>
    <${ErrorNotice} error=${error} />
    <div><button type="submit" disabled=${busy}>${busy ? 'Uploading…' : 'Upload certificate'}</button></div>
  </form>`;
}

/** The HTTPS settings, saved together with one button (PATCH .../tls takes any of them). */
function TlsSettingsForm({ path, hostname, settings, onSaved }) {
  const [redirectHttps, setRedirectHttps] = useState(settings.redirectHttps);
  const [hstsMaxAge, setHstsMaxAge] = useState(String(settings.hstsMaxAge));
  const [hstsIncludeSubdomains, setHstsIncludeSubdomains] = useState(settings.hstsIncludeSubdomains);
  const [minTls, setMinTls] = useState(settings.minTls);
  const [saved, setSaved] = useState(false);
  const seconds = hstsMaxAge.trim() === '' ? NaN : Number(hstsMaxAge);
  const { busy, error, onSubmit } = useAction(async () => {
    setSaved(false);
    await patch(path, { redirectHttps, hstsMaxAge: seconds, hstsIncludeSubdomains, minTls });
    setSaved(true);
    onSaved();
  });
  const edited = (set) => (value) => {
    setSaved(false);
    set(value);
  };
  const hstsWords = !Number.isFinite(seconds) ? 'Whole seconds, 0 for off.'
    : seconds === 0 ? 'Off: no Strict-Transport-Security header is sent.'
    : `On: a browser that visited over HTTPS uses only HTTPS for ${duration(seconds)} after. One year is 31536000.`;
  return html`<form class="stack" onSubmit=${onSubmit} aria-labelledby="tls-settings-title">
    <h3 id="tls-settings-title">Settings</h3>
    <label class="check"><input type="checkbox" name="redirect-https" checked=${redirectHttps} onChange=${(e) => edited(setRedirectHttps)(e.target.checked)} />
      <span>Redirect HTTP to HTTPS (308): visitors on http:// are sent to https://</span></label>
    <div><label for="tls-hsts">HSTS max-age in seconds (0: off)</label>
      <input id="tls-hsts" name="hsts-max-age" type="number" min="0" max="63072000" step="1" required inputmode="numeric" aria-describedby="tls-hsts-hint"
        value=${hstsMaxAge} onInput=${(e) => edited(setHstsMaxAge)(e.target.value)} />
      <p class="hint" id="tls-hsts-hint" data-testid="hsts-words">${hstsWords}</p></div>
    <label class="check"><input type="checkbox" name="hsts-include-subdomains" checked=${hstsIncludeSubdomains} onChange=${(e) => edited(setHstsIncludeSubdomains)(e.target.checked)} />
      <span>HSTS includes subdomains: every name under ${hostname} must serve HTTPS too</span></label>
    <fieldset class="inline"><legend>Minimum TLS version</legend>
      <label><input type="radio" name="min-tls" value="1.2" checked=${minTls === '1.2'} onChange=${() => edited(setMinTls)('1.2')} /> TLS 1.2 (every current browser)</label>
      <label><input type="radio" name="min-tls" value="1.3" checked=${minTls === '1.3'} onChange=${() => edited(setMinTls)('1.3')} /> TLS 1.3 (newer clients only)</label>
    </fieldset>
    <${ErrorNotice} error=${error} />
    <div class="form-actions"><button type="submit" class="primary" disabled=${busy}>${busy ? 'Saving…' : 'Save settings'}</button>
      ${saved ? html`<span class="muted" role="status">Settings saved</span>` : null}</div>
  </form>`;
}

/**
 * A hostname's HTTPS (GET .../tls and its actions): the status in words, "request now" with ACME on,
 * an upload of a certificate of the user's own, its removal after a confirmation, and the settings.
 * While a certificate is being requested the status is asked again every few seconds.
 */
function TlsPanel({ projectId, hostname }) {
  const path = `${hostnamePath(projectId, hostname.id)}/tls`;
  const state = useLoad(() => get(path), [path]);
  const tls = state.data?.tls;
  const working = tls?.acme && (tls.state === 'issuing' || tls.state === 'pending') && hostname.verified;
  useEffect(() => {
    if (!working) return undefined;
    const timer = setTimeout(state.reload, 5000);
    return () => clearTimeout(timer);
  }, [working, state.data]);
  const issue = useAction(async () => {
    await post(`${path}/issue`);
    state.reload();
  });
  return html`<div class="stack tls-panel" data-testid="tls-panel">
    <${Loaded} state=${state}>${({ tls }) => html`
      <${TlsStatusView} tls=${tls} />
      ${tls.acme && tls.state !== 'uploaded' || tls.certificate ? html`<div class="tls-actions">
        ${tls.acme && tls.state !== 'uploaded' ? html`<button type="button" disabled=${issue.busy || tls.state === 'issuing' || tls.state === 'unverified'} onClick=${() => issue.run()}>
          ${issue.busy ? 'Asking…' : 'Request certificate now'}</button>` : null}
        ${tls.certificate ? html`<${ConfirmButton} label="Remove certificate" confirmLabel="Remove certificate" className="danger"
          question=${tls.acme
            ? `Remove the certificate of ${hostname.hostname}? Browsers show a certificate warning for https://${hostname.hostname} until a new one is issued, which is requested at once.`
            : `Remove the certificate of ${hostname.hostname}? Browsers show a certificate warning for https://${hostname.hostname} until you upload another one.`}
          onConfirm=${async () => { await del(`${path}/certificate`); state.reload(); }} />` : null}
      </div>` : null}
      <${ErrorNotice} error=${issue.error} />
      <${TlsUploadForm} path=${path} hostname=${hostname.hostname} replacing=${tls.certificate !== null} onDone=${state.reload} />
      <${TlsSettingsForm} path=${path} hostname=${hostname.hostname} settings=${tls.settings} onSaved=${state.reload} />`}<//>
  </div>`;
}

function Deployments({ project }) {
  const state = useLoad(() => get(`${projectPath(project.id)}/deployments`), [project.id]);
  const [name, setName] = useState('');
  const add = useAction(async () => {
    await post(`${projectPath(project.id)}/deployments`, { name });
    setName('');
    state.reload();
  });
  return html`<h3>Deployments</h3>
    <p class="muted">A deployment names a release of the project; assets uploaded with it are listed under it.</p>
    <${Loaded} state=${state}>${(data) => data.deployments.length
      ? html`<ul class="plain" data-testid="deployments">${data.deployments.map((d) => html`<li key=${d.id}><span class="file-name">${d.name}</span> <span class="muted">${dateTime(d.createdAt)}</span></li>`)}</ul>`
      : html`<p class="muted empty">No deployments yet.</p>`}<//>
    <form class="inline-form" onSubmit=${add.onSubmit}>
      <label>New deployment<input name="deployment-name" required maxlength="100" placeholder="v1.4.0" value=${name} onInput=${(e) => setName(e.target.value)} /></label>
      <button type="submit" disabled=${add.busy}>Add deployment</button>
      <${ErrorNotice} error=${add.error} />
    </form>`;
}

const DIALOG_TITLES = { origin: 'Origin', rules: 'Rules', https: 'HTTPS' };

function Hostnames({ project, onDeleted }) {
  const state = useLoad(() => get(`${projectPath(project.id)}/hostnames`), [project.id]);
  const [name, setName] = useState('');
  const [edit, setEdit] = useState(null);
  const [verifying, setVerifying] = useState({});
  const add = useAction(async () => {
    await post(`${projectPath(project.id)}/hostnames`, { hostname: name });
    setName('');
    state.reload();
  });
  const verify = async (h) => {
    setVerifying((v) => ({ ...v, [h.id]: { busy: true } }));
    try {
      await post(`${hostnamePath(project.id, h.id)}/verify`);
      setVerifying((v) => ({ ...v, [h.id]: null }));
      state.reload();
    } catch (err) {
      setVerifying((v) => ({ ...v, [h.id]: { error: err.message } }));
    }
  };
  const closeEdit = () => {
    setEdit(null);
    state.reload();
  };
  const columns = [
    { label: 'Hostname', render: (h) => html`<span class="file-name" data-testid="hostname">${h.hostname}</span>` },
    {
      label: 'Verification',
      render: (h) => h.verified
        ? html`<span class="badge ok">verified (${h.verifiedBy})</span>`
        : html`<div class="stack tight"><span class="badge warn">not verified</span>
            <span class="muted">Publish TXT <code>${h.verification.name}</code> = <code>${h.verification.value}</code></span>
            ${verifying[h.id]?.error ? html`<${Notice} tone="error">${verifying[h.id].error}<//>` : null}
            <button type="button" class="small" disabled=${verifying[h.id]?.busy} onClick=${() => verify(h)}>Verify now</button></div>`,
    },
    { label: 'Origin', render: (h) => html`<span class="muted">${originText(h.origin)}</span>` },
    { label: 'Rules', render: (h) => html`<span class="muted">${ruleSummary(h.rules)}</span>` },
    {
      label: 'Actions',
      className: 'row-actions',
      render: (h) => html`<button type="button" class="small" onClick=${() => setEdit({ what: 'origin', h })}>Origin</button>
        <button type="button" class="small" onClick=${() => setEdit({ what: 'rules', h })}>Rules</button>
        <button type="button" class="small" onClick=${() => setEdit({ what: 'https', h })}>HTTPS</button>
        <${PurgeButton} path=${`${hostnamePath(project.id, h.id)}/purge`} what=${h.hostname} />
        <${ConfirmButton} label="Remove" confirmLabel="Remove" className="small danger" question=${`Remove ${h.hostname}? The proxy stops serving it at once.`}
          onConfirm=${async () => { await del(hostnamePath(project.id, h.id)); state.reload(); }} />`,
    },
  ];
  return html`<${Card} title=${`Project ${project.name}`}>
    <div class="card-actions"><${ConfirmButton} label="Delete project" className="small danger" confirmLabel="Delete project"
      question=${`Delete the project ${project.name}? Its hostnames stop being served at once, its deployments go, and its assets stay (no longer linked to it).`}
      onConfirm=${async () => { await del(projectPath(project.id)); onDeleted(); }} /></div>
    <${Loaded} state=${state}>${(data) => html`<${Table} caption=${`Hostnames of ${project.name}`} columns=${columns} rows=${data.hostnames.map((h) => ({ ...h, key: h.id }))} empty="No hostnames yet." />`}<//>
    <form class="inline-form" onSubmit=${add.onSubmit}>
      <label>Add hostname<input name="hostname" required placeholder="www.example.com" value=${name} onInput=${(e) => setName(e.target.value)} /></label>
      <button type="submit">Add</button>
      <${ErrorNotice} error=${add.error} />
    </form>
    <${Dialog} open=${edit !== null} title=${edit ? `${DIALOG_TITLES[edit.what]} of ${edit.h.hostname}` : ''} onClose=${closeEdit}>
      ${edit?.what === 'origin' ? html`<${OriginForm} projectId=${project.id} hostname=${edit.h} onSaved=${closeEdit} />` : null}
      ${edit?.what === 'rules' ? html`<${RulesForm} projectId=${project.id} hostname=${edit.h} onSaved=${closeEdit} />` : null}
      ${edit?.what === 'https' ? html`<${TlsPanel} projectId=${project.id} hostname=${edit.h} />` : null}
      <div class="dialog-actions"><button type="button" onClick=${closeEdit}>${edit?.what === 'https' ? 'Close' : 'Cancel'}</button></div>
    <//>
    <${Deployments} project=${project} />
  <//>`;
}

export function ProjectsPage() {
  const state = useLoad(() => get('/api/v3/projects'));
  const [name, setName] = useState('');
  const create = useAction(async () => {
    await post('/api/v3/projects', { name });
    setName('');
    state.reload();
  });
  return html`<${Page} title="Projects and edge proxy">
    <${Card}>
      <p class="muted">The edge proxy serves your own hostnames in front of your origin (a server or one of your buckets), with protection rules, logs and anomaly detection.</p>
      <form class="inline-form" onSubmit=${create.onSubmit}>
        <label>New project<input name="project-name" required maxlength="100" value=${name} onInput=${(e) => setName(e.target.value)} /></label>
        <button type="submit">Create project</button>
        <${ErrorNotice} error=${create.error} />
      </form>
    <//>
    <${Loaded} state=${state}>${(data) => data.projects.length
      ? data.projects.map((p) => html`<${Hostnames} key=${p.id} project=${p} onDeleted=${state.reload} />`)
      : html`<p class="muted empty">No projects yet.</p>`}<//>
    <${Card}>
      <p>Traffic, blocked requests, the request log and anomalies of your hostnames are on <a href="#/security">Security events</a>.</p>
    <//>
  <//>`;
}
