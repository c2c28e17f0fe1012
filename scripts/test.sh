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
#              addresses), under qemu -cpu max
#   swift      the Swift toolchain (swift on PATH, or /opt/swift/usr/bin):
#              `swift build` and `swift test` of Package.swift (SwiftPM
#              compiles the C with the toolchain's own clang: that is this
#              configuration's compiler), then, over the library built by
#              Debian's gcc, test_swift_async (swiftc -O) and check_podspec
#
# Every CMake configuration here builds with -DSNAP_WERROR=ON (warnings are
# errors in CI; a user's build leaves it OFF). Build trees go to
# build/<config>. Ends with one line "N passed, M failed"
# counting configurations; exits non-zero if any failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" || exit 1
jobs=$(nproc)

passed=0
failed=0
failed_names=()

run_config() {
  local name=$1
  shift
  local dir="$root/build/$name"
  echo "=== $name"
  local t0=$SECONDS
  if cmake -S "$root" -B "$dir" -DSNAP_WERROR=ON -DSNAP_BUILD_BENCH=OFF -DSNAP_BUILD_DEMO=ON "$@" >"$dir.configure.log" 2>&1 &&
    cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1 &&
    ctest --test-dir "$dir" --output-on-failure -j"$jobs"; then
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
mkdir -p "$root/build"
# gcc also builds the benchmarks (not run: speed is measured, not tested),
# so they keep compiling.
run_config gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=$cc_gcc -DSNAP_BUILD_BENCH=ON
run_config clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=$cc_clang
run_config asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=$cc_clang \
  -DSNAP_SANITIZE=address,undefined -DSNAP_FUZZ_SECONDS=60
run_config tsan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=$cc_clang \
  -DSNAP_SANITIZE=thread
run_config arm64 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-aarch64-linux-gnu.cmake" \
  -DSNAP_QEMU_CPU=cortex-a72
run_config arm64-pac -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-aarch64-linux-gnu.cmake" \
  -DSNAP_QEMU_CPU=max -DCMAKE_C_FLAGS=-mbranch-protection=standard

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
    cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=$cc_gcc \
      -DSNAP_WERROR=ON -DSNAP_BUILD_BENCH=OFF -DSNAP_BUILD_DEMO=OFF >"$dir.configure.log" 2>&1 &&
    cmake --build "$dir" -j"$jobs" --target test_swift_async >"$dir.build.log" 2>&1 &&
    ctest --test-dir "$dir" --output-on-failure -R '^(test_swift_async|check_podspec.*)$'; then
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

((failed)) && echo "failed configurations: ${failed_names[*]}"
echo "$passed passed, $failed failed"
((failed == 0))
