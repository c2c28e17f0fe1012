#!/usr/bin/env bash
# check_subdir.sh CMAKE SOURCE_DIR GCC — a project that pulls stacksnap in
# as a subproject (tests/install/subdir: FetchContent, local source)
# configures, builds and runs with gcc alone: stacksnap's tests,
# benchmarks and demos default to off when it is not the top-level
# project, so nothing looks for clang, Python or GLib. Fails if any of
# them was configured anyway.
set -euo pipefail
cmake_bin=$1 src=$2 gcc=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$cmake_bin" -S "$src/tests/install/subdir" -B "$work" -DCMAKE_C_COMPILER="$gcc" \
  -DSNAP_SOURCE_DIR="$src" >"$work.log" 2>&1 || { cat "$work.log"; exit 1; }
for var in SNAP_BUILD_TESTS SNAP_BUILD_BENCH SNAP_BUILD_DEMO; do
  if ! grep -q "^$var:BOOL=OFF$" "$work/CMakeCache.txt"; then
    echo "check_subdir: $var is not OFF in a subproject build:"
    grep "^$var" "$work/CMakeCache.txt" || echo "  (not set)"
    exit 1
  fi
done
if grep -q '^SNAP_CLANG' "$work/CMakeCache.txt"; then
  echo "check_subdir: a subproject build looked for clang"
  exit 1
fi
"$cmake_bin" --build "$work" -j2 >"$work.build.log" 2>&1 || { tail -40 "$work.build.log"; exit 1; }
if "$cmake_bin" --build "$work" --target help | grep -q 'test_capture_self'; then
  echo "check_subdir: stacksnap's tests are targets of a subproject build"
  exit 1
fi
"$work/consumer_subdir"
rm -f "$work.log" "$work.build.log"
echo "check_subdir: gcc alone built and ran a FetchContent consumer"
