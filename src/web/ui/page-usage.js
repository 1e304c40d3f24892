// Usage: what the account stores against its storage quota (GET /api/v3/storage/quota), the credits
// (SPEC.md §2.6) of GET /api/v3/cdn/usage, a chart of the last days
// (GET /api/v3/cdn/usage/daily), and the usage events (§2.7) and credit ledger (§2.8) a page at a time,
// filtered by dates (GET /api/v3/cdn/usage/events, /usage/ledger).
import { html, useMemo, useState } from './preact-htm.js';
import { get, query } from './api.js';
import { Card, CreditsBanner, Loaded, Page, QuotaLine, Stat, Table, useCursorPages, useLoad } from './components.js';
import { binaryBytes, bytes, count, credits, dateTime, ledgerCredits } from './format.js';
import { TimeChart } from './chart.js';

// The API's event names, as a user reads them (an unknown one is shown as it comes).
const USAGE_EVENTS = { upload: 'Upload', download: 'Download', delete: 'Delete' };
const LEDGER_ENTRIES = { upload: 'Upload', transfer: 'Transfer', storage: 'Storage', grant: 'Credits granted', free_monthly_grant: 'Free monthly credits' };

/**
 * `2026-12-03T13:00:00.000Z/2026-12-03T14:00:00.000Z` -> `2026-12-03 13:00–14:00 UTC`; a whole day
 * (a storage entry's) -> `2026-12-03 UTC`.
 */
function periodText(period) {
  const [from, to] = period.split('/');
  if (!from || !to) return period;
  if (Date.parse(to) - Date.parse(from) === 86_400_000) return `${from.slice(0, 10)} UTC`;
  return `${from.slice(0, 10)} ${from.slice(11, 16)}–${to.slice(11, 16)} UTC`;
}

function ledgerSubject(l) {
  if (l.metadata?.key) return l.metadata.key;
  if (l.eventType === 'storage' && l.metadata?.period) {
    const hours = l.metadata.hours === undefined ? '' : `, ${count(l.metadata.hours)} h sampled`;
    return `${periodText(l.metadata.period)}${hours} at ${credits(l.rate)} / GB-day`;
  }
  if (l.metadata?.period) return `${periodText(l.metadata.period)} at ${credits(l.rate)} / GB`;
  return l.metadata?.note ?? '';
}
const DAYS = [7, 30, 90];

/** A date input's day as the start or the end of that day where the user is, in ISO 8601; '' for none. */
function dayBound(day, end) {
  if (!day) return '';
  const d = new Date(`${day}T00:00:00`);
  if (end) d.setDate(d.getDate() + 1);
  return new Date(d.getTime() - (end ? 1 : 0)).toISOString();
}

/** From and to dates, applied together. */
function DateFilter({ idPrefix, value, onApply, children }) {
  const [from, setFrom] = useState(value.from);
  const [to, setTo] = useState(value.to);
  return html`<form class="filters" aria-label="Dates" onSubmit=${(e) => { e.preventDefault(); onApply({ ...value, from, to }); }}>
    ${children}
    <div><label for=${`${idPrefix}-from`}>From</label><input id=${`${idPrefix}-from`} type="date" value=${from} max=${to || undefined} onInput=${(e) => setFrom(e.target.value)} /></div>
    <div><label for=${`${idPrefix}-to`}>To</label><input id=${`${idPrefix}-to`} type="date" value=${to} min=${from || undefined} onInput=${(e) => setTo(e.target.value)} /></div>
    <div class="filter-actions"><button type="submit" class="primary">Apply</button>
      <button type="button" onClick=${() => { setFrom(''); setTo(''); onApply({ ...value, from: '', to: '' }); }}>Clear</button></div>
  </form>`;
}

function Daily() {
  const [days, setDays] = useState(30);
  const state = useLoad(() => get(`/api/v3/cdn/usage/daily${query({ days })}`), [days]);
  const chart = useMemo(() => {
    const list = state.data?.data.days ?? [];
    return {
      times: list.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000),
      series: [
        { label: 'Uploaded', values: list.map((d) => d.uploadedBytes), color: '--accent', scale: 'bytes', format: bytes },
        { label: 'Downloaded', values: list.map((d) => d.downloadedBytes), color: '--accent-2', scale: 'bytes', format: bytes },
      ],
    };
  }, [state.data]);
  return html`<${Card} title="By day" wide=${true}>
    <div class="filters"><div><label for="usage-days">Days</label>
      <select id="usage-days" value=${days} onChange=${(e) => setDays(Number(e.target.value))}>${DAYS.map((n) => html`<option value=${n}>Last ${n} days</option>`)}</select></div></div>
    <${Loaded} state=${state}>${({ data }) => {
      const total = (f) => data.days.reduce((n, d) => n + d[f], 0);
      return html`<div class="stats compact" data-testid="usage-totals">
          <${Stat} label="Uploads" value=${count(total('uploads'))} hint=${bytes(total('uploadedBytes'))} />
          <${Stat} label="Downloads" value=${count(total('downloads'))} hint=${bytes(total('downloadedBytes'))} />
          <${Stat} label="Deletes" value=${count(total('deletes'))} />
          <${Stat} label="Credits charged" value=${credits(total('creditsCharged'))} hint=${total('creditsAdded') ? `${credits(total('creditsAdded'))} added` : null} />
        </div>
        <${TimeChart} times=${chart.times} series=${chart.series} label=${`Bytes uploaded and downloaded per day, last ${days} days`} />`;
    }}<//>
  <//>`;
}

function Events() {
  const [filter, setFilter] = useState({ type: '', from: '', to: '' });
  const list = useCursorPages(
    (cursor, limit) => `/api/v3/cdn/usage/events${query({ type: filter.type, from: dayBound(filter.from, false), to: dayBound(filter.to, true), cursor, limit })}`,
    [filter],
    { label: 'Usage event pages' },
  );
  const [type, setType] = useState('');
  const columns = [
    { label: 'When', render: (e) => html`<span class="nowrap">${dateTime(e.createdAt)}</span>` },
    { label: 'Event', render: (e) => html`<span class="badge">${USAGE_EVENTS[e.eventType] ?? e.eventType}</span>` },
    { label: 'Object', render: (e) => html`<span class="truncate" title=${e.metadata?.key ?? ''} tabindex="0">${e.metadata?.key ?? e.assetId ?? ''}</span>` },
    { label: 'Bytes', className: 'num', render: (e) => bytes(e.bytes) },
    { label: 'Status', className: 'num', render: (e) => e.statusCode },
    { label: 'Source', render: (e) => html`<span class="muted">${e.source}${e.hostname ? ` · ${e.hostname}` : ''}${e.country ? ` · ${e.country}` : ''}</span>` },
  ];
  return html`<${Card} title="Usage events" wide=${true}>
    <${DateFilter} idPrefix="events" value=${filter} onApply=${(f) => setFilter({ ...f, type })}>
      <div><label for="events-type">Event</label><select id="events-type" value=${type} onChange=${(e) => setType(e.target.value)}>
        <option value="">Any</option>${Object.entries(USAGE_EVENTS).map(([v, text]) => html`<option value=${v}>${text}</option>`)}</select></div>
    <//>
    <${Loaded} state=${list.state}>${({ data }) => html`
      <${Table} caption="Usage events" scroll=${true} columns=${columns} rows=${data.events.map((e) => ({ ...e, key: e.id }))} empty="No usage in these dates." />
      ${list.pager}`}<//>
  <//>`;
}

function Ledger() {
  const [filter, setFilter] = useState({ from: '', to: '' });
  const list = useCursorPages(
    (cursor, limit) => `/api/v3/cdn/usage/ledger${query({ from: dayBound(filter.from, false), to: dayBound(filter.to, true), cursor, limit })}`,
    [filter],
    { label: 'Ledger pages' },
  );
  const columns = [
    { label: 'When', render: (l) => html`<span class="nowrap">${dateTime(l.createdAt)}</span>` },
    { label: 'Entry', render: (l) => html`<span class="badge">${LEDGER_ENTRIES[l.eventType] ?? l.eventType}</span>` },
    // An upload names its object; a metered charge the hour it is for, and its rate.
    { label: 'For', render: (l) => html`<span class="truncate" title=${ledgerSubject(l)} tabindex="0">${ledgerSubject(l)}</span>` },
    // Grants move no bytes: a dash, not "0 B".
    // A storage entry's bytes are byte-days (its hours' byte-hours / 24): charged like a GB served.
    { label: 'Bytes', className: 'num', render: (l) => (l.bytes ? `${bytes(l.bytes)}${l.eventType === 'storage' ? '-days' : ''}` : '–') },
    // The ledger stores charges as positive credits; a user reads a grant as +, a charge as −.
    { label: 'Credits', className: 'num', render: (l) => html`<span class=${l.credits < 0 ? 'gain' : ''} data-testid="ledger-credits">${ledgerCredits(l.credits)}</span>` },
    { label: 'Balance after', className: 'num', render: (l) => credits(l.balanceAfter) },
  ];
  return html`<${Card} title="Credit ledger" wide=${true}>
    <${DateFilter} idPrefix="ledger" value=${filter} onApply=${setFilter} />
    <${Loaded} state=${list.state}>${({ data }) => html`
      <${Table} caption="Credit ledger" scroll=${true} columns=${columns} rows=${data.entries.map((l) => ({ ...l, key: l.id }))} empty="No ledger entries in these dates." />
      ${list.pager}`}<//>
  <//>`;
}

/** The account's stored bytes against its quota, and each bucket's against its own. */
function Stored() {
  const state = useLoad(() => get('/api/v3/storage/quota'));
  return html`<${Card} title="Storage">
    <${Loaded} state=${state} lines=${2}>${({ data }) => html`
      <${QuotaLine} stored=${data.user.storedBytes} quota=${data.user.quotaBytes} label="Account storage quota used" testId="account-quota" />
      <p class="muted">Buckets and assets together${data.user.assetBytes ? `, of which assets ${binaryBytes(data.user.assetBytes)}` : ''}. Uploads past a quota are refused; the operator sets quotas.</p>
      ${data.buckets.length ? html`<ul class="quota-buckets">${data.buckets.map((b) => html`<li key=${b.name}>
        <span class="share-name" title=${b.name}>${b.name}</span>
        <${QuotaLine} stored=${b.storedBytes} quota=${b.quotaBytes} label=${`Storage quota of ${b.name} used`} testId="bucket-quota" />
      </li>`)}</ul>` : null}`}<//>
  <//>`;
}

export function UsagePage() {
  const state = useLoad(() => get('/api/v3/cdn/usage?limit=1'));
  return html`<${Page} title="Usage and credits">
    <${Stored} />
    <${Loaded} state=${state}>${(data) => html`
      <${CreditsBanner} credits=${data.credits} onUsagePage=${true} />
      <${Card} title="Credits">
        ${data.credits.enabled
          ? html`<div class="stats compact">
              <${Stat} label="Balance" value=${credits(data.credits.balance)} tone=${data.credits.low || data.credits.balance <= 0 ? 'warn' : ''} />
              <${Stat} label="Used" value=${credits(data.credits.usedCredits)} />
              <${Stat} label="Free each month" value=${count(data.credits.freeMonthlyCredits)} />
              <${Stat} label="Per GB transferred" value=${count(data.credits.transferCreditsPerGb)} />
              <${Stat} label="Per GB-day stored" value=${count(data.credits.storageCreditsPerGbDay)} />
              <${Stat} label="Storage a day, at what is stored now" value=${credits(data.credits.projectedDailyStorageCredits)} />
            </div>`
          : html`<p class="muted">Credits are not charged on this gateway.</p>`}
      <//>`}<//>
    <${Daily} />
    <${Events} />
    <${Ledger} />
  <//>`;
}
