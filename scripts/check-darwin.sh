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
#
# After each build, the stopped window's imports (llvm-nm -u of the objects
# tests/darwin/window_imports.txt lists) are checked against that allowlist,
# the linked smoke binary's lazy binds (llvm-objdump --macho --lazy-bind)
# against what src/platform/darwin/prebind.c binds at load time, and the
# locks: the symbol cache and the sampler lock through snap__lock_t,
# darwin/lock.c an os_unfair_lock, semaphores waited on only for wake-ups.
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

# ---- The stopped window's imports and the locks' (docs/apple.md, "Contract:
# locks and the stopped window"). Per configuration, on the library's
# objects (and the smoke executable where one was linked).
llvm_tool() { # name: Debian's unversioned llvm tool, else the newest versioned
  local t
  for t in "/usr/bin/$1" /usr/bin/"$1"-[0-9]* /usr/lib/llvm-*/bin/"$1"; do
    [[ -x $t ]] && { echo "$t"; return 0; }
  done
  echo "check-darwin: $1 not found (Debian: apt-get install llvm)" >&2
  return 1
}
nm_tool=$(llvm_tool llvm-nm)
objdump_tool=$(llvm_tool llvm-objdump)
allowlist=$src/tests/darwin/window_imports.txt

# imports <object>: its undefined symbols, one a line.
imports() { "$nm_tool" -u "$1" | awk '{print $NF}' | sort -u; }

check_window_imports() { # cfg dir [exe]
  local cfg=$1 dir=$2 exe=${3:-} objdir fails=0 obj base sym kind objs
  objdir=$dir/stacksnap/CMakeFiles/stacksnap_static.dir/src
  declare -A kind_of objs_of
  local objects=()
  while read -r first second third _; do
    [[ -z $first || $first == \#* ]] && continue
    if [[ $first == object ]]; then
      objects+=("$second")
    else
      kind_of[$first]=$second
      objs_of[$first]=",$third,"
    fi
  done <"$allowlist"
  # 1. Every import of a window object is on the list, for that object.
  #    The imports are listed in $dir/window_imports.list for review.
  local listing=$dir/window_imports.list
  : >"$listing"
  for obj in "${objects[@]}"; do
    [[ -f $objdir/$obj.o ]] || { echo "check-darwin: $cfg: window object $obj.o missing" >&2; fails=1; continue; }
    base=${obj##*/}
    echo "$obj: $(imports "$objdir/$obj.o" | grep -v '^_snap__' | tr '\n' ' ')" >>"$listing"
    while read -r sym; do
      [[ -z $sym || $sym == _snap__* ]] && continue # ours, linked statically
      if [[ -z ${kind_of[$sym]:-} || ${objs_of[$sym]} != *",$base,"* ]]; then
        echo "check-darwin: $cfg: $obj imports $sym, which tests/darwin/window_imports.txt does not allow there (a call in the stopped window?)" >&2
        fails=1
      fi
    done < <(imports "$objdir/$obj.o")
  done
  # 2. No window import is bound lazily unless prebind.c calls it at load.
  if [[ -n $exe ]]; then
    local prebound lazy
    prebound=$(imports "$objdir/platform/darwin/prebind.c.o")
    lazy=$("$objdump_tool" --macho --lazy-bind "$exe" | awk 'NF >= 5 && $1 ~ /^__/ {print $NF}' | sort -u)
    for sym in $lazy; do
      [[ ${kind_of[$sym]:-} == window ]] || continue
      if ! grep -qx -- "$sym" <<<"$prebound"; then
        echo "check-darwin: $cfg: $sym is called in the stopped window and bound lazily in $exe, but prebind.c does not bind it at load time (dyld2 would bind it under its loader lock with a thread suspended)" >&2
        fails=1
      fi
    done
  fi
  # 3. Locks: mutual exclusion through snap__lock_t (os_unfair_lock, which
  #    donates priority), semaphores for wake-ups only.
  local cache lock sampler
  cache=$(imports "$objdir/symbols/cache.c.o")
  lock=$(imports "$objdir/platform/darwin/lock.c.o")
  sampler=$(imports "$objdir/platform/posix/sampler_lock.c.o")
  grep -qx _snap__plat_lock_lock <<<"$cache" ||
    { echo "check-darwin: $cfg: symbols/cache.c does not lock through snap__plat_lock_lock" >&2; fails=1; }
  grep -qx _snap__plat_lock_lock <<<"$sampler" ||
    { echo "check-darwin: $cfg: posix/sampler_lock.c does not take a snap__lock_t" >&2; fails=1; }
  grep -qx _os_unfair_lock_lock <<<"$lock" && grep -qx _os_unfair_lock_unlock <<<"$lock" ||
    { echo "check-darwin: $cfg: platform/darwin/lock.c is not an os_unfair_lock" >&2; fails=1; }
  # Only the wake-up users may wait on a semaphore: the watchdog's sleep,
  # the trace sampler's sleep between periods, a trace start's wait for
  # the last reader of the previous trace to leave.
  while read -r obj; do
    case ${obj#"$objdir"/} in
      lag/watchdog.c.o | trace/sampler.c.o | trace/trace_api.c.o | platform/darwin/semaphore.c.o) ;;
      *) echo "check-darwin: $cfg: ${obj#"$objdir"/} waits on a semaphore (mutual exclusion belongs to snap__lock_t; semaphores are for wake-ups)" >&2; fails=1 ;;
    esac
  done < <(for obj in $(find "$objdir" -name '*.o' | sort); do
    local list
    list=$(imports "$obj")
    grep -qxE '_snap__plat_sem_(timed)?wait|_dispatch_semaphore_wait' <<<"$list" && echo "$obj"
  done)
  ((fails == 0)) || { echo "check-darwin: $cfg: window/lock check FAILED" >&2; return 1; }
  echo "check-darwin: $cfg: window imports and locks checked (imports listed in $listing)"
}

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
    check_window_imports "$cfg" "$dir" "$exe" || exit 1
    summary+=("$cfg: compiled and linked ($exe); window imports and locks checked")
  else
    check_window_imports "$cfg" "$dir" || exit 1
    summary+=("$cfg: compiled (the SDK has no libSystem: nothing linked); window imports and locks checked")
  fi
done
for line in "${summary[@]}"; do
  echo "check-darwin: $line"
done
echo "check-darwin: passed"
