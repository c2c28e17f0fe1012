#!/usr/bin/env bash
# Installs a stacksnap build into a fresh temporary prefix and builds
# tests/install/consumer.c against that prefix only:
#   (a) with the compiler and `pkg-config --static --libs stacksnap-static`,
#       docs/build.md's static recipe, as printed (no linker flags of ours):
#       it must link libstacksnap.a, and the binary must not need
#       libstacksnap.so;
#   (a') with `pkg-config --libs stacksnap`: the shared library;
#   (a'') fully static (-static) with the same stacksnap-static flags, where
#       the C library has a static archive and no sanitizer is in play;
#   (b) as a separate CMake project using find_package(stacksnap MAJOR),
#       linking stacksnap::stacksnap_static and stacksnap::stacksnap;
# then runs each binary (consumer.c checks the library's version against the
# header's and names its own stack whole). The version that pkg-config and
# the CMake package report must be the installed header's SNAP_VERSION_*.
# Registered by tests/install/CMakeLists.txt.
#
# Usage: check_install.sh CMAKE BUILD_DIR SRC_DIR CC LIBDIR CONFIG GENERATOR [FLAGS]
#   LIBDIR is CMAKE_INSTALL_LIBDIR (relative to the prefix), CONFIG the build
#   configuration (may be empty), FLAGS extra compile+link flags for the
#   consumers (sanitizers the library was built with).
#
# Why a second .pc for the archive: the prefix holds both libstacksnap.a and
# libstacksnap.so, and the -lstacksnap of stacksnap.pc picks the .so whatever
# --static says (--static only adds Libs.private). stacksnap-static.pc names
# the archive by its path.
set -euo pipefail

if [ $# -lt 7 ]; then
  echo "usage: $0 CMAKE BUILD_DIR SRC_DIR CC LIBDIR CONFIG GENERATOR [FLAGS]" >&2
  exit 2
fi
cmake_cmd=$1
build_dir=$2
src_dir=$3
cc=$4
libdir=$5
config=$6
generator=$7
read -r -a extra_flags <<<"${8:-}"
pkg_config=${PKG_CONFIG:-pkg-config}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/stacksnap-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

fail() {
  echo "check_install: FAIL: $*" >&2
  exit 1
}

# A binary linked with the static archive must not need libstacksnap.so.
check_not_needing_so() {
  if command -v readelf >/dev/null 2>&1; then
    if readelf -d "$1" | grep -q 'NEEDED.*libstacksnap'; then
      readelf -d "$1" | grep NEEDED >&2
      fail "$1 needs the shared libstacksnap"
    fi
  fi
}

config_args=()
if [ -n "$config" ]; then
  config_args=(--config "$config")
fi

echo "== cmake --install $build_dir --prefix $prefix"
"$cmake_cmd" --install "$build_dir" --prefix "$prefix" "${config_args[@]}" >"$tmp/install.log" ||
  { cat "$tmp/install.log" >&2; fail "cmake --install"; }

for f in include/stacksnap.h "$libdir/libstacksnap.a" "$libdir/libstacksnap.so" \
  "$libdir/pkgconfig/stacksnap.pc" "$libdir/pkgconfig/stacksnap-static.pc" \
  "$libdir/cmake/stacksnap/stacksnapConfig.cmake" \
  "$libdir/cmake/stacksnap/stacksnapConfigVersion.cmake" \
  "$libdir/cmake/stacksnap/stacksnapTargets.cmake"; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done

# The version the installed header declares.
header_version() {
  sed -n "s/^#define SNAP_VERSION_$1 \([0-9][0-9]*\)\$/\1/p" "$prefix/include/stacksnap.h"
}
version="$(header_version MAJOR).$(header_version MINOR).$(header_version PATCH)"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "no SNAP_VERSION_* in the installed header"
major=${version%%.*}
echo "installed header: version $version"

# ---- (a) pkg-config ---------------------------------------------------------
# PKG_CONFIG_LIBDIR too, so that no stacksnap.pc outside the prefix is seen.
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
export PKG_CONFIG_LIBDIR=$prefix/$libdir/pkgconfig
for pc in stacksnap stacksnap-static; do
  pc_prefix=$("$pkg_config" --variable=prefix $pc)
  [ "$pc_prefix" = "$prefix" ] || fail "$pc.pc has prefix=$pc_prefix, installed to $prefix"
  pc_version=$("$pkg_config" --modversion $pc)
  [ "$pc_version" = "$version" ] || fail "$pc.pc says version $pc_version, the header $version"
done
read -r -a cflags <<<"$("$pkg_config" --cflags stacksnap-static)"
read -r -a libs_static <<<"$("$pkg_config" --libs --static stacksnap-static)"
read -r -a libs_shared <<<"$("$pkg_config" --libs stacksnap)"
echo "pkg-config --cflags stacksnap-static:          ${cflags[*]}"
echo "pkg-config --libs --static stacksnap-static:   ${libs_static[*]}"

echo "== (a) $cc consumer.c ${cflags[*]} ${libs_static[*]}"
"$cc" -std=c11 -Wall -Wextra -Werror "${extra_flags[@]}" "${cflags[@]}" \
  "$src_dir/consumer.c" -o "$tmp/consumer_pc_static" "${libs_static[@]}"
check_not_needing_so "$tmp/consumer_pc_static"
"$tmp/consumer_pc_static" || fail "consumer_pc_static"

# The shared library through pkg-config as well (found via LD_LIBRARY_PATH).
echo "== (a') $cc consumer.c ${cflags[*]} ${libs_shared[*]}"
"$cc" -std=c11 -Wall -Wextra -Werror "${extra_flags[@]}" "${cflags[@]}" \
  "$src_dir/consumer.c" -o "$tmp/consumer_pc_shared" "${libs_shared[@]}"
if command -v readelf >/dev/null 2>&1; then
  readelf -d "$tmp/consumer_pc_shared" | grep -q "NEEDED.*\[libstacksnap\.so\.$major\]" ||
    fail "consumer_pc_shared does not need libstacksnap.so.$major (the SONAME)"
fi
LD_LIBRARY_PATH=$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  "$tmp/consumer_pc_shared" || fail "consumer_pc_shared"

# Fully static: only without sanitizers (their runtimes are not static
# archives here) and where the C library has one (glibc's libc.a).
if [ ${#extra_flags[@]} -eq 0 ] && echo 'int main(void){return 0;}' |
  "$cc" -x c -static -o "$tmp/static_probe" - >/dev/null 2>&1; then
  echo "== (a'') $cc -static consumer.c ${cflags[*]} ${libs_static[*]}"
  "$cc" -std=c11 -Wall -Wextra -Werror -static "${cflags[@]}" \
    "$src_dir/consumer.c" -o "$tmp/consumer_fully_static" "${libs_static[@]}"
  if command -v readelf >/dev/null 2>&1 && readelf -d "$tmp/consumer_fully_static" | grep -q NEEDED; then
    fail "consumer_fully_static needs shared libraries"
  fi
  "$tmp/consumer_fully_static" || fail "consumer_fully_static"
else
  echo "== (a'') fully static: skipped (sanitizers, or no static C library)"
fi
unset PKG_CONFIG_PATH PKG_CONFIG_LIBDIR

# ---- (b) find_package(stacksnap) --------------------------------------------
echo "== (b) find_package(stacksnap) with CMAKE_PREFIX_PATH=$prefix"
consumer_build=$tmp/consumer-build
cmake_args=(-S "$src_dir/consumer" -B "$consumer_build" -G "$generator"
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix"
  -DSNAP_EXPECT_VERSION="$version")
if [ -n "$config" ]; then
  cmake_args+=(-DCMAKE_BUILD_TYPE="$config")
fi
if [ ${#extra_flags[@]} -gt 0 ]; then
  cmake_args+=(-DCMAKE_C_FLAGS="${extra_flags[*]}" -DCMAKE_EXE_LINKER_FLAGS="${extra_flags[*]}")
fi
"$cmake_cmd" "${cmake_args[@]}" >"$tmp/consumer-configure.log" 2>&1 ||
  { cat "$tmp/consumer-configure.log" >&2; fail "consumer configure"; }
found_dir=$(sed -n 's/^stacksnap_DIR:[A-Z]*=//p' "$consumer_build/CMakeCache.txt")
[ "$found_dir" = "$prefix/$libdir/cmake/stacksnap" ] ||
  fail "find_package(stacksnap) used $found_dir, not the temporary prefix"
"$cmake_cmd" --build "$consumer_build" "${config_args[@]}" >"$tmp/consumer-build.log" 2>&1 ||
  { cat "$tmp/consumer-build.log" >&2; fail "consumer build"; }
find_bin() { # multi-config generators put binaries in a per-config directory
  local b
  for b in "$consumer_build/$1" "$consumer_build/$config/$1"; do
    if [ -x "$b" ]; then
      echo "$b"
      return
    fi
  done
  fail "no $1 built"
}
static_bin=$(find_bin consumer_static)
shared_bin=$(find_bin consumer_shared)
check_not_needing_so "$static_bin"
"$static_bin" || fail "consumer_static (stacksnap::stacksnap_static)"
"$shared_bin" || fail "consumer_shared (stacksnap::stacksnap)"

echo "check_install: OK"
