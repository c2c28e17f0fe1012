#!/usr/bin/env bash
# check-darwin.sh — cross-compiles the Apple build of stacksnap against the
# SDKs in $SNAP_DARWIN_SDK (iPhoneOS) and $SNAP_DARWIN_MACOS_SDK (macOS),
# with clang, ld64.lld and warnings as errors. Run by the CMake target
# check-darwin (cmake/check_darwin.cmake), or by hand:
#
#   scripts/check-darwin.sh [cmake] [source-dir] [build-dir] [config...]
#
# config: ios-arm64 ios-arm64e macos-arm64 macos-x86_64 (default: all those
# whose SDK is set). iOS configurations build the library (static and
# shared) and link the smoke executable tests/darwin/smoke/smoke.c plus two
# small dylibs; macOS ones do the same when the SDK has libSystem, else
# compile the library and the smoke objects only (a trimmed SDK). Nothing
# built here runs: there is no Mac.
set -euo pipefail

cmake_bin=${1:-cmake}
src=$(cd "${2:-$(dirname "$0")/..}" && pwd)
out=${3:-$src/build/darwin}
shift $(($# < 3 ? $# : 3))
configs=("$@")

ios_sdk=${SNAP_DARWIN_SDK:-}
mac_sdk=${SNAP_DARWIN_MACOS_SDK:-}
if [[ -z "$ios_sdk" && -z "$mac_sdk" ]]; then
  echo "check-darwin: skipped: no SDK (set SNAP_DARWIN_SDK to an iPhoneOS.sdk and/or SNAP_DARWIN_MACOS_SDK to a MacOSX.sdk)"
  exit 0
fi
if ((${#configs[@]} == 0)); then
  [[ -n "$ios_sdk" ]] && configs+=(ios-arm64 ios-arm64e)
  [[ -n "$mac_sdk" ]] && configs+=(macos-arm64 macos-x86_64)
  [[ -z "$ios_sdk" ]] && echo "check-darwin: iOS not checked (SNAP_DARWIN_SDK unset)"
  [[ -z "$mac_sdk" ]] && echo "check-darwin: macOS not checked (SNAP_DARWIN_MACOS_SDK unset)"
fi

jobs=${SNAP_CHECK_DARWIN_JOBS:-2}
summary=()
for cfg in "${configs[@]}"; do
  os=${cfg%%-*}
  arch=${cfg#*-}
  case $os in
    ios) sdk=$ios_sdk; var=SNAP_DARWIN_SDK ;;
    macos) sdk=$mac_sdk; var=SNAP_DARWIN_MACOS_SDK ;;
    *) echo "check-darwin: unknown configuration $cfg" >&2; exit 2 ;;
  esac
  if [[ -z "$sdk" || ! -d "$sdk" ]]; then
    echo "check-darwin: $cfg: $var is not an SDK directory: '$sdk'" >&2
    exit 1
  fi
  dir=$out/$cfg
  mkdir -p "$out"
  echo "check-darwin: $cfg: configuring in $dir"
  "$cmake_bin" -S "$src/tests/darwin/smoke" -B "$dir" \
    -DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchain-$os.cmake" \
    -DCMAKE_OSX_ARCHITECTURES="$arch" -DCMAKE_OSX_SYSROOT="$sdk" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSNAP_WERROR=ON >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log" >&2; echo "check-darwin: $cfg: configure FAILED" >&2; exit 1; }
  echo "check-darwin: $cfg: building"
  if ! "$cmake_bin" --build "$dir" -j "$jobs"; then
    echo "check-darwin: $cfg: build FAILED" >&2
    exit 1
  fi
  if grep -q '^SNAP_DARWIN_SDK_CAN_LINK:BOOL=ON' "$dir/CMakeCache.txt"; then
    exe=$dir/stacksnap_darwin_smoke
    [[ -f $exe.app/stacksnap_darwin_smoke ]] && exe=$exe.app/stacksnap_darwin_smoke
    [[ -f $exe ]] || { echo "check-darwin: $cfg: no executable at $exe" >&2; exit 1; }
    summary+=("$cfg: compiled and linked ($exe)")
  else
    summary+=("$cfg: compiled (the SDK has no libSystem: nothing linked)")
  fi
done
for line in "${summary[@]}"; do
  echo "check-darwin: $line"
done
echo "check-darwin: passed"
