// npm's preinstall: s3edge runs on Node.js 24 or newer (docs/RUNTIME.md: node:sqlite, undici 8). On an
// older node, one line says how to get 24 and the install stops before anything else fails less clearly.
// Plain JavaScript any old node can parse.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  console.error(
    's3edge needs Node.js 24 or newer (this is ' + process.versions.node + '): run  eval "$(bash scripts/node24.sh)"  in this shell first ' +
      '(it fetches Node.js 24 from the npm registry into ~/.cache/s3edge-ci), or install it yourself (nvm install 24)',
  );
  process.exit(1);
}
