#!/usr/bin/env bash
# Installs what is missing, builds stacksnap and runs the demo.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" --demo
cmake -S "$root" -B "$root/build/demo" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSNAP_BUILD_TESTS=OFF -DSNAP_BUILD_BENCH=OFF >/dev/null
cmake --build "$root/build/demo" -j"$(nproc)" --target stacksnap_demo >/dev/null
"$root/build/demo/demo/stacksnap_demo"
