// Overview: the account summary of GET /api/v3/cdn/summary (SPEC.md §2.3-2.6).
import { html, useMemo } from './preact-htm.js';
import { get } from './api.js';
import { Card, CreditsBanner, Loaded, Notice, Page, Shares, Stat, useLoad } from './components.js';
import { TimeChart } from './chart.js';
import { bytes, count, credits, dateTime, percent } from './format.js';

function sorted(record) {
  return Object.entries(record ?? {}).sort((a, b) => b[1] - a[1]);
}

function Traffic({ analytics }) {
  const { times, series } = useMemo(() => {
    const points = analytics.series ?? [];
    return {
      times: points.map((p) => Date.parse(p.timestamp) / 1000),
      series: [
        { label: 'Requests', values: points.map((p) => p.requests), color: '--accent', scale: 'n', integer: true, format: (v) => count(Math.round(v)) },
        { label: 'Bytes', values: points.map((p) => p.bytes), color: '--accent-2', scale: 'b', format: bytes },
        { label: 'Cached bytes', values: points.map((p) => p.cachedBytes), color: '--ok', scale: 'b', format: bytes },
      ],
    };
  }, [analytics]);
  return html`<${TimeChart} times=${times} series=${series} label="CDN requests, bytes and cached bytes per hour over the last 24 hours" />`;
}

/**
 * A day of storage at the current size. The API rounds to thousandths of a credit, so a few megabytes
 * read 0 there; the same rate times the stored bytes shows what it really is.
 */
function dailyStorage(c, storageBytes) {
  if (c.projectedDailyStorageCredits > 0 || !(storageBytes > 0)) return c.projectedDailyStorageCredits;
  return (storageBytes / 1e9) * c.storageCreditsPerGbDay;
}

function Credits({ credits: c, storageBytes }) {
  if (!c.enabled) return html`<p class="muted">Credits are not charged on this gateway.</p>`;
  // What is low, and what it stops, is the banner's to say (at the top of the page).
  return html`<div class="stats">
      <${Stat} label="Balance" value=${credits(c.balance)} tone=${c.low || c.balance <= 0 ? 'warn' : ''} />
      <${Stat} label="Used" value=${credits(c.usedCredits)} />
      <${Stat} label="Storage per day (projected)" value=${html`<span data-testid="daily-storage">${credits(dailyStorage(c, storageBytes))}</span>`} />
    </div>`;
}

export function OverviewPage() {
  const state = useLoad(() => get('/api/v3/cdn/summary'));
  return html`<${Page} title="Overview" actions=${html`<button type="button" onClick=${state.reload}>Refresh</button>`}>
    <${Loaded} state=${state}>${({ data }) => {
      const a = data.analytics;
      return html`
        <${CreditsBanner} credits=${data.credits} />
        ${data.space.status !== 'active' ? html`<${Notice} tone="error">Your space is ${data.space.status}${data.space.suspendedAt ? ` since ${dateTime(data.space.suspendedAt)}` : ''}: uploads and downloads are refused.<//>` : null}
        ${!data.configured ? html`<${Notice} tone="warn">Object storage is not configured on this gateway.<//>` : null}
        <div class="stats">
          <${Stat} label="Files" value=${count(data.totalFiles)} />
          <${Stat} label=${`Stored in ${data.storageName}`} value=${bytes(data.storageBytes)} />
          <${Stat} label="Uploaded" value=${bytes(data.uploadedBytes)} />
          <${Stat} label="Downloaded" value=${bytes(data.downloadedBytes)} />
          <${Stat} label="Uploads in 24 h" value=${count(data.uploadsLast24h)} />
          <${Stat} label="Space" value=${data.space.status} tone=${data.space.status === 'active' ? 'ok' : 'warn'} />
        </div>
        <div class="grid">
          <${Card} title="CDN traffic, last 24 hours" wide=${true}>
            ${a.available ? null : html`<p class="muted">No CDN requests recorded in the last 24 hours yet.</p>`}
            <div class="stats compact">
              <${Stat} label="Requests" value=${count(a.requests)} />
              <${Stat} label="Bytes served" value=${bytes(a.bytes)} />
              <${Stat} label="From cache" value=${bytes(a.cachedBytes)} />
              <${Stat} label="Cache hit ratio" value=${percent(a.cacheHitRatio)} />
            </div>
            <${Traffic} analytics=${a} />
          <//>
          <${Card} title="Status codes"><${Shares} entries=${sorted(a.statusCodes)} total=${a.requests} empty="No requests yet." /><//>
          <${Card} title="Countries"><${Shares} entries=${sorted(a.countries).slice(0, 10)} total=${a.requests} empty="No requests yet." /><//>
          <${Card} title="Credits"><${Credits} credits=${data.credits} storageBytes=${data.storageBytes} /><//>
          <${Card} title="Recent uploads">
            ${data.recentAssets.length
              ? html`<ul class="plain">${data.recentAssets.map((asset) => html`<li key=${asset.id}><span class="file-name">${asset.fileName}</span> <span class="muted">${bytes(asset.size)} · ${dateTime(asset.createdAt)}</span></li>`)}</ul>`
              : html`<p class="muted">Nothing uploaded yet. <a href="#/assets">Upload a file</a>.</p>`}
          <//>
        </div>`;
    }}<//>
  <//>`;
}
