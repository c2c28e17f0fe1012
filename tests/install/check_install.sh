#!/usr/bin/env bash
# Installs a stacksnap build into a fresh temporary prefix and builds
# tests/install/consumer.c against that prefix only:
#   (a) with the compiler and `pkg-config --static` flags, linking the static
#       archive;
#   (b) as a separate CMake project using find_package(stacksnap), linking
#       stacksnap::stacksnap_static (and stacksnap::stacksnap);
# then runs each binary. Registered by tests/install/CMakeLists.txt.
#
# Usage: check_install.sh CMAKE BUILD_DIR SRC_DIR CC LIBDIR CONFIG GENERATOR [FLAGS]
#   LIBDIR is CMAKE_INSTALL_LIBDIR (relative to the prefix), CONFIG the build
#   configuration (may be empty), FLAGS extra compile+link flags for the
#   consumers (sanitizers the library was built with).
#
# Choosing the static archive with pkg-config: the prefix holds both
# libstacksnap.a and libstacksnap.so, and a plain -lstacksnap picks the .so.
# The -lstacksnap that pkg-config prints is wrapped as
# `-Wl,-Bstatic -lstacksnap -Wl,-Bdynamic`, so only that library is taken
# from its archive while libc, libpthread and libdl stay shared (what a
# downstream that wants "stacksnap linked in" would write). readelf then
# checks that no binary meant to be static needs libstacksnap.so.
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
  "$libdir/pkgconfig/stacksnap.pc" "$libdir/cmake/stacksnap/stacksnapConfig.cmake" \
  "$libdir/cmake/stacksnap/stacksnapConfigVersion.cmake" \
  "$libdir/cmake/stacksnap/stacksnapTargets.cmake"; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done

# ---- (a) pkg-config, static archive -----------------------------------------
# PKG_CONFIG_LIBDIR too, so that no stacksnap.pc outside the prefix is seen.
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
export PKG_CONFIG_LIBDIR=$prefix/$libdir/pkgconfig
pc_prefix=$("$pkg_config" --variable=prefix stacksnap)
[ "$pc_prefix" = "$prefix" ] || fail "stacksnap.pc has prefix=$pc_prefix, installed to $prefix"
read -r -a cflags <<<"$("$pkg_config" --cflags stacksnap)"
read -r -a libs_static <<<"$("$pkg_config" --libs --static stacksnap)"
read -r -a libs_shared <<<"$("$pkg_config" --libs stacksnap)"
echo "pkg-config --cflags:          ${cflags[*]}"
echo "pkg-config --libs --static:   ${libs_static[*]}"
link_static=()
for flag in "${libs_static[@]}"; do
  if [ "$flag" = "-lstacksnap" ]; then
    link_static+=(-Wl,-Bstatic -lstacksnap -Wl,-Bdynamic)
  else
    link_static+=("$flag")
  fi
done

echo "== (a) $cc consumer.c ${cflags[*]} ${link_static[*]}"
"$cc" -std=c11 -Wall -Wextra -Werror "${extra_flags[@]}" "${cflags[@]}" \
  "$src_dir/consumer.c" -o "$tmp/consumer_pc_static" "${link_static[@]}"
check_not_needing_so "$tmp/consumer_pc_static"
"$tmp/consumer_pc_static" || fail "consumer_pc_static"

# The shared library through pkg-config as well (found via LD_LIBRARY_PATH).
echo "== (a') $cc consumer.c ${cflags[*]} ${libs_shared[*]}"
"$cc" -std=c11 -Wall -Wextra -Werror "${extra_flags[@]}" "${cflags[@]}" \
  "$src_dir/consumer.c" -o "$tmp/consumer_pc_shared" "${libs_shared[@]}"
LD_LIBRARY_PATH=$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  "$tmp/consumer_pc_shared" || fail "consumer_pc_shared"
unset PKG_CONFIG_PATH PKG_CONFIG_LIBDIR

# ---- (b) find_package(stacksnap) --------------------------------------------
echo "== (b) find_package(stacksnap) with CMAKE_PREFIX_PATH=$prefix"
consumer_build=$tmp/consumer-build
cmake_args=(-S "$src_dir/consumer" -B "$consumer_build" -G "$generator"
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix")
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
