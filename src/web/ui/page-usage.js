// Usage: the usage events (SPEC.md §2.7), the credit ledger (§2.8) and the credits (§2.6) of
// GET /api/v3/cdn/usage.
import { html, useState } from './preact-htm.js';
import { get, query } from './api.js';
import { Card, Loaded, Notice, Page, Stat, Table, useLoad } from './components.js';
import { bytes, count, credits, dateTime, ledgerCredits } from './format.js';

const LIMITS = [50, 100, 500];
// The API's event names, as a user reads them (an unknown one is shown as it comes).
const USAGE_EVENTS = { upload: 'Upload', download: 'Download', delete: 'Delete' };
const LEDGER_ENTRIES = { upload: 'Upload', grant: 'Credits granted', free_monthly_grant: 'Free monthly credits' };

export function UsagePage() {
  const [limit, setLimit] = useState(50);
  const state = useLoad(() => get(`/api/v3/cdn/usage${query({ limit })}`), [limit]);
  const events = [
    { label: 'When', render: (e) => dateTime(e.createdAt) },
    { label: 'Event', render: (e) => html`<span class="badge">${USAGE_EVENTS[e.eventType] ?? e.eventType}</span>` },
    { label: 'Object', render: (e) => html`<span class="file-name">${e.metadata?.key ?? e.assetId ?? ''}</span>` },
    { label: 'Bytes', className: 'num', render: (e) => bytes(e.bytes) },
    { label: 'Status', className: 'num', render: (e) => e.statusCode },
    { label: 'Source', render: (e) => html`<span class="muted">${e.source}${e.hostname ? ` · ${e.hostname}` : ''}${e.country ? ` · ${e.country}` : ''}</span>` },
  ];
  const ledger = [
    { label: 'When', render: (l) => dateTime(l.createdAt) },
    { label: 'Entry', render: (l) => html`<span class="badge">${LEDGER_ENTRIES[l.eventType] ?? l.eventType}</span>` },
    { label: 'Object', render: (l) => html`<span class="file-name">${l.metadata?.key ?? ''}</span>` },
    // Grants move no bytes: a dash, not "0 B".
    { label: 'Bytes', className: 'num', render: (l) => (l.bytes ? bytes(l.bytes) : '–') },
    // The ledger stores charges as positive credits; a user reads a grant as +, a charge as −.
    { label: 'Credits', className: 'num', render: (l) => html`<span class=${l.credits < 0 ? 'gain' : ''} data-testid="ledger-credits">${ledgerCredits(l.credits)}</span>` },
    { label: 'Balance after', className: 'num', render: (l) => credits(l.balanceAfter) },
  ];
  return html`<${Page} title="Usage and credits" actions=${html`<label class="inline-label">Show<select value=${limit} onChange=${(e) => setLimit(Number(e.target.value))}>${LIMITS.map((n) => html`<option value=${n}>${n}</option>`)}</select></label>`}>
    <${Loaded} state=${state}>${(data) => html`
      <${Card} title="Credits">
        ${data.credits.enabled
          ? html`<div class="stats compact">
              <${Stat} label="Balance" value=${credits(data.credits.balance)} tone=${data.credits.balance < data.credits.lowCreditThreshold ? 'warn' : ''} />
              <${Stat} label="Used" value=${credits(data.credits.usedCredits)} />
              <${Stat} label="Free each month" value=${count(data.credits.freeMonthlyCredits)} />
              <${Stat} label="Per GB transferred" value=${count(data.credits.transferCreditsPerGb)} />
              <${Stat} label="Per GB-day stored" value=${count(data.credits.storageCreditsPerGbDay)} />
            </div>
            ${data.credits.balance < data.credits.lowCreditThreshold ? html`<${Notice} tone="warn">Your credit balance is low.<//>` : null}`
          : html`<p class="muted">Credits are not charged on this gateway.</p>`}
      <//>
      <${Card} title="Usage events"><${Table} caption="Usage events" columns=${events} rows=${data.events.map((e) => ({ ...e, key: e.id }))} empty="No usage yet." /><//>
      <${Card} title="Credit ledger"><${Table} caption="Credit ledger" columns=${ledger} rows=${data.creditLedger.map((l) => ({ ...l, key: l.id }))} empty="No ledger entries." /><//>`}<//>
  <//>`;
}
