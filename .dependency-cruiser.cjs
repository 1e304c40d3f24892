// The layers of src/ and the rules between them (docs/ARCHITECTURE.md opens with the picture), checked by
// test/unit/layers.test.ts on every `npm test`: `npx depcruise src bin --config .dependency-cruiser.cjs`.
// Dependencies point down: entry points -> surfaces -> services -> repositories and storage -> primitives.
// Imports that broke a rule when the checker came are listed in .dependency-cruiser-known-violations.json,
// to be burned down; a new one fails the suite, and so does a listed one that is gone (drop it from the list).

/** Processes and the composition root: what starts things, and the only place everything may meet. */
const ENTRY = ['^bin/', '^src/cli/', '^src/sea/', '^src/context/', '^src/(app|server|context|data-dir-setup)\\.ts$', '^src/jobs/jobs-context\\.ts$'];
/** The doors requests come in by (of src/metrics, the /metrics endpoint; the counters are a service). */
const SURFACES = ['^src/(s3|api|cdn|edge|web|health)/', '^src/metrics/endpoint\\.ts$'];
/** What the doors share: accounts, assets, credits, the request log's readings, projects, domains, lifecycle rules, bucket notifications, hostnames' certificates, jobs, metrics, the server's record. */
const SERVICES = ['^src/(assets|auth|buckets|credits|analytics|projects|domains|proxy|usage|client|metrics|lifecycle|notifications|certificates)/', '^src/jobs/', '^src/cluster/', '^src/server-record\\.ts$'];
/** Where state lives: the metadata store and its repositories, object bytes, hashing. */
const STORES = ['^src/(db|storage|hashing)/'];
/** The bottom: HTTP semantics, addresses and the outbound client, errors, configuration, the logger, threads' scheduling. */
const PRIMITIVES = ['^src/(http|net|errors|config)/', '^src/(lazy-lru|log-format|thread-policy)\\.ts$'];

const above = (...layers) => layers.flat();

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'A runtime import cycle (type-only imports do not count): cut it with a module both sides import.',
      from: {},
      to: { circular: true, dependencyTypesNot: ['type-only'], viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'primitives-import-no-layer',
      severity: 'error',
      comment: 'src/http, src/net, src/errors, src/config are the bottom: they import only each other and node_modules.',
      from: { path: PRIMITIVES },
      to: { path: above(STORES, SERVICES, SURFACES, ENTRY) },
    },
    {
      name: 'stores-import-down',
      severity: 'error',
      comment: 'Repositories and storage import primitives only, never a service, a surface or an entry point.',
      from: { path: STORES, pathNot: ENTRY },
      to: { path: above(SERVICES, SURFACES, ENTRY) },
    },
    {
      name: 'services-import-down',
      severity: 'error',
      comment: 'Services import stores and primitives, never a surface or an entry point (map their errors at the surface).',
      from: { path: SERVICES, pathNot: ENTRY },
      to: { path: above(SURFACES, ENTRY), pathNot: ['^src/api/v3/schemas\\.ts$'] },
    },
    {
      name: 'surfaces-are-apart',
      severity: 'error',
      comment: 'Only entry points import a surface: what two surfaces share moves down to a service or a primitive.',
      from: { path: SURFACES, pathNot: ENTRY },
      to: { path: SURFACES.concat(ENTRY), pathNot: ['^src/$1/'] },
    },
    {
      name: 'not-s3-or-analytics-from-below',
      severity: 'error',
      comment: 'The storage, CDN, proxy and asset code never climbs into the S3 surface or the request-log service.',
      from: { path: '^src/(db|storage|cdn|edge|assets)/' },
      to: { path: '^src/(s3|analytics)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|test|bench|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.cts', '.js'] },
  },
};
