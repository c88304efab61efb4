#!/usr/bin/env bash
# Resident memory of an API process (ROLE=api on the machine's PostgreSQL) 5 s after it answers
# /health, with tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT) and on (an endpoint nobody listens on:
# the SDK and instrumentations load, export attempts fail quietly). Usage: bench/startup-rss.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
port=18931
for run in $(seq 1 "$runs"); do
  for mode in off on; do
    db="oas_rss_$$_${mode}_${run}"
    psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE $db" postgres
    dir=$(mktemp -d)
    otel=()
    [ "$mode" = on ] && otel=(OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9)
    env -i PATH="$PATH" PORT=$port HOST=127.0.0.1 DATA_DIR="$dir" DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db" \
      ROLE=api LOG_LEVEL=warn ADMIN_EMAIL=rss@example.com ADMIN_PASSWORD=rss-password-1 "${otel[@]}" \
      node_modules/.bin/node src/server.ts >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 120); do curl -s -m 2 "http://127.0.0.1:$port/health" >/dev/null && break; sleep 1; done
    sleep 5
    echo "tracing $mode, run $run: $(awk '/VmRSS/ {printf "%.1f MB", $2 / 1024}' "/proc/$pid/status")"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    psql -q -h 127.0.0.1 -U postgres -c "DROP DATABASE $db WITH (FORCE)" postgres
    rm -rf "$dir"
  done
done
