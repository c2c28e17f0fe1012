#!/usr/bin/env bash
# Installs what is missing, then builds and runs the whole test suite in every
# configuration the project promises:
#
#   gcc        RelWithDebInfo, -Werror
#   clang      RelWithDebInfo, -Werror
#   asan       clang, AddressSanitizer + UndefinedBehaviorSanitizer, plus a
#              time-boxed libFuzzer run of the walker and the CFI reader
#   tsan       clang, ThreadSanitizer
#   arm64      gcc-aarch64-linux-gnu, tests under qemu-aarch64
#   arm64-pac  the same with -mbranch-protection=standard (signed return
#              addresses), under qemu -cpu max,pauth-impdef=on (pointer
#              authentication with the implementation-defined hash:
#              qemu's QARMA takes ~10x the time, and test_trace_storage
#              went past its timeout)
#   lint       scripts/lint.sh: every C file clang-format clean, every
#              shell script shellcheck clean, every Python file pyflakes
#              clean (first: it takes seconds)
#   swift      the Swift toolchain (swift on PATH, or /opt/swift/usr/bin):
#              `swift build` and `swift test` of Package.swift (SwiftPM
#              compiles the C with the toolchain's own clang: that is this
#              configuration's compiler), then, over the library built by
#              Debian's gcc, test_swift_async (swiftc -O) and check_podspec
#
# Tests labelled darwin-contract run in every configuration. Those over the
# Apple build (check_darwin, which cross-compiles the library, the smoke
# executable and SwiftPM's and CocoaPods' builds against the SDKs, and
# test_compact_unwind_real, test_macho_ranges, test_image_registry_real
# over its files) need SNAP_DARWIN_SDK and/or SNAP_DARWIN_MACOS_SDK: when
# set they reach the gcc configuration alone (check_darwin takes minutes;
# one run proves the Apple build), and a failure there fails the run like
# any other. Without them, and in the other configurations, ctest reports
# those tests "Skipped", never passed; the last lines say which it was.
#
# and then, in the gcc build tree, the whole suite once more (ctest -j2)
# beside three busy loops ("gcc-under-load"): lags happen on loaded
# devices, CI machines are shared, and a test that passes only on a quiet
# box is wrong.
#
#   scripts/test.sh --under-load [--runs N] [--config NAME]
#
# builds only one configuration (gcc unless NAME says another of the C
# ones) and runs its whole suite N times (default 10) under that load,
# stopping at the first failure.
#
# A test that cannot run here exits 77 (ctest's SKIP_RETURN_CODE) and
# ctest reports it "Skipped": the last lines say how many were skipped in
# each configuration (read from ctest's own output).
#
# Every CMake configuration here builds with -DSNAP_WERROR=ON (warnings are
# errors in CI; a user's build leaves it OFF). Build trees go to
# build/<config>. Ends with one line "N passed, M failed"
# counting configurations; exits non-zero if any failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
under_load_only=0
runs=10
load_config=gcc
while (($#)); do
  case $1 in
  --under-load) under_load_only=1 ;;
  --runs)
    runs=${2:?--runs needs a count}
    shift
    ;;
  --config)
    load_config=${2:?--config needs a configuration name}
    shift
    ;;
  *)
    echo "usage: $0 [--under-load [--runs N] [--config NAME]]" >&2
    exit 2
    ;;
  esac
  shift
done
"$root/scripts/install-deps.sh" || exit 1
jobs=$(nproc)

passed=0
failed=0
failed_names=()
busy=() # pids of run_under_load's busy loops
skipped=() # "configuration: N" for each ctest run, for the last lines

# ctest with its arguments, its output shown and kept in $log; the tests
# it reported Skipped are counted for the last lines under $name.
run_ctest() { # name log ctest-args...
  local name=$1 log=$2 rc
  shift 2
  ctest "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  skipped+=("$name: $(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped' "$log")")
  return "$rc"
}
print_skipped() {
  local all="" one
  for one in "${skipped[@]}"; do all+="${all:+, }$one"; done
  echo "skipped tests (exit 77, ctest's SKIP_RETURN_CODE): ${all:-no ctest ran}"
}

build_config() {
  local dir=$1 sdk_env=(-u SNAP_DARWIN_SDK -u SNAP_DARWIN_MACOS_SDK)
  shift
  # The Apple SDKs for the gcc configuration alone (see the head).
  [[ ${dir##*/} == gcc ]] && sdk_env=()
  env "${sdk_env[@]}" cmake -S "$root" -B "$dir" -DSNAP_WERROR=ON -DSNAP_BUILD_BENCH=OFF -DSNAP_BUILD_DEMO=ON "$@" >"$dir.configure.log" 2>&1 &&
    cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1
}

run_config() {
  local name=$1
  shift
  local dir="$root/build/$name"
  echo "=== $name"
  local t0=$SECONDS
  if build_config "$dir" "$@" &&
    run_ctest "$name" "$dir.ctest.log" --test-dir "$dir" --output-on-failure -j"$jobs"; then
    passed=$((passed + 1))
    echo "=== $name: passed ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1))
    failed_names+=("$name")
    echo "=== $name: FAILED ($((SECONDS - t0)) s)"
    tail -n 40 "$dir.configure.log" "$dir.build.log" 2>/dev/null
  fi
}

# Each C configuration runs on the compiler it names: Debian's gcc and
# clang, by full path, so the Swift toolchain's own clang (also on PATH on
# a machine that carries Swift) never replaces them.
cc_gcc=/usr/bin/gcc
cc_clang=/usr/bin/clang
# The whole suite of an already built tree, `count` times, with two tests
# at once (ctest -j2) beside three busy loops (plain processes at the
# default priority, as other apps and builds would be). Stops at the first
# failing run.
under_load_loops=3
run_under_load() {
  local name=$1 count=$2
  local dir="$root/build/$name"
  echo "=== $name-under-load ($count run(s), $under_load_loops busy loops, ctest -j2)"
  local t0=$SECONDS ok=1
  # Bounded, and killed on any exit: a busy loop must never outlive us.
  trap 'kill "${busy[@]}" 2>/dev/null' EXIT
  for ((c = 0; c < under_load_loops; c++)); do
    timeout $((count * 3600 + 60)) sh -c 'while :; do :; done' &
    busy+=($!)
  done
  for ((r = 1; r <= count; r++)); do
    local tr=$SECONDS
    local label=$name-under-load
    ((count > 1)) && label+=" run $r"
    if ! run_ctest "$label" "$dir.under-load.log" --test-dir "$dir" --output-on-failure -j2; then
      echo "=== $name-under-load: run $r of $count failed"
      ok=0
      break
    fi
    echo "=== $name-under-load: run $r of $count passed ($((SECONDS - tr)) s)"
  done
  kill "${busy[@]}" 2>/dev/null
  wait "${busy[@]}" 2>/dev/null
  busy=()
  if ((ok)); then
    passed=$((passed + 1))
    echo "=== $name-under-load: passed ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1))
    failed_names+=("$name-under-load")
    echo "=== $name-under-load: FAILED ($((SECONDS - t0)) s)"
  fi
}

mkdir -p "$root/build"
# Each C configuration's CMake flags, by name.
declare -A flags=(
  # gcc also builds the benchmarks (not run: speed is measured, not
  # tested), so they keep compiling.
  [gcc]="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=$cc_gcc -DSNAP_BUILD_BENCH=ON"
  [clang]="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=$cc_clang"
  [asan]="-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=$cc_clang -DSNAP_SANITIZE=address,undefined -DSNAP_FUZZ_SECONDS=60"
  [tsan]="-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=$cc_clang -DSNAP_SANITIZE=thread"
  [arm64]="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_TOOLCHAIN_FILE=$root/cmake/toolchain-aarch64-linux-gnu.cmake -DSNAP_QEMU_CPU=cortex-a72"
  [arm64-pac]="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_TOOLCHAIN_FILE=$root/cmake/toolchain-aarch64-linux-gnu.cmake -DSNAP_QEMU_CPU=max,pauth-impdef=on -DCMAKE_C_FLAGS=-mbranch-protection=standard"
)
if ((under_load_only)); then
  [[ -n "${flags[$load_config]:-}" ]] || {
    echo "unknown configuration: $load_config" >&2
    exit 2
  }
  echo "=== $load_config (build only)"
  # shellcheck disable=SC2086 # the flags are words
  if ! build_config "$root/build/$load_config" ${flags[$load_config]}; then
    tail -n 40 "$root/build/$load_config.configure.log" "$root/build/$load_config.build.log"
    echo "0 passed, 1 failed"
    exit 1
  fi
  run_under_load "$load_config" "$runs"
  print_skipped
  echo "$passed passed, $failed failed"
  ((failed == 0))
  exit
fi
echo "=== lint"
if "$root/scripts/lint.sh"; then
  passed=$((passed + 1))
  echo "=== lint: passed"
else
  failed=$((failed + 1))
  failed_names+=(lint)
  echo "=== lint: FAILED"
fi
for name in gcc clang asan tsan arm64 arm64-pac; do
  # shellcheck disable=SC2086
  run_config "$name" ${flags[$name]}
done

# swift: SwiftPM builds in its default scratch directory, .build/ (with
# --scratch-path build/swiftpm, inside the C target's path ".", Swift 6.3
# failed every build after the first with "unknown build description").
run_swift_config() {
  local name=swift
  local dir="$root/build/$name"
  echo "=== $name"
  local t0=$SECONDS
  local swift_bin
  swift_bin=$(command -v swift || true)
  [[ -z "$swift_bin" && -x /opt/swift/usr/bin/swift ]] && swift_bin=/opt/swift/usr/bin/swift
  if [[ -n "$swift_bin" ]] &&
    (cd "$root" && "$swift_bin" build) >"$dir.swift-build.log" 2>&1 &&
    (cd "$root" && "$swift_bin" test) >"$dir.swift-test.log" 2>&1 &&
    env -u SNAP_DARWIN_SDK -u SNAP_DARWIN_MACOS_SDK \
      cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=$cc_gcc \
      -DSNAP_WERROR=ON -DSNAP_BUILD_BENCH=OFF -DSNAP_BUILD_DEMO=OFF >"$dir.configure.log" 2>&1 &&
    cmake --build "$dir" -j"$jobs" --target test_swift_async >"$dir.build.log" 2>&1 &&
    run_ctest swift "$dir.ctest.log" --test-dir "$dir" --output-on-failure -R '^(test_swift_async|check_podspec.*)$'; then
    passed=$((passed + 1))
    grep -h -E "Executed [0-9]+ tests" "$dir.swift-test.log" | tail -n 1
    echo "=== $name: passed ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1))
    failed_names+=("$name")
    [[ -z "$swift_bin" ]] && echo "no Swift toolchain: swift is not on PATH nor in /opt/swift/usr/bin"
    echo "=== $name: FAILED ($((SECONDS - t0)) s)"
    tail -n 40 "$dir.swift-build.log" "$dir.swift-test.log" "$dir.configure.log" "$dir.build.log" 2>/dev/null
  fi
}
run_swift_config
# Last, so the busy loops slow no other configuration: once here (a quick
# proof in every CI run); `--under-load --runs 10` is the full check.
if [[ " ${failed_names[*]} " == *" gcc "* ]]; then
  failed=$((failed + 1))
  failed_names+=(gcc-under-load)
  echo "=== gcc-under-load: not run (the gcc configuration failed)"
else
  run_under_load gcc 1
fi

print_skipped
if [[ -n ${SNAP_DARWIN_SDK:-}${SNAP_DARWIN_MACOS_SDK:-} ]]; then
  echo "darwin-contract over the Apple build: run in gcc (SNAP_DARWIN_SDK='${SNAP_DARWIN_SDK:-}', SNAP_DARWIN_MACOS_SDK='${SNAP_DARWIN_MACOS_SDK:-}'); Skipped elsewhere"
else
  echo "darwin-contract over the Apple build: Skipped everywhere (set SNAP_DARWIN_SDK and/or SNAP_DARWIN_MACOS_SDK to run them)"
fi
((failed)) && echo "failed configurations: ${failed_names[*]}"
echo "$passed passed, $failed failed"
((failed == 0))
