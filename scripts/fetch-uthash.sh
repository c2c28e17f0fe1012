#!/usr/bin/env bash
# fetch-uthash.sh — puts uthash.h (header only, BSD licence, the symbol
# cache's index) into third_party/uthash/ for builds that do not go through
# CMake and a system package: CocoaPods runs this as the pod's
# prepare_command; a SwiftPM user runs it once in a local checkout. CMake
# builds use the system's copy instead (Debian: uthash-dev; Homebrew:
# uthash) and never need this. The header is not committed: it is someone
# else's code.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=2.3.0
dest=$root/third_party/uthash
mkdir -p "$dest"
if [[ -f /usr/include/uthash.h ]]; then
  cp /usr/include/uthash.h "$dest/uthash.h"
else
  curl -fsSL "https://raw.githubusercontent.com/troydhanson/uthash/v$version/src/uthash.h" \
    -o "$dest/uthash.h"
fi
grep -q "UTHASH_VERSION" "$dest/uthash.h" || {
  echo "fetch-uthash: $dest/uthash.h does not look like uthash" >&2
  exit 1
}
echo "fetch-uthash: $dest/uthash.h ($(grep -m1 '#define UTHASH_VERSION' "$dest/uthash.h"))"
