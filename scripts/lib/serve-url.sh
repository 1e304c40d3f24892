# Sourced by scripts that start `s3edge serve --json` in the background (the Node 24 smoke, the
# better-sqlite3 repro). serve_url LOG PID prints the S3 URL the server wrote to LOG, waiting up to
# 10 s while PID lives; nothing when it never did.
serve_url() {
  local log=$1 pid=$2 url=""
  for _ in $(seq 1 100); do
    url=$(grep -o '"s3":"http://[^"]*"' "$log" | head -1 | cut -d'"' -f4 || true)
    [ -n "$url" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "$url"
}
