// Security events: the edge traffic of the user's hostnames (GET /api/v3/cdn/proxy-logs), the request
// log itself with filters (GET /api/v3/cdn/proxy-logs/requests), anomaly detail (GET
// /api/v3/cdn/anomalies/:id), and one click to block an IP or a country on a project hostname, which
// writes the hostname's rules (PUT .../rules) and can be undone by writing the previous rules back.
import { html, useEffect, useLayoutEffect, useMemo, useRef, useState } from './preact-htm.js';
import { get, put, query } from './api.js';
import { Card, Dialog, ErrorNotice, Loaded, Notice, Page, Stat, Table, useCursorPages, useLoad } from './components.js';
import { bytes, count, dateTime, percent } from './format.js';
import { TimeChart } from './chart.js';

const WINDOWS = [
  [1, 'Last hour'],
  [6, 'Last 6 hours'],
  [24, 'Last 24 hours'],
  [168, 'Last 7 days'],
];

/** Each decision as a person reads it. */
const DECISIONS = {
  allowed: 'Allowed',
  blocked: 'Blocked (any rule)',
  'ip-blocked': 'Blocked IP',
  'ip-not-allowed': 'Not an allowed IP',
  'country-blocked': 'Blocked country',
  'method-not-allowed': 'Method not allowed',
  'body-too-large': 'Body too large',
  'rate-limited': 'Rate limited',
  banned: 'Banned after repeated refusals',
  'credits-depleted': 'Refused: your credits ran out (402)',
  refused: 'Refused by the CDN (401, 402, 403, 429, 451)',
};
const decisionText = (d) => DECISIONS[d] ?? d;

const RATINGS = { low: 'Low risk', medium: 'Medium risk', high: 'High risk', critical: 'Critical risk' };

/** A risk signal in words: what was seen, and how much of the index it makes. */
function signalText(s) {
  const share = percent(s.value);
  const seen = {
    'blocked-share': `${share} of requests were blocked`,
    'source-concentration': s.value > 0 ? 'One source sent more than 30% of the requests' : 'No single source dominates',
    'geo-concentration': s.value > 0 ? 'Requests are concentrated in few countries' : 'Requests come from a spread of countries',
    'origin-errors': s.value > 0 ? `The origin failed ${percent(Math.min(1, s.value / 2))} of the requests it was sent` : 'The origin answered without errors',
    anomalies: s.value > 0 ? 'An anomaly was detected in this window' : 'No anomaly in this window',
  }[s.name] ?? s.name;
  return `${seen}: ${Math.round(s.points)} of its ${s.weight} points`;
}

/** An anomaly in words, from its kind, observed figure and baseline (docs/EDGE.md "Anomalies"). */
export function anomalyText(a) {
  const times = a.baseline > 0 ? ` (${(a.observed / a.baseline).toFixed(1)}×)` : '';
  switch (a.kind) {
    case 'rate-spike': return `Traffic spike: ${count(a.observed)} requests in an interval where ${count(Math.round(a.baseline))} is usual${times}`;
    case 'rate-drop': return `Traffic drop: ${count(a.observed)} requests in an interval where ${count(Math.round(a.baseline))} is usual`;
    case 'source-dominance': return `One source sent ${percent(a.observed)} of the requests${a.detail?.source ? ` (${a.detail.source})` : ''}`;
    case 'country-dominance': return `${percent(a.observed)} of the requests came from ${a.detail?.country ?? 'one country'}, usually ${percent(a.baseline)}`;
    case 'blocked-surge': return `Blocked requests surged: ${count(a.observed)} in an interval where ${count(Math.round(a.baseline))} is usual`;
    case 'origin-errors': return `The origin failed ${percent(a.observed)} of the requests, usually ${percent(a.baseline)}`;
    default: return `${a.kind}: ${count(a.observed)} against ${count(a.baseline)}`;
  }
}

/** One click blocks an IP or a country on a project hostname; the previous rules are kept for undo. */
function useBlocker(hostnames, onChanged) {
  const [last, setLast] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const target = (hostname) => hostnames.find((h) => h.hostname === hostname && h.kind === 'project');
  async function run(work) {
    setBusy(true);
    setError(null);
    try {
      await work();
      onChanged?.();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }
  async function rulesOf(h) {
    const base = `/api/v3/projects/${encodeURIComponent(h.projectId)}/hostnames`;
    const found = (await get(base)).hostnames.find((x) => x.hostname === h.hostname);
    if (!found) throw new Error(`${h.hostname} is no longer one of your hostnames.`);
    return { path: `${base}/${encodeURIComponent(found.id)}/rules`, rules: found.rules };
  }
  const change = (hostname, what, edit) => run(async () => {
    const h = target(hostname);
    if (!h) return;
    const { path, rules } = await rulesOf(h);
    const next = edit(rules);
    if (next === null) return setLast({ hostname, message: `${what} is already blocked on ${hostname}.`, path: null });
    await put(path, next);
    setLast({ hostname, message: `Blocked ${what} on ${hostname}.`, path, previous: rules });
  });
  const undo = () => run(async () => {
    if (!last?.path) return;
    await put(last.path, last.previous);
    setLast({ hostname: last.hostname, message: `Undone: the rules of ${last.hostname} are as they were.`, path: null });
  });
  return {
    busy,
    canBlock: (hostname) => Boolean(target(hostname)),
    blockIp: (hostname, ip) => change(hostname, ip, (r) => (r.blockIps.includes(ip) ? null : { ...r, blockIps: [...r.blockIps, ip] })),
    blockCountry: (hostname, code, name) => change(hostname, name, (r) => (r.blockCountries.includes(code) ? null : { ...r, blockCountries: [...r.blockCountries, code] })),
    /** What the last block did, with its undo, and a failure in words. */
    status: last || error
      ? html`<div class="block-status" role="status" data-testid="block-status">${last ? last.message : null}
          ${last?.path ? html` <button type="button" class="small" disabled=${busy} onClick=${undo}>Undo</button>` : null}
          <${ErrorNotice} error=${error} /></div>`
      : null,
  };
}

function BlockButton({ blocker, hostname, ip, country, countryName }) {
  if (!hostname || !blocker.canBlock(hostname)) return null;
  if (ip) {
    return html`<button type="button" class="small danger" disabled=${blocker.busy} onClick=${() => blocker.blockIp(hostname, ip)}
      aria-label=${`Block IP ${ip} on ${hostname}`}>Block IP</button>`;
  }
  if (!country) return null;
  return html`<button type="button" class="small danger" disabled=${blocker.busy} onClick=${() => blocker.blockCountry(hostname, country, countryName)}
    aria-label=${`Block country ${countryName} on ${hostname}`}>Block country</button>`;
}

function AnomalyDetail({ id, blocker, onClose }) {
  const state = useLoad(() => get(`/api/v3/cdn/anomalies/${encodeURIComponent(id)}`), [id]);
  return html`<${Dialog} open=${true} title="Anomaly" onClose=${onClose}>
    <${Loaded} state=${state}>${({ data }) => {
      const a = data.anomaly;
      return html`<div class="stack" data-testid="anomaly-detail">
        <p><span class=${`badge ${a.severity}`}>${a.severity} severity</span> ${anomalyText(a)}</p>
        <p class="muted">${a.hostname} · from ${dateTime(a.startedAt)} ${a.endedAt ? `to ${dateTime(a.endedAt)}` : '· still going on'} · ${count(data.requests)} requests in that time</p>
        <h3>Where they came from</h3>
        <${Table} caption="Sources of the anomaly" rows=${data.sources.map((s) => ({ ...s, key: s.ip }))} empty="No request of this span is in the log."
          columns=${[
            { label: 'Client IP', render: (s) => html`<code>${s.ip}</code>` },
            { label: 'Requests', className: 'num', render: (s) => `${count(s.requests)} (${percent(data.requests ? s.requests / data.requests : 0)})` },
            { label: 'Blocked', className: 'num', render: (s) => count(s.blocked) },
            { label: '', className: 'row-actions', render: (s) => html`<${BlockButton} blocker=${blocker} hostname=${a.hostname} ip=${s.ip} />` },
          ]} />
        <${Table} caption="Countries of the anomaly" rows=${data.countries.map((c) => ({ ...c, key: c.code || 'unknown' }))} empty="No country known."
          columns=${[
            { label: 'Country', render: (c) => c.country },
            { label: 'Requests', className: 'num', render: (c) => `${count(c.requests)} (${percent(c.share)})` },
            { label: '', className: 'row-actions', render: (c) => html`<${BlockButton} blocker=${blocker} hostname=${a.hostname} country=${c.code} countryName=${c.country} />` },
          ]} />
        ${blocker.status}
      </div>`;
    }}<//>
    <div class="dialog-actions"><button type="button" onClick=${onClose}>Close</button></div>
  <//>`;
}

/** A log time: the time of day to the second when it is today, else the day and minute. */
function logTime(iso) {
  const d = new Date(iso);
  const today = d.toDateString() === new Date().toDateString();
  return today
    ? d.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' })
    : d.toLocaleString('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });
}

const NO_FILTER = { decision: '', ip: '', country: '', path: '' };

/** The request log, newest first, with filters; pages by the API's cursor. */
function RequestLog({ hostname, range, filter, setFilter, blocker }) {
  const [draft, setDraft] = useState(filter);
  // The form follows a filter set from outside (Clear, a country clicked in the report) in the same
  // render, not after the next paint as useEffect would: typed right after Clear, a busy browser
  // painted late and the reset wiped what had been typed, so Apply sent no filter at all.
  useLayoutEffect(() => setDraft(filter), [filter]);
  const list = useCursorPages(
    (cursor, limit) => `/api/v3/cdn/proxy-logs/requests${query({ hostname, from: range.from, to: range.to, ...filter, cursor, limit })}`,
    [hostname, range.from, range.to, filter],
    { label: 'Request pages' },
  );
  const state = list.state;
  const field = (name) => (e) => setDraft((d) => ({ ...d, [name]: e.target.value }));
  const columns = [
    { label: 'Time', render: (r) => html`<time datetime=${r.time} title=${dateTime(r.time)}>${logTime(r.time)}</time>` },
    ...(hostname ? [] : [{ label: 'Hostname', render: (r) => html`<span class="truncate" title=${r.host} tabindex="0">${r.host}</span>` }]),
    { label: 'Request', render: (r) => html`<span class="truncate" title=${`${r.method} ${r.path}`} tabindex="0"><code>${r.method}</code> ${r.path}</span>` },
    { label: 'Status', className: 'num', render: (r) => r.status },
    { label: 'Decision', render: (r) => html`<span class=${`badge ${r.decision === 'allowed' ? 'ok' : 'high'}`}>${decisionText(r.decision)}</span>` },
    { label: 'Client IP', render: (r) => html`<code>${r.clientIp}</code>` },
    { label: 'Country', render: (r) => r.countryName },
    { label: 'Bytes', className: 'num', render: (r) => bytes(r.bytesSent) },
    {
      label: 'Block',
      className: 'row-actions',
      render: (r) => html`<${BlockButton} blocker=${blocker} hostname=${r.host} ip=${r.clientIp} />
        ${r.country ? html`<${BlockButton} blocker=${blocker} hostname=${r.host} country=${r.country} countryName=${r.countryName} />` : null}`,
    },
  ];
  return html`<${Card} title="Requests" wide=${true}>
    <form class="filters" aria-label="Filter the requests" onSubmit=${(e) => { e.preventDefault(); setFilter({ ...draft, ip: draft.ip.trim(), country: draft.country.trim(), path: draft.path.trim() }); }}>
      <div><label for="log-decision">Decision</label>
        <select id="log-decision" value=${draft.decision} onChange=${field('decision')}>
          <option value="">Any</option>
          ${Object.entries(DECISIONS).map(([value, text]) => html`<option value=${value}>${text}</option>`)}
        </select></div>
      <div><label for="log-ip">Client IP</label><input id="log-ip" value=${draft.ip} onInput=${field('ip')} placeholder="203.0.113.7" spellcheck="false" /></div>
      <div><label for="log-country">Country</label><input id="log-country" value=${draft.country} onInput=${field('country')} placeholder="DE, or unknown" maxlength="7" /></div>
      <div><label for="log-path">Path starts with</label><input id="log-path" value=${draft.path} onInput=${field('path')} placeholder="/api/" spellcheck="false" /></div>
      <div class="filter-actions"><button type="submit" class="primary">Apply</button>
        <button type="button" onClick=${() => setFilter(NO_FILTER)}>Clear</button></div>
    </form>
    <div data-testid="log" aria-busy=${state.loading ? 'true' : 'false'}><${Loaded} state=${state}>${({ data }) => html`
      <p class="muted" data-testid="log-range">Requests from ${dateTime(data.from)} to ${dateTime(data.to)}, newest first${list.page > 1 ? ` (page ${list.page})` : ''}.</p>
      <${Table} caption="Request log" scroll=${true} columns=${columns} rows=${data.requests.map((r) => ({ ...r, key: r.id }))} empty="No request matches." />
      ${list.pager}`}<//></div>
  <//>`;
}

function Report({ data, blocker, hostname, setFilter, setRange, openAnomaly }) {
  const [sourcesBy, setSourcesBy] = useState('requests');
  const chart = useMemo(() => {
    const points = data.series.points;
    return {
      times: points.map((p) => Date.parse(p.start) / 1000),
      series: [
        { label: 'Allowed', values: points.map((p) => p.allowed), color: '--ok', integer: true, format: (v) => count(Math.round(v)) },
        { label: 'Blocked', values: points.map((p) => p.blocked), color: '--danger', integer: true, format: (v) => count(Math.round(v)) },
      ],
    };
  }, [data]);
  const r = data.requests;
  const minutes = data.series.bucketSeconds / 60;
  // A point stands for the bucket that starts at it: a span selected up to a point takes in its bucket.
  const selectSpan = (from, to) => setRange({ from: new Date(from * 1000).toISOString(), to: new Date((to + data.series.bucketSeconds) * 1000 - 1).toISOString() });
  const point = minutes === 60 ? 'an hour' : minutes === 1 ? 'a minute' : `${minutes} minutes`;
  const sources = [
    { label: 'Client IP', sortValue: (s) => s.ip, render: (s) => html`<code>${s.ip}</code>` },
    { label: 'Requests', className: 'num', sortValue: (s) => s.requests, render: (s) => `${count(s.requests)} (${percent(r.total ? s.requests / r.total : 0)})` },
    { label: 'Bytes', className: 'num', sortValue: (s) => s.bytes, render: (s) => bytes(s.bytes) },
    { label: 'Blocked', className: 'num', sortValue: (s) => s.blocked, render: (s) => count(s.blocked) },
    { label: 'Risk', render: (s) => html`<span class=${`badge ${s.risk.rating}`}>${RATINGS[s.risk.rating]}</span>` },
    {
      label: 'Actions',
      className: 'row-actions',
      render: (s) => html`<button type="button" class="small" onClick=${() => setFilter({ ...NO_FILTER, ip: s.ip })} aria-label=${`Show the requests of ${s.ip}`}>Requests</button>
        <${BlockButton} blocker=${blocker} hostname=${hostname} ip=${s.ip} />`,
    },
  ];
  const anomalies = [
    { label: 'Started', render: (a) => html`<span class="nowrap">${dateTime(a.startedAt)}</span>` },
    { label: 'Hostname', render: (a) => html`<span class="truncate" title=${a.hostname} tabindex="0">${a.hostname}</span>` },
    { label: 'What happened', render: (a) => anomalyText(a) },
    { label: 'Severity', render: (a) => html`<span class=${`badge ${a.severity}`}>${a.severity}</span>` },
    { label: 'State', render: (a) => (a.endedAt ? `ended ${dateTime(a.endedAt)}` : 'going on') },
    { label: 'Actions', className: 'row-actions', render: (a) => html`<button type="button" class="small" onClick=${() => openAnomaly(a.id)} aria-label=${`Details of the anomaly of ${dateTime(a.startedAt)}`}>Details</button>` },
  ];
  return html`
    ${data.available ? null : html`<p class="muted">No proxied or CDN request in this window.</p>`}
    <div class="stats compact">
      <${Stat} label="Requests" value=${count(r.total)} />
      <${Stat} label="Allowed" value=${count(r.allowed)} tone="ok" hint=${r.total ? `${percent(r.allowed / r.total)} of requests` : null} />
      <${Stat} label="Blocked" value=${count(r.blocked)} tone=${r.blocked ? 'warn' : ''} hint=${r.total ? `${percent(r.blocked / r.total)} of requests` : null} />
      <${Stat} label="Origin errors" value=${count(r.serverErrors)} hint=${r.allowed ? `${percent(r.serverErrors / r.allowed)} of allowed requests` : null} />
      <${Stat} label="Bytes served" value=${bytes(data.bytes)} />
      <${Stat} label="Threat level" value=${RATINGS[data.risk.rating]} hint=${`${data.risk.index} of 100`} tone=${data.risk.rating === 'low' ? 'ok' : 'warn'} />
    </div>
    <${TimeChart} times=${chart.times} series=${chart.series} label=${`Allowed and blocked requests, a point for ${point}`}
      onSelect=${selectSpan} />
    <p class="hint">Each point is ${point}. Drag across the chart to list the requests of that time.</p>
    <div class="grid">
      <div data-testid="blocked-by"><h3>Blocked, by rule</h3>
        ${Object.keys(r.blockedBy).length
          ? html`<ul class="plain">${Object.entries(r.blockedBy).sort((a, b) => b[1] - a[1]).map(([rule, n]) => html`<li>
              <button type="button" class="link" onClick=${() => setFilter({ ...NO_FILTER, decision: rule })}>${decisionText(rule)}</button>${`: ${count(n)} ${n === 1 ? 'request' : 'requests'}, ${percent(n / r.total)} of all`}</li>`)}</ul>`
          : html`<p class="muted empty">Nothing blocked.</p>`}</div>
      <div data-testid="countries"><h3>Countries</h3>
        ${data.geo.length
          ? html`<ul class="plain">${data.geo.map((g) => html`<li>
              <button type="button" class="link" onClick=${() => setFilter({ ...NO_FILTER, country: g.code || 'unknown' })}>${g.country}</button>${`: ${percent(g.share)} of requests (${count(g.requests)})`}
              ${g.code ? html` <${BlockButton} blocker=${blocker} hostname=${hostname} country=${g.code} countryName=${g.country} />` : null}</li>`)}</ul>`
          : html`<p class="muted empty">No requests.</p>`}</div>
      <div data-testid="risk-signals"><h3>Why ${RATINGS[data.risk.rating].toLowerCase()}</h3>
        <ul class="plain">${data.risk.signals.map((s) => html`<li>${signalText(s)}</li>`)}</ul></div>
    </div>
    ${hostname ? null : html`<p class="hint">Choose one of your project hostnames above to block sources and countries from these lists; the request log blocks on each request's own hostname.</p>`}
    <div class="section-head"><h3>Top sources</h3>
      <label for="sources-by" class="inline-label">Busiest by<select id="sources-by" value=${sourcesBy} onChange=${(e) => setSourcesBy(e.target.value)}>
        <option value="requests">requests</option><option value="bytes">bytes sent</option></select></label></div>
    <${Table} caption=${`Top client IPs by ${sourcesBy === 'bytes' ? 'bytes sent' : 'requests'}`} columns=${sources}
      rows=${(sourcesBy === 'bytes' ? data.topSourcesByBytes : data.topSources).map((s) => ({ ...s, key: s.ip }))} empty="No sources yet." />
    <h3>Anomalies</h3>
    <${Table} caption="Anomaly events" columns=${anomalies} rows=${data.anomalies.map((a) => ({ ...a, key: a.id }))} empty="No anomalies in this window." />`;
}

function hashParams() {
  return new URLSearchParams(location.hash.split('?')[1] ?? '');
}

/**
 * The shortest window that holds all of a report's traffic, so that a burst of the last minutes is not
 * one spike at the edge of a day; null when the report has none.
 */
function fittingHours(report) {
  const first = report.series.points.find((p) => p.requests > 0);
  if (!first) return null;
  const needed = Date.parse(report.to) - Date.parse(first.start);
  return WINDOWS.map(([h]) => h).find((h) => h * 3_600_000 >= needed) ?? report.hours;
}

export function SecurityPage() {
  const initial = hashParams();
  const [hostname, setHostname] = useState(initial.get('hostname') ?? '');
  const [hours, setHoursState] = useState(Number(initial.get('hours')) || 24);
  // Until the user picks a window, the first report's traffic picks it.
  const picked = useRef(initial.has('hours'));
  const [fitted, setFitted] = useState(null);
  const setHours = (h) => {
    picked.current = true;
    setFitted(null);
    setHoursState(h);
  };
  const [filter, setFilterState] = useState(NO_FILTER);
  const [zoom, setZoom] = useState(null);
  const [anomaly, setAnomaly] = useState(null);
  const log = useRef(null);
  const state = useLoad(() => get(`/api/v3/cdn/proxy-logs${query({ hostname, hours })}`), [hostname, hours]);
  const hostnames = state.data?.data.hostnames ?? [];
  useEffect(() => {
    if (picked.current || !state.data) return;
    picked.current = true;
    const fit = fittingHours(state.data.data);
    if (fit !== null && fit < hours) {
      setFitted({ from: hours, to: fit });
      setHoursState(fit);
    }
  }, [state.data]);
  const blocker = useBlocker(hostnames);
  const setFilter = (f) => {
    setFilterState(f);
    log.current?.scrollIntoView({ block: 'start' });
  };
  const range = useMemo(() => {
    if (zoom) return zoom;
    return { from: new Date(Date.now() - hours * 3_600_000).toISOString(), to: '' };
  }, [zoom, hours, state.data]);
  return html`<${Page} title="Security events" actions=${html`<button type="button" onClick=${state.reload}>Refresh</button>`}>
    <${Card} wide=${true}>
      <form class="filters" onSubmit=${(e) => e.preventDefault()} aria-label="Hostname and window">
        <div><label for="security-hostname">Hostname</label>
          <select id="security-hostname" value=${hostname} onChange=${(e) => { setHostname(e.target.value); setZoom(null); }}>
            <option value="">All hostnames</option>
            ${hostnames.map((h) => html`<option value=${h.hostname}>${h.hostname}${h.kind === 'cdn' ? ' (CDN)' : ''}</option>`)}
          </select></div>
        <div><label for="security-window">Window</label>
          <select id="security-window" value=${hours} onChange=${(e) => { setHours(Number(e.target.value)); setZoom(null); }}>
            ${WINDOWS.map(([h, text]) => html`<option value=${h}>${text}</option>`)}
          </select></div>
      </form>
      ${fitted ? html`<p class="hint" data-testid="window-fitted">All the traffic of the ${WINDOWS.find(([h]) => h === fitted.from)?.[1].toLowerCase() ?? 'window'} is in the ${WINDOWS.find(([h]) => h === fitted.to)?.[1].toLowerCase().replace(/^last /, 'last ')}, so that is the window shown.</p>` : null}
      <${Loaded} state=${state}>${({ data }) => html`<${Report} data=${data} blocker=${blocker} hostname=${hostname} setFilter=${setFilter}
        setRange=${(r) => { setZoom(r); log.current?.scrollIntoView({ block: 'start' }); }} openAnomaly=${setAnomaly} />`}<//>
    <//>
    <div ref=${log}>
      ${zoom ? html`<${Notice}>Requests between ${dateTime(zoom.from)} and ${dateTime(zoom.to)}. <button type="button" class="small" onClick=${() => setZoom(null)}>Show the whole window</button><//>` : null}
      <${RequestLog} hostname=${hostname} range=${range} filter=${filter} setFilter=${setFilterState} blocker=${blocker} />
    </div>
    ${anomaly ? html`<${AnomalyDetail} id=${anomaly} blocker=${blocker} onClose=${() => setAnomaly(null)} />` : blocker.status ? html`<div class="toast">${blocker.status}</div>` : null}
  <//>`;
}

