#!/usr/bin/env bash
# lint.sh — the checks that are not tests, over every file git tracks:
#   C format      every C and Objective-C file formatted as .clang-format
#                 says (clang-format --dry-run -Werror);
#   shell         every shell script clean under shellcheck;
#   Python        every Python file (Debian's python3-pyflakes).
# A tool that is missing is a failure, not a skip: scripts/install-deps.sh
# installs all three. Ends with "N passed, M failed", counting the checks;
# exits non-zero if any failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
passed=0
failed=0

check() { # name command...: one check, its output shown only on failure
  local name=$1 out
  shift
  if out=$("$@" 2>&1); then
    passed=$((passed + 1))
    echo "lint: $name: clean"
  else
    failed=$((failed + 1))
    echo "lint: $name: FAILED"
    printf '%s\n' "$out" | head -n 60
  fi
}

mapfile -t c_files < <(git ls-files '*.c' '*.h' '*.m' ':!third_party/**')
mapfile -t sh_files < <(git ls-files '*.sh' .ci/run)
mapfile -t py_files < <(git ls-files '*.py')

check "clang-format (${#c_files[@]} files)" \
  clang-format --dry-run -Werror "${c_files[@]}"
check "shellcheck (${#sh_files[@]} files)" shellcheck "${sh_files[@]}"
# Debian's interpreter: pyflakes is installed for it, not for a python3
# that may come first on PATH.
check "pyflakes (${#py_files[@]} files)" \
  /usr/bin/python3 -m pyflakes "${py_files[@]}"

echo "$passed passed, $failed failed"
((failed == 0))
