// peer_absl.cc — abseil as a point of comparison for the benchmarks:
// absl::GetStackTrace (frame records on x86_64 and arm64) and
// absl::Symbolize (reads the ELF file with pread on each miss of its small
// cache), behind three C functions so the C benches can call them.
//
// Built and linked only when CMake finds abseil (Debian: libabsl-dev);
// without it the benches print "n/a" in the abseil columns. Must not: hold
// any logic of the benchmark itself (timing, checks): only the calls.
#include <stddef.h>

#include "absl/debugging/stacktrace.h"
#include "absl/debugging/symbolize.h"

extern "C" {
#include "peer_absl.h"
}

extern "C" void peer_absl_init(const char *argv0) {
  absl::InitializeSymbolizer(argv0);
}

// skip 0: abseil's frame 0 is then the return address into this wrapper's
// caller (the wrapper's own frame is GetStackTrace's caller, not a frame
// it reports), as with backtrace() called directly.
extern "C" __attribute__((noinline)) int peer_absl_stacktrace(void **pcs,
                                                               int max) {
  int n = absl::GetStackTrace(pcs, max, 0);
  __asm__ volatile("" ::: "memory"); // not a tail call: the frame is real
  return n;
}

extern "C" bool peer_absl_symbolize(const void *pc, char *out, int size) {
  return absl::Symbolize(pc, out, size);
}
