/*
 * peer_absl.h — the C face of peer_absl.cc (abseil's stack trace and
 * symbolizer), for the benches. SNAP_BENCH_HAVE_ABSL says it is linked.
 */
#ifndef SNAP_BENCH_PEER_ABSL_H
#define SNAP_BENCH_PEER_ABSL_H

#include <stdbool.h>

/* absl::InitializeSymbolizer: once, before peer_absl_symbolize. */
void peer_absl_init(const char *argv0);
/* absl::GetStackTrace into pcs; frame 0 is the return address into the
   caller. Returns the frames written. */
int peer_absl_stacktrace(void **pcs, int max);
/* absl::Symbolize: the (demangled) name of the function holding pc. */
bool peer_absl_symbolize(const void *pc, char *out, int size);

#endif /* SNAP_BENCH_PEER_ABSL_H */
