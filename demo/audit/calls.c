/*
 * calls.c — one hooked call, recorded: the caller's stack captured, our
 * own frames dropped, the call counted in its slot of the table
 * (records.c), and the writer woken when the slot is new (writer.c).
 *
 * Owns: audit_record_call, the hooks' one entry into the table. It sits
 * above both the table and the writer, so that neither calls the other's
 * way up (audit.h: the parts' order). Must not: allocate, lock, do I/O,
 * name a pc, or change errno: it runs wherever a hook runs (a signal
 * handler that interrupted malloc, a vfork child).
 */
#include "audit.h"

#include <errno.h>

void audit_record_call(int fn, const char *resource, const char *argument,
                       int result, int result_errno) {
  int saved = errno;
  uint64_t now = audit_now_ns();
  int tid = audit_gettid();
  atomic_fetch_add_explicit(&audit_calls, 1, memory_order_relaxed);

  /* Our own frames (the hook, this function, stacksnap's capture: all in
     this library) lead the pcs: drop them, so the stack starts at the
     hooked function's caller. */
  uintptr_t pcs[AUDIT_MAX_FRAMES + 16];
  int n = snap_capture_self(pcs, AUDIT_MAX_FRAMES + 16, 0, 0);
  if (n < 0)
    n = 0;
  int skip = 0;
  while (skip < n && pcs[skip] > audit_cfg.self_start &&
         pcs[skip] <= audit_cfg.self_end)
    skip++;
  int keep = n - skip;
  bool truncated = keep > AUDIT_MAX_FRAMES;
  if (truncated)
    keep = AUDIT_MAX_FRAMES;
  uint64_t h = audit_slot_key(pcs + skip, keep, fn, result, resource);
  bool fresh;
  int i = audit_slot_find_or_add(h, pcs + skip, keep, truncated, fn, result,
                                 result_errno, resource, argument, &fresh);
  if (i < 0) {
    atomic_fetch_add_explicit(&audit_calls_not_kept, 1, memory_order_relaxed);
  } else {
    audit_slot_count(&audit_slots[i], now, tid);
    if (fresh)
      audit_writer_announce(fn, pcs, n, n < AUDIT_MAX_FRAMES + 16);
  }
  errno = saved;
}
