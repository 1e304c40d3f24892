// The dashboard's small component library: layout pieces, tables, a confirm dialog, copy buttons, a
// shown-once secret box and pagers (the chart is chart.js, loaded only by the pages that draw one).
// Text is always passed as text (never as HTML), so names users chose are shown, not run.
import { html, useEffect, useRef, useState } from './preact-htm.js';
import { get, post } from './api.js';
import { count, credits, dateTime, storedText } from './format.js';

let titleFocusPending = false;
/** After a navigation: the next page to render gives its title the focus. */
export function focusTitleOnNextPage() {
  titleFocusPending = true;
}

export function Page({ title, actions, children }) {
  const heading = useRef(null);
  useEffect(() => {
    if (!titleFocusPending) return;
    titleFocusPending = false;
    heading.current?.focus();
  }, []);
  return html`<section class="page" aria-labelledby="page-title">
    <header class="page-head"><h1 id="page-title" tabindex="-1" ref=${heading}>${title}</h1>${actions ? html`<div class="actions">${actions}</div>` : null}</header>
    ${children}
  </section>`;
}

export function Card({ title, children, wide }) {
  return html`<div class=${wide ? 'card wide' : 'card'}>${title ? html`<h2>${title}</h2>` : null}${children}</div>`;
}

export function Stat({ label, value, hint, tone }) {
  return html`<div class=${`stat ${tone ?? ''}`}><div class="stat-value">${value}</div><div class="stat-label">${label}</div>${hint ? html`<div class="stat-hint">${hint}</div>` : null}</div>`;
}

export function Notice({ tone = 'info', children }) {
  return html`<div class=${`notice ${tone}`} role=${tone === 'error' ? 'alert' : 'status'}>${children}</div>`;
}

/** A grace in hours as words: "72 hours", "3 days", "30 minutes". */
function hoursText(hours) {
  if (hours >= 48 && hours % 24 === 0) return `${hours / 24} days`;
  if (hours >= 1) return `${count(hours)} ${hours === 1 ? 'hour' : 'hours'}`;
  const minutes = Math.max(1, Math.round(hours * 60));
  return `${minutes} ${minutes === 1 ? 'minute' : 'minutes'}`;
}

const DELIVERY = 'your public files, public buckets and project sites';

/**
 * The credits announcement (overview and usage pages; the Credits object of the summary or the usage
 * answer): below lowCreditThreshold, what stops at zero; at or below zero, what has stopped and, with
 * atZero 'suspend-delivery', when public delivery stops (the grace's deadline) or since when it has.
 * Either way, how to get credits. Nothing while the balance is above the threshold or credits are off.
 */
export function CreditsBanner({ credits: c, onUsagePage = false }) {
  if (!c?.enabled) return null;
  const depleted = c.balance <= 0;
  if (!depleted && !c.low) return null;
  const suspends = c.atZero === 'suspend-delivery';
  const free = c.freeMonthlyCredits > 0 ? ` ${credits(c.freeMonthlyCredits)} free ${c.freeMonthlyCredits === 1 ? 'credit comes' : 'credits come'} at the start of each month (UTC).` : '';
  const link = onUsagePage ? null : html` <a href="#/usage">Balance and charges</a>`;
  const how = html`<span class="banner-how">To add credits, ask this gateway's administrator for a grant.${free}${link}</span>`;
  if (!depleted) {
    const then = !suspends ? '' : c.deliveryGraceHours > 0 ? `, and ${hoursText(c.deliveryGraceHours)} later ${DELIVERY} stop being served` : `, and ${DELIVERY} stop being served`;
    return html`<div class="notice warn banner" role="status" data-testid="credits-banner"><strong>Your credit balance is low: ${credits(c.balance)} left</strong> (the warning starts below ${credits(c.lowCreditThreshold)}). When it reaches zero, uploads are refused${then}. ${how}</div>`;
  }
  let stops = 'Uploads are refused until credits are added; downloads and delivery go on.';
  if (suspends && c.deliverySuspended) stops = `Uploads are refused, and ${DELIVERY} have not been served since ${dateTime(c.deliverySuspendsAt)}: visitors get “402 Payment Required”.`;
  else if (suspends && c.deliverySuspendsAt) stops = `Uploads are refused, and ${DELIVERY} stop being served on ${dateTime(c.deliverySuspendsAt)} unless credits are added by then.`;
  else if (suspends) stops = `Uploads are refused, and ${DELIVERY} stop being served ${hoursText(c.deliveryGraceHours)} after the balance reached zero.`;
  return html`<div class="notice error banner" role="alert" data-testid="credits-banner"><strong>Your credits have run out (balance ${credits(c.balance)}).</strong> ${stops} You can still download and delete your data. ${how}</div>`;
}

/** An action started by the user (a form's submit): one at a time, its error kept to show. */
export function useAction(action) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async (...args) => {
    setBusy(true);
    setError(null);
    try {
      return await action(...args);
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  const onSubmit = (e) => {
    e.preventDefault();
    void run();
  };
  return { busy, error, run, onSubmit };
}

/** An error in words a user can act on: a 402 says what the action needs against the balance. */
export function errorText(error) {
  const d = error.details ?? {};
  if (error.code === 'insufficient_credits' && Number.isFinite(d.requiredCredits) && Number.isFinite(d.balance)) {
    return `${error.message}: it needs ${credits(d.requiredCredits)} credits and your balance is ${credits(d.balance)}.`;
  }
  return error.message;
}

export function ErrorNotice({ error }) {
  if (!error) return null;
  return html`<${Notice} tone="error">${errorText(error)}${error.code === 'insufficient_credits'
    ? html` <a href="#/usage">See your credits and usage</a>.`
    : null}<//>`;
}

/** Grey bars where content is coming, announced to screen readers by `label`. */
export function Skeleton({ label = 'Loading', lines = 3 }) {
  return html`<div class="skeleton" role="status" aria-busy="true"><span class="sr-only">${label}…</span>${Array.from({ length: lines }, (_, i) => html`<div class=${`skeleton-line w${i % 3}`}></div>`)}</div>`;
}

/** Loads `load()` once (and again on reload()), with its error shown as text. */
export function useLoad(load, deps = []) {
  const [state, setState] = useState({ loading: true, data: null, error: null });
  const [round, setRound] = useState(0);
  // The render right after `deps` change still holds the old data: it is loading already, not done.
  const started = useRef(null);
  const changed = started.current === null || started.current.length !== deps.length || deps.some((d, i) => d !== started.current[i]);
  useEffect(() => {
    started.current = deps;
    let live = true;
    setState((s) => ({ ...s, loading: true, error: null }));
    load().then(
      (data) => live && setState({ loading: false, data, error: null }),
      (error) => live && setState({ loading: false, data: null, error }),
    );
    return () => {
      live = false;
    };
  }, [...deps, round]);
  return { ...state, loading: state.loading || changed, reload: () => setRound((r) => r + 1) };
}

/** `state` of useLoad: its data to `children`, a skeleton while it first loads, its error with a retry. */
export function Loaded({ state, children, lines }) {
  if (state.error) {
    return html`<${Notice} tone="error">${errorText(state.error)} <button type="button" class="small" onClick=${state.reload}>Try again</button><//>`;
  }
  if (state.loading && !state.data) return html`<${Skeleton} lines=${lines} />`;
  return children(state.data);
}

/**
 * A data table. On a phone its rows become stacked cards, unless `scroll` (long lists such as logs,
 * whose rows stay one line each and the table scrolls sideways).
 * Sorting: a column with `sortValue(row)` sorts the rows given, in the page; one with `sortKey` asks
 * `onSort(sortKey)` (a list the server sorts, `sort` being { key, descending }). Headers are buttons
 * with aria-sort, so the order is announced.
 */
export function Table({ columns, rows, empty, caption, scroll = false, sort: serverSort, onSort }) {
  const [localSort, setLocalSort] = useState(null);
  if (!rows.length) return html`<p class="muted empty">${empty}</p>`;
  const sort = serverSort ?? localSort;
  const keyOf = (c) => c.sortKey ?? (c.sortValue ? c.label : null);
  let shown = rows;
  const local = localSort && columns.find((c) => c.sortValue && keyOf(c) === localSort.key);
  if (!serverSort && local) {
    const dir = localSort.descending ? -1 : 1;
    shown = [...rows].sort((a, b) => {
      const x = local.sortValue(a);
      const y = local.sortValue(b);
      return (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y), 'en', { numeric: true })) * dir;
    });
  }
  const toggle = (c) => {
    const key = keyOf(c);
    if (c.sortKey && onSort) return onSort(key);
    setLocalSort((s) => (s?.key === key ? { key, descending: !s.descending } : { key, descending: false }));
  };
  const header = (c) => {
    const key = keyOf(c);
    if (!key) return html`<th scope="col" class=${c.className ?? ''}>${c.label}</th>`;
    const active = sort?.key === key;
    return html`<th scope="col" class=${c.className ?? ''} aria-sort=${active ? (sort.descending ? 'descending' : 'ascending') : 'none'}>
      <button type="button" class="sort" onClick=${() => toggle(c)}>${c.label}<span aria-hidden="true" class="sort-mark">${active ? (sort.descending ? ' ▼' : ' ▲') : ' ↕'}</span></button></th>`;
  };
  // The wrapper scrolls sideways on narrow screens: focusable and named, so the keyboard can scroll it.
  return html`<div class=${scroll ? 'table-wrap scroll' : 'table-wrap'} tabindex="0" role="region" aria-label=${caption ?? 'Table'}><table>
    ${caption ? html`<caption class="sr-only">${caption}</caption>` : null}
    <thead><tr>${columns.map(header)}</tr></thead>
    <tbody>${shown.map((row) => html`<tr key=${row.key}>${columns.map((c) => html`<td class=${c.className ?? ''} data-label=${c.label}><div class="cell">${c.render(row)}</div></td>`)}</tr>`)}</tbody>
  </table></div>`;
}

/** A modal dialog (the native <dialog>: focus is trapped and Escape closes it). */
export function Dialog({ open, title, onClose, children }) {
  const ref = useRef(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return html`<dialog ref=${ref} aria-label=${title} onClose=${onClose} onCancel=${onClose}>
    <h2>${title}</h2>${open ? children : null}
  </dialog>`;
}

/** Asks before something that cannot be undone; confirm() runs the action. */
export function ConfirmButton({ label, question, confirmLabel = 'Delete', onConfirm, className = 'danger', disabled }) {
  const [open, setOpen] = useState(false);
  const { busy, error, run } = useAction(async () => {
    await onConfirm();
    setOpen(false);
  });
  return html`<button type="button" class=${className} disabled=${disabled} onClick=${() => setOpen(true)}>${label}</button>
    <${Dialog} open=${open} title=${confirmLabel} onClose=${() => setOpen(false)}>
      <p>${question}</p>
      <${ErrorNotice} error=${error} />
      <div class="dialog-actions">
        <button type="button" onClick=${() => setOpen(false)}>Cancel</button>
        <button type="button" class="danger" disabled=${busy} onClick=${() => run()}>${busy ? 'Working…' : confirmLabel}</button>
      </div>
    <//>`;
}

/**
 * Copies text: the clipboard API where the page is a secure context (HTTPS, localhost), else the older
 * execCommand('copy') on a selected hidden textarea (plain HTTP on a LAN name has no
 * navigator.clipboard). false when neither worked.
 */
export async function copyText(text) {
  if (window.isSecureContext && navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Refused (no permission, no focus): the older way may still work.
    }
  }
  const focused = document.activeElement;
  const area = document.createElement('textarea');
  area.value = text;
  area.readOnly = true;
  area.className = 'copy-buffer';
  // Inside an open modal dialog only the dialog's contents can hold the selection.
  (focused?.closest?.('dialog') ?? document.body).appendChild(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand('copy');
  } catch {
    copied = false;
  }
  area.remove();
  focused?.focus?.();
  return copied;
}

/** A copy button; when the browser lets nothing copy, the text is shown selected to copy by hand. */
export function CopyButton({ text, label = 'Copy' }) {
  const [state, setState] = useState('idle');
  const field = useRef(null);
  useEffect(() => {
    if (state === 'manual') field.current?.select();
  }, [state]);
  const copy = async () => {
    if (await copyText(text)) {
      setState('copied');
      setTimeout(() => setState((s) => (s === 'copied' ? 'idle' : s)), 1500);
    } else setState('manual');
  };
  return html`<span class="copy"><button type="button" class="small" onClick=${copy} aria-live="polite">${state === 'copied' ? 'Copied' : label}</button>
    ${state === 'manual'
      ? html`<label class="copy-manual">This browser blocked copying: press Ctrl+C (⌘C) to copy the selected text.
          <input ref=${field} readonly value=${text} onFocus=${(e) => e.target.select()} /></label>`
      : null}</span>`;
}

/** A value shown once (a token, a secret key): selectable, with a copy button. */
export function SecretValue({ label, value, testId }) {
  return html`<div class="secret">
    <div class="secret-label">${label}</div>
    <div class="secret-row"><code data-testid=${testId}>${value}</code><${CopyButton} text=${value} /></div>
  </div>`;
}

export function Pager({ page, pages, onPage }) {
  if (pages <= 1) return null;
  return html`<nav class="pager" aria-label="Pages">
    <button type="button" disabled=${page <= 1} onClick=${() => onPage(page - 1)}>Previous</button>
    <span>Page ${page} of ${pages}</span>
    <button type="button" disabled=${page >= pages} onClick=${() => onPage(page + 1)}>Next</button>
  </nav>`;
}

/**
 * A list read a page at a time by the API's cursor (newest first): `pathFor(cursor, limit)` makes the
 * request; a change in `deps` starts again from the newest. `pager` goes under the list.
 */
export function useCursorPages(pathFor, deps, { label = 'Pages', limits = [25, 50, 100] } = {}) {
  const [limit, setLimit] = useState(limits[0]);
  const [cursors, setCursors] = useState([null]);
  useEffect(() => setCursors([null]), [...deps, limit]);
  const cursor = cursors.at(-1);
  const state = useLoad(() => get(pathFor(cursor ?? '', limit)), [...deps, limit, cursor]);
  const next = state.data?.data?.nextCursor ?? null;
  const id = `per-page-${label.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  const pager = html`<nav class="pager" aria-label=${label}>
    <button type="button" disabled=${cursors.length <= 1} onClick=${() => setCursors((c) => c.slice(0, -1))}>Newer</button>
    <span>Page ${cursors.length}</span>
    <button type="button" disabled=${!next} onClick=${() => setCursors((c) => [...c, next])}>Older</button>
    <label for=${id} class="inline-label">Per page<select id=${id} value=${limit} onChange=${(e) => setLimit(Number(e.target.value))}>
      ${limits.map((n) => html`<option value=${n}>${n}</option>`)}</select></label>
  </nav>`;
  return { state, pager, page: cursors.length };
}

/** Shares of a whole as labelled bars (countries, status codes). */
export function Shares({ entries, total, empty, format = (n) => n.toLocaleString('en-US') }) {
  if (!entries.length || !total) return html`<p class="muted empty">${empty}</p>`;
  return html`<ul class="shares">${entries.map(
    ([name, n]) => html`<li><span class="share-name">${name}</span><meter min="0" max=${total} value=${n}></meter><span class="share-value">${format(n)}</span></li>`,
  )}</ul>`;
}

/** Drops the edge's cached copies (of a hostname, an asset, a bucket, or all of the user's) and says how many. */
export function PurgeButton({ path, body, what, label = 'Purge cache' }) {
  const [done, setDone] = useState(null);
  const { busy, error, run } = useAction(async () => setDone((await post(path, body)).purged));
  return html`<span class="purge"><button type="button" class="small" disabled=${busy} onClick=${() => run()} title=${`Drop the edge cache's copies of ${what}; the next request fetches anew`}>${busy ? 'Purging…' : label}</button>
    ${done !== null ? html`<span class="muted" role="status">${done === 1 ? '1 cached copy dropped' : `${count(done)} cached copies dropped`}</span>` : null}
    <${ErrorNotice} error=${error} /></span>`;
}

/**
 * What is stored against a storage quota: "Stored 7 GiB of 10 GiB quota (70%)" and a meter, or "(no
 * quota)". From 90% on the line is a warning; at the quota, uploads are refused (quota_exceeded).
 */
export function QuotaLine({ stored, quota, label, testId }) {
  const full = quota !== null && quota !== undefined && stored >= quota;
  const near = quota !== null && quota !== undefined && !full && stored >= quota * 0.9;
  return html`<div class=${`quota-line ${full || near ? 'warn' : ''}`} data-testid=${testId}>
    <span class="quota-text">${storedText(stored, quota)}</span>
    ${quota !== null && quota !== undefined ? html`<meter min="0" max=${Math.max(quota, 1)} value=${Math.min(stored, Math.max(quota, 1))} high=${quota * 0.9} optimum="0" aria-label=${label ?? 'Storage quota used'}></meter>` : null}
    ${full ? html`<span class="quota-full">Full: uploads are refused until you delete data or the operator raises the quota.</span>` : null}
  </div>`;
}
