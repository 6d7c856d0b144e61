#!/usr/bin/env bash
# The suite as evidence under load: `deno task test` N times in a row (default 10) while stress-ng
# keeps one CPU busy, no retries; stops at the first run that fails or skips, and prints each
# run's summary and how long it took. Needs stress-ng (Debian: `apt-get install stress-ng`).
#   tests/stress.sh [RUNS]
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
command -v stress-ng >/dev/null || { echo "stress-ng is not installed"; exit 2; }
stress-ng --cpu 1 --cpu-method matrixprod --timeout 0 --quiet &
hog=$!
trap 'kill "$hog" 2>/dev/null; wait "$hog" 2>/dev/null' EXIT
export NO_COLOR=1
log=$(mktemp -d)
for ((run = 1; run <= runs; run++)); do
  started=$SECONDS
  deno task test >"$log/run-$run.log" 2>&1
  status=$?
  summary=$(grep -E '^(ok|FAILED) \| [0-9]+ passed' "$log/run-$run.log" | tail -n 1)
  echo "run $run/$runs: ${summary:-no summary} in $((SECONDS - started)) s (log: $log/run-$run.log)"
  if ((status)) || [ -z "$summary" ] || grep -qE '[1-9][0-9]* ignored' <<<"$summary"; then
    grep -E '=> .*$' "$log/run-$run.log" | sort -u | head -n 20
    echo "run $run failed: stopped"
    exit 1
  fi
done
echo "$runs runs in a row passed under one busy CPU"
