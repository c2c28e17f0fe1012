#!/usr/bin/env bash
# Installs what is missing, builds stacksnap and runs the demos: the stack
# capture demo, then the lag monitor demo (scripted lags in an event loop,
# each report rendered with scripts/lag-report.py).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" --demo
cmake -S "$root" -B "$root/build/demo" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSNAP_BUILD_TESTS=OFF -DSNAP_BUILD_BENCH=OFF >/dev/null
cmake --build "$root/build/demo" -j"$(nproc)" \
  --target stacksnap_demo stacksnap_lag_demo >/dev/null
"$root/build/demo/demo/stacksnap_demo"

# The lag monitor: heavy, lock, io, repeat and hang scenarios (~15 s).
lag_demo="$root/build/demo/demo/lag/stacksnap_lag_demo"
lag_dir=$(mktemp -d)
echo
echo "== Lag monitor demo (reports in $lag_dir) =="
"$lag_demo" --dir "$lag_dir"
echo
"$root/scripts/lag-report.py" "$lag_dir"

# A process killed during a hang: its last report is still "ongoing"; the
# next start of the watchdog turns it into a hang_killed report.
echo
echo "== A hang ended by SIGKILL, then the next run =="
status=0
"$lag_demo" --dir "$lag_dir" --scenario killme || status=$?
if ((status != 128 + 9)); then
  echo "demo.sh: the killme scenario should die by SIGKILL (status $status)" >&2
  exit 1
fi
echo "(killed by SIGKILL, as planned; its report was left \"ongoing\")"
"$lag_demo" --dir "$lag_dir" --scenario none
echo
"$root/scripts/lag-report.py" "$lag_dir"/*-hang_killed.json
