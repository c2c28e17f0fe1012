/*
 * records.c — the table of calls: one slot per (stack, function,
 * resource, result), with its count, first and last time, and threads.
 * The hooks' hot path, and async-signal-safe: a hook may run in a signal
 * handler that interrupted malloc (or this very code), or in a vfork
 * child, so nothing here allocates, locks or names.
 *
 * A call (calls.c) is one capture (snap_capture_self: no allocation, no
 * lock), a
 * hash of its pcs with the function, result and resource, and a probe of
 * an open-addressing table of preallocated slots. A slot is claimed with a
 * compare-and-swap on its state (empty -> filling), filled (its pcs and
 * text copied into pools claimed with fetch-and-add), its first call
 * counted, then published (ready, release). A probe passes over a slot
 * being filled (it may be this thread's, interrupted by the signal whose
 * handler probes now): at worst one key gets two slots, which naming
 * (naming.c) files under one record. Counts, times and threads are
 * atomics. What cannot be kept (the table 7/8 full, a pool full) is
 * counted in audit_calls_not_kept, never dropped silently.
 *
 * Owns: the slots, the pools, the counters of calls. The call that
 * captures a stack and counts it here is calls.c's (it also wakes the
 * writer, which reads this table: the table stays below the writer).
 * Must not: allocate, lock, do I/O, name a pc, or change errno; call up
 * into the writer.
 */
#include "audit.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>

#define SLOT_LIMIT (AUDIT_MAX_SLOTS / 8 * 7) /* probes stay short */
#define PCS_POOL (256 * 1024)                /* 2 MiB of pcs */
#define TEXT_POOL (1024 * 1024)              /* resources and arguments */

enum { STATE_EMPTY, STATE_FILLING, STATE_READY };

audit_slot_t audit_slots[AUDIT_MAX_SLOTS];
static _Atomic unsigned char g_state[AUDIT_MAX_SLOTS];
static _Atomic int g_nslots; /* slots claimed (may pass SLOT_LIMIT) */
/* The pools: written here only, into ranges claimed and not yet
   published; read by the other parts through published slots. */
uintptr_t audit_pcs_pool[PCS_POOL];
char audit_text_pool[TEXT_POOL];
static _Atomic uint32_t g_pcs_used, g_text_used;
_Atomic uint64_t audit_calls, audit_calls_not_kept;

bool audit_slot_ready(int i) {
  return atomic_load_explicit(&g_state[i], memory_order_acquire) == STATE_READY;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdu;
}

/* The key's hash: the pcs in order (A B A B is not B A B A), then the
   function, result and resource. Of a deep stack, the count and the 16
   innermost and 8 outermost pcs: where stacks differ (a probe compares
   the whole stack anyway), at a fixed cost per call. */
#define HASH_INNER 16
#define HASH_OUTER 8
uint64_t audit_slot_key(const uintptr_t *pcs, int n, int fn, int result,
                        const char *resource) {
  uint64_t h = mix(1469598103934665603u, (uint64_t)n);
  for (int i = 0; i < n; i++) {
    if (i == HASH_INNER && n > HASH_INNER + HASH_OUTER)
      i = n - HASH_OUTER;
    h = mix(h, pcs[i]);
  }
  h = mix(h, ((uint64_t)(unsigned)fn << 32) | (uint32_t)result);
  size_t len = strlen(resource), i = 0; /* 8 bytes at a time */
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    memcpy(&w, resource + i, 8);
    h = mix(h, w);
  }
  uint64_t tail = len;
  memcpy(&tail, resource + i, len - i);
  return mix(h, tail) ^ (len << 1);
}

static bool same_key(const audit_slot_t *s, uint64_t h, const uintptr_t *pcs,
                     int n, int fn, int result, const char *resource) {
  return s->hash == h && s->npcs == n && s->fn == fn && s->result == result &&
         memcmp(audit_slot_pcs(s), pcs, (size_t)n * sizeof *pcs) == 0 &&
         strcmp(audit_slot_resource(s), resource) == 0;
}

/* A range of n units of a pool of cap, or UINT32_MAX when it is full. */
static uint32_t claim(_Atomic uint32_t *used, uint32_t n, uint32_t cap) {
  uint32_t at = atomic_fetch_add_explicit(used, n, memory_order_relaxed);
  if (at > cap || n > cap - at) {
    atomic_fetch_sub_explicit(used, n, memory_order_relaxed);
    return UINT32_MAX;
  }
  return at;
}

static uint32_t copy_text(const char *s) {
  size_t len = strlen(s) + 1;
  uint32_t at = len < TEXT_POOL ? claim(&g_text_used, (uint32_t)len, TEXT_POOL)
                                : UINT32_MAX;
  if (at != UINT32_MAX)
    memcpy(audit_text_pool + at, s, len);
  return at;
}

/* Counts one call on slot s by the calling thread at now. The thread is
   named once per slot: an entry is claimed, written, then its tid stored
   (release), so a writer reads a whole entry or skips it. */
void audit_slot_count(audit_slot_t *s, uint64_t now, int tid) {
  /* Plain loads first: a repeated call takes no locked instruction but
     the count's. Two threads may store last out of order by a moment; the
     writers keep first <= last. */
  uint64_t first = 0;
  if (atomic_load_explicit(&s->first_ns, memory_order_relaxed) == 0)
    atomic_compare_exchange_strong_explicit(
        &s->first_ns, &first, now, memory_order_relaxed, memory_order_relaxed);
  if (now > atomic_load_explicit(&s->last_ns, memory_order_relaxed))
    atomic_store_explicit(&s->last_ns, now, memory_order_relaxed);
  int n = atomic_load_explicit(&s->thread_claims, memory_order_acquire);
  bool known = false;
  for (int i = 0; i < n && i < AUDIT_MAX_THREADS && !known; i++)
    known = atomic_load_explicit(&s->tids[i], memory_order_relaxed) == tid;
  if (!known && n >= AUDIT_MAX_THREADS) {
    /* One claim past the last entry says "more"; no further count (a
       ninth thread's every call would add one). */
    int full = AUDIT_MAX_THREADS;
    atomic_compare_exchange_strong_explicit(
        &s->thread_claims, &full, AUDIT_MAX_THREADS + 1, memory_order_relaxed,
        memory_order_relaxed);
  } else if (!known) {
    int i =
        atomic_fetch_add_explicit(&s->thread_claims, 1, memory_order_relaxed);
    if (i < AUDIT_MAX_THREADS) {
      char name[16] = "";
      prctl(PR_GET_NAME, name, 0, 0, 0); /* a system call */
      memcpy(s->names[i], name, sizeof name);
      atomic_store_explicit(&s->tids[i], tid, memory_order_release);
    }
  }
  /* Last: a writer that sees the new count sees the rest with it. */
  atomic_fetch_add_explicit(&s->count, 1, memory_order_release);
}

/* Finds the slot of the key or claims and fills one; its index, or -1
   when none could be had. fresh: the slot is new. */
int audit_slot_find_or_add(uint64_t h, const uintptr_t *pcs, int n,
                           bool truncated, int fn, int result, int result_errno,
                           const char *resource, const char *argument,
                           bool *fresh) {
  *fresh = false;
  size_t i = (size_t)(h % AUDIT_MAX_SLOTS);
  size_t probes = 0;
  for (; probes < AUDIT_MAX_SLOTS; probes++, i = (i + 1) % AUDIT_MAX_SLOTS) {
    int st = atomic_load_explicit(&g_state[i], memory_order_acquire);
    if (st == STATE_EMPTY)
      break;
    if (st == STATE_READY &&
        same_key(&audit_slots[i], h, pcs, n, fn, result, resource))
      return (int)i;
  }
  if (probes == AUDIT_MAX_SLOTS)
    return -1;
  /* Not there: a new slot, its pools claimed before it is. */
  if (atomic_fetch_add_explicit(&g_nslots, 1, memory_order_relaxed) >=
      SLOT_LIMIT)
    return -1;
  uint32_t at = claim(&g_pcs_used, (uint32_t)(n > 0 ? n : 1), PCS_POOL);
  uint32_t res = at != UINT32_MAX ? copy_text(resource) : UINT32_MAX;
  uint32_t arg =
      argument && res != UINT32_MAX ? copy_text(argument) : UINT32_MAX;
  if (res == UINT32_MAX || (argument && arg == UINT32_MAX))
    return -1; /* what was claimed stays unused: the pools only grow */
  memcpy(audit_pcs_pool + at, pcs, (size_t)n * sizeof *pcs);
  for (; probes < AUDIT_MAX_SLOTS; probes++, i = (i + 1) % AUDIT_MAX_SLOTS) {
    unsigned char empty = STATE_EMPTY;
    if (!atomic_compare_exchange_strong_explicit(
            &g_state[i], &empty, STATE_FILLING, memory_order_acq_rel,
            memory_order_acquire)) {
      /* Taken meanwhile: by this very key, maybe. */
      if (empty == STATE_READY &&
          same_key(&audit_slots[i], h, pcs, n, fn, result, resource))
        return (int)i;
      continue;
    }
    audit_slot_t *s = &audit_slots[i];
    s->hash = h;
    s->pcs = at;
    s->resource = res;
    s->argument = arg;
    s->npcs = (uint16_t)n;
    s->fn = (unsigned char)fn;
    s->truncated = truncated;
    s->result = result;
    s->result_errno = result_errno;
    atomic_store_explicit(&s->count, 0, memory_order_relaxed);
    atomic_store_explicit(&s->first_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&s->last_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&s->thread_claims, 0, memory_order_relaxed);
    for (int t = 0; t < AUDIT_MAX_THREADS; t++)
      atomic_store_explicit(&s->tids[t], 0, memory_order_relaxed);
    atomic_store_explicit(&s->record, SLOT_UNNAMED, memory_order_relaxed);
    atomic_store_explicit(&s->next, -1, memory_order_relaxed);
    atomic_store_explicit(&g_state[i], STATE_READY, memory_order_release);
    *fresh = true;
    return (int)i;
  }
  return -1;
}

void audit_slots_forget(void) {
  for (int i = 0; i < AUDIT_MAX_SLOTS; i++)
    atomic_store_explicit(&g_state[i], STATE_EMPTY, memory_order_relaxed);
  atomic_store(&g_nslots, 0);
  atomic_store(&g_pcs_used, 0);
  atomic_store(&g_text_used, 0);
  atomic_store(&audit_calls, 0);
  atomic_store(&audit_calls_not_kept, 0);
}
