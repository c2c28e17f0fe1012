#!/usr/bin/env bash
# Installs what stacksnap's build, tests, demo and benchmarks need on Debian 12
# (bookworm), x86_64 or aarch64 host, and the tests' Python packages from
# PyPI. Idempotent: only missing packages are installed. Runs apt through
# sudo when not root.
#
#   scripts/install-deps.sh          everything (tests need all of it)
#   scripts/install-deps.sh --demo   just enough to build and run the demo
set -euo pipefail

demo_pkgs=(
  build-essential cmake pkg-config
  libglib2.0-dev                    # the lag demo's GMainLoop (optional)
  python3                           # scripts/lag-report.py
)
test_pkgs=(
  build-essential cmake pkg-config
  libglib2.0-dev                    # lag watchdog: GLib adapter, lag demo
  python3                           # lag tests read reports with its json module
  libc6-dbg                         # tests: libc's static functions get names
  libdw-dev                         # stacksnap-symbolicate: file:line (required); libdwfl benchmark
  gobjc gobjc-aarch64-linux-gnu     # tests: Objective-C method names
  clang libclang-rt-14-dev          # async-frame test, sanitizers, libFuzzer
  lld llvm                          # check-darwin: ld64.lld, llvm-ar, llvm-nm, llvm-objdump (Debian's, not the Swift toolchain's); test_dwarf_lines: llvm-addr2line
  libunwind-dev                     # benchmarks: unw_backtrace
  g++ libabsl-dev                   # benchmarks: absl::GetStackTrace, absl::Symbolize (bench/peer_absl.cc)
  qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross  # arm64 suite
  git xz-utils perl strace          # audit tests: real programs under the preload; strace the oracle
  clang-format shellcheck python3-pyflakes  # scripts/lint.sh: C format, shell scripts, Python
)

pkgs=("${test_pkgs[@]}")
[[ "${1:-}" == "--demo" ]] && pkgs=("${demo_pkgs[@]}")

# Python packages (PyPI) the tests read files with, into the python3 that
# CMake finds on PATH: the Perfetto protos for the trace tests
# (tests/trace/test_trace_export.py, which fails without them); the Unicorn
# CPU emulator that runs the Apple build's machine code
# (tests/darwin/emulated/run_emulated.py, which skips without it).
py_pkgs=(perfetto protobuf 'unicorn>=2.1,<2.2')
py_check='import google.protobuf, perfetto.protos.perfetto.trace.perfetto_trace_pb2, unicorn'

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
as_root=()
[[ $(id -u) -ne 0 ]] && as_root=(sudo)
if ((${#missing[@]} == 0)); then
  echo "install-deps: every Debian package is installed"
else
  echo "install-deps: installing ${missing[*]}"
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ "${1:-}" != "--demo" ]]; then
  if python3 -c "$py_check" 2>/dev/null; then
    echo "install-deps: Python packages (${py_pkgs[*]}) are installed"
  else
    echo "install-deps: pip installing ${py_pkgs[*]}"
    if ! python3 -m pip --version >/dev/null 2>&1; then
      "${as_root[@]}" apt-get update -qq
      DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq \
        --no-install-recommends python3-pip >/dev/null
    fi
    # Debian's own python3 refuses pip outside a venv (PEP 668): then
    # the user's site-packages, which that python3 reads.
    python3 -m pip install -q "${py_pkgs[@]}" 2>/dev/null ||
      python3 -m pip install -q --user --break-system-packages "${py_pkgs[@]}"
    python3 -c "$py_check"
  fi
fi
echo "install-deps: done"
