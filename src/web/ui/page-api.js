// API reference: the server's OpenAPI document (GET /api/v3/openapi.json, docs/API.md "OpenAPI") as a
// page, with the dashboard's own code (no script from elsewhere): each operation by tag, its scopes,
// rate limit, parameters, body and answers with their examples, and the shared schemas.
import { html } from './preact-htm.js';
import { get } from './api.js';
import { Card, Loaded, Page, Table, useLoad } from './components.js';

const METHODS = ['get', 'post', 'put', 'delete', 'patch'];

/** A schema or example as indented JSON, `$ref`s shown as the component's name. */
function Json({ value, label }) {
  const text = JSON.stringify(value, null, 2).replace(/\{\s*"\$ref": "#\/components\/(schemas|responses)\/(\w+)"\s*\}/g, '$2');
  return html`<pre class="json" tabindex="0" aria-label=${label}><code>${text}</code></pre>`;
}

function Content({ content, what }) {
  return Object.entries(content ?? {}).map(
    ([type, media]) => html`<p class="muted">${what}: <code>${type}</code></p>
      <${Json} value=${media.schema} label=${`${what} schema`} />
      ${'example' in media ? html`<p class="muted">Example</p><${Json} value=${media.example} label=${`${what} example`} />` : null}`,
  );
}

function Operation({ method, path, op }) {
  const scopes = op['x-scopes'] ?? [];
  const limit = op['x-rate-limit'];
  return html`<details class="operation">
    <summary><code><strong>${method.toUpperCase()}</strong> ${path}</code> <span class="muted">${op.summary}</span></summary>
    <div class="stack">
      ${op.description ? html`<p>${op.description}</p>` : null}
      <p>Scope: ${scopes.length ? scopes.map((s) => html`<code>${s}</code> `) : 'none (public)'}${limit ? html` · at most ${limit.max} requests per ${limit.windowSeconds} s for one API key` : null}${op['x-alias-of'] ? html` · the same as <code>${op['x-alias-of']}</code>` : null}</p>
      ${op.parameters?.length
        ? html`<${Table}
            caption=${`Parameters of ${op.operationId}`}
            columns=${[
              { label: 'Name', render: (p) => html`<code>${p.name}</code>` },
              { label: 'In', render: (p) => p.in },
              { label: 'Required', render: (p) => (p.required ? 'yes' : 'no') },
              { label: 'Type', render: (p) => p.schema?.type ?? (p.schema?.anyOf ? 'one of' : '') },
              { label: 'About', render: (p) => p.description ?? '' },
            ]}
            rows=${op.parameters}
          />`
        : null}
      ${op.requestBody ? html`<${Content} content=${op.requestBody.content} what="Body" />` : null}
      ${Object.entries(op.responses).map(([status, r]) =>
        r.$ref
          ? html`<p><strong>${status}</strong> <span class="muted">${r.$ref.split('/').pop()} (the error envelope)</span></p>`
          : html`<p><strong>${status}</strong> ${r.description}</p><${Content} content=${r.content} what=${`${status} answer`} />`,
      )}
    </div>
  </details>`;
}

export function ApiReferencePage() {
  const state = useLoad(() => get('/api/v3/openapi.json'));
  return html`<${Page} title="API reference">
    <${Loaded} state=${state}>${(doc) => {
      const byTag = new Map();
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const method of METHODS) {
          const op = item[method];
          if (!op) continue;
          const tag = op.tags?.[0] ?? 'other';
          if (!byTag.has(tag)) byTag.set(tag, []);
          byTag.get(tag).push({ method, path, op });
        }
      }
      return html`<p class="muted">${doc.info.title}, OpenAPI ${doc.openapi}: <a href="/api/v3/openapi.json">the document</a>. Every call takes <code>Authorization: Bearer</code> with an API key of the scope it names.</p>
        ${[...byTag].map(([tag, ops]) => html`<${Card} title=${tag} wide>${ops.map((o) => html`<${Operation} ...${o} />`)}<//>`)}
        <${Card} title="Schemas" wide>
          ${Object.entries(doc.components.schemas).map(([name, schema]) => html`<details class="operation"><summary><code>${name}</code></summary><${Json} value=${schema} label=${`Schema ${name}`} /></details>`)}
        <//>`;
    }}<//>
  <//>`;
}
