import { html, render } from './preact-htm.js';
render(html`<p>s3edge</p>`, document.getElementById('root'));
