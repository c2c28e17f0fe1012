#!/bin/sh
# shellcheck disable=SC2086 # DWL_LDFLAGS holds several flags: split on purpose
# dwarf_fixture.sh — builds one fixture of test_dwarf_lines (tests/tools/
# dwarf_tests.cmake): the program (main.c + sub/util.c), the shared
# library (lib/lib.c) or a hand-written unit (hand.s, hand5.s: a shared
# library without libc) of dwarf_fixture/, compiled from that directory with
# relative names (so the DWARF joins comp_dir and subdirectories), linked
# by the C driver of the target, then split: OUT.debug is
# `objcopy --only-keep-debug` of OUT.
#   DWL_LDFLAGS="..." dwarf_fixture.sh exe|lib|FILE.s CC LINK_CC OBJCOPY SRC_DIR OUT [cflags...]
set -eu
kind=$1 cc=$2 link=$3 objcopy=$4 src=$5 out=$6
shift 6
tmp=$out.objs
rm -rf "$tmp"
mkdir -p "$tmp"
cd "$src"
case $kind in *.s) asm=$kind kind=asm ;; esac
if [ "$kind" = asm ]; then
  "$cc" "$@" -c "$asm" -o "$tmp/hand.o"
  "$link" ${DWL_LDFLAGS:-} -shared -nostdlib -o "$out" "$tmp/hand.o"
elif [ "$kind" = lib ]; then
  "$cc" "$@" -fPIC -c lib/lib.c -o "$tmp/lib.o"
  "$link" ${DWL_LDFLAGS:-} -shared -o "$out" "$tmp/lib.o"
else
  "$cc" "$@" -c main.c -o "$tmp/main.o"
  "$cc" "$@" -c sub/util.c -o "$tmp/util.o"
  "$link" ${DWL_LDFLAGS:-} -o "$out" "$tmp/main.o" "$tmp/util.o"
fi
"$objcopy" --only-keep-debug "$out" "$out.debug"
rm -rf "$tmp"
