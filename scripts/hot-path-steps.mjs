#!/usr/bin/env node
// The steps of a hot path and their share of the event loop's CPU, from a `node --cpu-prof` profile of a
// server under load (docs/ARCHITECTURE.md "The hot path"). Each sample goes to the step of the frame
// nearest its leaf that names one (the kernel's socket write inside res.end() is the write, not the
// response); start-up samples (module loading, building the context) and idle time are left out.
//
//   node scripts/hot-path-steps.mjs PROFILE.cpuprofile [µs of event-loop CPU per request]
//
// With the second argument each share is also given in µs (measure it without the profiler: the
// profiler's own cost inflates JavaScript against the kernel).
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

const STEPS = [
  ['socket writes (kernel)', /^(writev|writeLatin1String|writeUtf8String|writeBuffer|writeString) $/],
  ['garbage collection', /^\(garbage collector\) /],
  ['request log, log line, metrics', /(analytics\/|log-format\.js|request-metrics\.js|s3\/request-log\.js|sonic-boom|prom-client)/],
  ['SigV4 verification', /auth\/sigv4\/|auth\/sigv2\/|key-store\.js/],
  ['object and bucket metadata', /metadata-cache\.js|sqlite-store\.js|db\/repos\/|db\/sqlite\/|bucket-directory\.js|found-cache\.js/],
  ['edge cache lookup', /cdn\/cdn-cache\.js|cdn\/cache\//],
  ['CDN resolve (asset, access)', /cdn\/resolve\.js|cdn\/targets\.js|asset-directory\.js|suspended-owners\.js|signed-url\.js/],
  ['CDN answer (conditionals, headers)', /cdn\/send-version\.js|cdn\/representation\.js|http\/send-body\.js|assets\/delivery\.js/],
  ['S3 handler (route, headers, answer)', /s3\/(handler|respond|operation|addressing|router|object-headers|versioning|conditionals|range|body)\.js|operations\/get-object\.js|object-reader\.js|blob-digest\.js/],
  ['proxy handler (rules, headers, cache)', /edge\/(handler|forward|forward-headers|response-cache|cacheability|rules|limiter|send-cached|answers)\.js/],
  ['origin client (undici)', /undici/],
  ['dispatch, guard, client address', /src\/app\.js|request-guard\.js|client-info\.js|geoip\.js|counted-messages\.js|src\/server\.js|request-target\.js/],
  ['node:http parse and response', /node:_http_|node:net/],
];
const STARTUP = /loader|module_job|translators|createContext|buildApp|compileSchemas|Module\.|startServer|runServe|openDataDir/;

const [file, perRequest] = process.argv.slice(2);
if (!file) {
  console.error('usage: node scripts/hot-path-steps.mjs PROFILE.cpuprofile [µs per request]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
// The bundled build (scripts/bundle.mjs) runs our code from a few chunk files: a frame there is named by
// the source file its linked source map gives, so the steps below match src/ paths in both builds.
const maps = new Map();
function sourceOf(url, line, column) {
  if (!url.startsWith('file://') || !url.includes('/bundle/')) return url;
  if (!maps.has(url)) {
    const mapFile = `${fileURLToPath(url)}.map`;
    maps.set(url, existsSync(mapFile) ? new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8'))) : undefined);
  }
  const entry = maps.get(url)?.findEntry(line, column);
  // '../../../src/cdn/handler.ts' -> 'src/cdn/handler.js', as tsc's build names it.
  return entry?.originalSource ? entry.originalSource.replace(/^(\.\.\/)+/, '').replace(/\.ts$/, '.js') : url;
}
const label = (n) => `${n.callFrame.functionName} ${sourceOf(n.callFrame.url, n.callFrame.lineNumber, n.callFrame.columnNumber)}`;
const time = new Map();
for (let i = 0; i < profile.samples.length; i++) time.set(profile.samples[i], (time.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));

const totals = new Map();
let busy = 0;
for (const [id, t] of time) {
  const leaf = nodes.get(id);
  if (leaf.callFrame.functionName === '(idle)' || leaf.callFrame.functionName === '(program)') continue;
  let step;
  let startup = false;
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const name = label(nodes.get(cur));
    if (STARTUP.test(name)) startup = true;
    if (step === undefined) step = STEPS.find(([, pattern]) => pattern.test(name))?.[0];
  }
  if (startup) continue;
  step ??= 'node runtime (events, streams, promises, timers)';
  totals.set(step, (totals.get(step) ?? 0) + t);
  busy += t;
}
const us = perRequest === undefined ? undefined : Number(perRequest);
console.log(`| step | share${us === undefined ? '' : ' | µs per request'} |`);
console.log(`|---|---:${us === undefined ? '' : '|---:'}|`);
for (const [step, t] of [...totals].sort((a, b) => b[1] - a[1])) {
  const share = t / busy;
  console.log(`| ${step} | ${(100 * share).toFixed(1)}%${us === undefined ? '' : ` | ${(share * us).toFixed(0)}`} |`);
}
