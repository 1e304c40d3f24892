// Domains: availability search with prices and promotions (SPEC.md §2.10), and the TLD price table.
import { html, useState } from './preact-htm.js';
import { get, post } from './api.js';
import { Card, ErrorNotice, Loaded, Page, Table, useAction, useLoad } from './components.js';
import { dateTime, money } from './format.js';

function promotion(r) {
  if (r.bonusAmount === null && r.bonusAmountUSD === null) return null;
  const amounts = [r.bonusAmountUSD !== null ? money(r.bonusAmountUSD, 'USD') : null, r.bonusAmount !== null ? money(r.bonusAmount, 'NGN') : null].filter(Boolean);
  return html`<span class="badge promo">Bonus ${amounts.join(' / ')}${r.bonusEndingDate ? ` until ${r.bonusEndingDate}` : ''}</span>`;
}

function availability(r) {
  if (r.available) return html`<span class="badge ok">available</span>`;
  if (r.status === 'unknown') return html`<span class="badge warn" title=${r.reason ?? ''}>unknown</span>`;
  return html`<span class="badge">${r.status === 'registered' ? 'taken' : r.status}</span>`;
}

const price = (dollar, naira) => html`${money(dollar, 'USD')}<br /><span class="muted">${money(naira, 'NGN')}</span>`;

function Search() {
  const [q, setQ] = useState('');
  const [result, setResult] = useState(null);
  const { busy, error, onSubmit } = useAction(async () => {
    setResult(null);
    setResult(await post('/api/v3/domains/search', { query: q }));
  });
  const columns = [
    { label: 'Domain', sortValue: (r) => r.domain, render: (r) => html`<span class="file-name">${r.domainUnicode ?? r.domain}</span>` },
    { label: 'Availability', render: availability },
    { label: 'Register', className: 'num', sortValue: (r) => r.registerDollar ?? Infinity, render: (r) => price(r.registerDollar, r.registerNaira) },
    { label: 'Renew', className: 'num', sortValue: (r) => r.renewDollar ?? Infinity, render: (r) => price(r.renewDollar, r.renewNaira) },
    { label: 'Transfer', className: 'num', render: (r) => price(r.transferDollar, r.transferNaira) },
    { label: 'Promotion', render: (r) => promotion(r) ?? html`<span class="muted">–</span>` },
    { label: 'Notes', render: (r) => html`<span class="muted">${r.restrictions?.text ?? ''}${r.purchaseType && r.purchaseType !== 'unavailable' ? ` ${r.purchaseType}` : ''}</span>` },
  ];
  return html`<${Card} title="Find a domain">
    <form class="inline-form" role="search" onSubmit=${onSubmit}>
      <label>Domain or name<input name="domain-query" required maxlength="253" placeholder="myshop or myshop.com" value=${q} onInput=${(e) => setQ(e.target.value)} /></label>
      <button type="submit" class="primary" disabled=${busy}>${busy ? 'Searching…' : 'Search'}</button>
    </form>
    <${ErrorNotice} error=${error} />
    ${result ? html`<${Table} caption=${`Results for ${result.query}`} columns=${columns} rows=${result.results.map((r) => ({ ...r, key: r.domain }))} empty="No results." />
      <p class="muted">Checked ${dateTime(result.results[0]?.checkedAt)}. Availability comes from the registries (RDAP) and can change at any time.</p>` : null}
  <//>`;
}

export function DomainsPage() {
  const state = useLoad(() => get('/api/v3/domains/tlds'));
  const [filter, setFilter] = useState('');
  const [popularOnly, setPopularOnly] = useState(true);
  const columns = [
    { label: 'TLD', sortValue: (t) => t.tld, render: (t) => html`<strong>${t.tld}</strong>${t.popular ? html` <span class="badge">popular</span>` : null}` },
    { label: 'Register', className: 'num', sortValue: (t) => t.registerDollar ?? Infinity, render: (t) => price(t.registerDollar, t.registerNaira) },
    { label: 'Renew', className: 'num', sortValue: (t) => t.renewDollar ?? Infinity, render: (t) => price(t.renewDollar, t.renewNaira) },
    { label: 'Transfer', className: 'num', sortValue: (t) => t.transferDollar ?? Infinity, render: (t) => price(t.transferDollar, t.transferNaira) },
    { label: 'Years', className: 'num', render: (t) => `${t.minYears}–${t.maxYears}` },
    { label: 'Promotion', render: (t) => promotion(t) ?? html`<span class="muted">–</span>` },
  ];
  return html`<${Page} title="Domains">
    <${Search} />
    <${Card} title="TLD prices">
      <div class="filters">
        <label class="inline-label">Filter<input type="search" value=${filter} placeholder=".com" onInput=${(e) => setFilter(e.target.value.toLowerCase().replace(/^\./, ''))} /></label>
        <label class="inline-label"><input type="checkbox" checked=${popularOnly} onChange=${(e) => setPopularOnly(e.target.checked)} /> Popular only</label>
      </div>
      <${Loaded} state=${state}>${(data) => {
        const rows = data.tlds.filter((t) => t.extension.includes(filter) && (!popularOnly || t.popular || filter !== ''));
        return html`<${Table} caption="TLD prices" columns=${columns} rows=${rows.map((t) => ({ ...t, key: t.tld }))} empty="No TLD matches." />
          <p class="muted">${rows.length} of ${data.tlds.length} TLDs${popularOnly && !filter ? ' (the popular ones; a filter searches them all)' : ''}</p>`;
      }}<//>
    <//>
  <//>`;
}
