#!/usr/bin/env bash
# Node.js 24 (the LTS s3edge runs on, docs/RUNTIME.md) for a machine whose node is older, from the npm
# registry's node-linux-<arch> package (nodejs.org is not needed: npm's registry is all CI can reach),
# kept in $S3EDGE_CI_CACHE (default ~/.cache/s3edge-ci): only the first run downloads it (~50 MB).
#
#   eval "$(bash scripts/node24.sh)"    # this shell's PATH starts with Node 24 (and npm runs on it)
#   bash scripts/node24.sh --bin         # only print the directory holding its node
#
# S3EDGE_NODE24_VERSION picks another 24.x. A node that is already 24 or newer is used as it is.
set -euo pipefail

version="${S3EDGE_NODE24_VERSION:-24.21.0}"
cache="${S3EDGE_CI_CACHE:-$HOME/.cache/s3edge-ci}"

if command -v node >/dev/null && [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -ge 24 ]; then
  bin=$(dirname "$(command -v node)")
else
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "node24.sh: no Node.js package for $(uname -m) on the npm registry: install Node.js 24 yourself (https://nodejs.org)" >&2; exit 1 ;;
  esac
  dir="$cache/node-$version"
  bin="$dir/bin"
  if [ ! -x "$bin/node" ]; then
    command -v npm >/dev/null || { echo "node24.sh: npm is needed to fetch Node.js 24 (apt-get install -y npm), or install Node.js 24 yourself" >&2; exit 1; }
    mkdir -p "$cache"
    tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack --silent "node-linux-$arch@$version" >/dev/null)
    mkdir -p "$tmp/node"
    # The binary and its licence: s3edge builds no native addon, so the headers are not needed.
    tar xzf "$tmp/node-linux-$arch-$version.tgz" -C "$tmp/node" --strip-components=1 package/bin/node package/LICENSE
    rm -rf "$dir"
    mv "$tmp/node" "$dir"
  fi
fi

if [ "${1:-}" = --bin ]; then
  echo "$bin"
else
  echo "export PATH=\"$bin:\$PATH\""
fi
