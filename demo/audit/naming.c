/*
 * naming.c — the records: one per (call site, function, resource,
 * result), each the group of slots (records.c) whose stacks lead to one
 * call site, and the first slot's stack, named.
 *
 * Naming allocates and locks (stacksnap's cache, its ELF reader), so it
 * runs on the helper thread (writer.c), or at exit when no helper was
 * ever started; never in a hook. A flush where naming is unsafe (an exec
 * or a fatal signal, which may come in a signal handler or a vfork
 * child; any write of a child made without fork handlers) writes each
 * slot not named yet as a raw record of its own: its pcs, each placed in
 * its image from stacksnap's lock-free image table, no symbols.
 *
 * Who files a slot is decided by one compare-and-swap on its record
 * field: the helper takes it from UNNAMED to NAMING, then to its record's
 * id; a flush takes UNNAMED or NAMING to RAW. A helper that loses (its
 * flush gave up waiting for it) drops its work, so no call is ever
 * counted in two records.
 *
 * Owns: the records, the helper's index of them by call site, the sums a
 * line carries, the calls dropped when no record could be made.
 * Must not: name anything in audit_raw_pending or audit_record_sum (both
 * run in signal handlers).
 */
#include "audit.h"

#include <string.h>

#include "images/images.h"

#define SLOT_DROPPED (-4) /* no record could be made: its calls not kept */
#define INDEX_SLOTS (2 * AUDIT_MAX_RECORDS)

audit_record_t audit_records[AUDIT_MAX_RECORDS];
_Atomic int audit_nrecords;
static int g_index[INDEX_SLOTS]; /* named record + 1; the namer's only */

static int claim_id(void) {
  int id = atomic_fetch_add(&audit_nrecords, 1);
  if (id >= AUDIT_MAX_RECORDS) {
    atomic_fetch_sub(&audit_nrecords, 1);
    return -1;
  }
  return id;
}

static uint64_t text_hash(const char *s) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static size_t index_at(uintptr_t site, const audit_slot_t *s) {
  uint64_t h = (site ^ text_hash(audit_slot_resource(s))) * 0x9e3779b97f4a7c15u;
  h ^= ((uint64_t)s->fn << 40) ^ (uint32_t)s->result;
  h *= 0xff51afd7ed558ccdu;
  return (size_t)((h ^ (h >> 29)) % INDEX_SLOTS);
}

/* The record of s's key at call site pc site; -1 if none. */
static int index_find(uintptr_t site, const audit_slot_t *s) {
  for (size_t i = index_at(site, s);; i = (i + 1) % INDEX_SLOTS) {
    int id = g_index[i] - 1;
    if (id < 0)
      return -1;
    const audit_record_t *r = &audit_records[id];
    const audit_slot_t *k = &audit_slots[r->slot];
    if (r->site_pc == site && k->fn == s->fn && k->result == s->result &&
        strcmp(audit_slot_resource(k), audit_slot_resource(s)) == 0)
      return id;
  }
}

static void index_add(int id) {
  const audit_record_t *r = &audit_records[id];
  size_t i = index_at(r->site_pc, &audit_slots[r->slot]);
  while (g_index[i])
    i = (i + 1) % INDEX_SLOTS;
  g_index[i] = id + 1;
}

static bool sanitizer_frame(const char *sym) {
  static const char *const k[] = {
      "__interceptor_", "___interceptor_", "__asan_", "__tsan_",
      "__ubsan_",       "__sanitizer_",    "__msan_", "__lsan_"};
  if (!sym)
    return false;
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (strncmp(sym, k[i], strlen(k[i])) == 0)
      return true;
  return false;
}

/* The call site of s: its innermost app frame that is neither this
   library's nor a sanitizer's interceptor; else its first frame. */
static int call_site_of(const snap_stack_t *s, bool *app) {
  int n = snap_stack_count(s);
  for (int i = 0; i < n; i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    if (f && f->in_app && f->image_base != audit_cfg.self_base &&
        !sanitizer_frame(f->symbol)) {
      *app = true;
      return i;
    }
  }
  *app = false;
  return 0;
}

static bool take(audit_slot_t *s, int from, int to) {
  return atomic_compare_exchange_strong(&s->record, &from, to);
}

/* Names slot i and files it; false when naming failed (no memory: the
   slot stays unnamed, and a flush writes it raw). */
static bool name_one(int i) {
  audit_slot_t *s = &audit_slots[i];
  if (!take(s, SLOT_UNNAMED, SLOT_NAMING))
    return true;
  const snap_stack_t *st = NULL;
  if (s->npcs > 0) {
    st = snap_symbolicate(audit_slot_pcs(s), s->npcs, 0);
    /* The frames' view is built here, on the first snap_stack_frame, so
       the writers (a signal handler among them) only ever read it. */
    if (!st || (snap_stack_count(st) > 0 && !snap_stack_frame(st, 0))) {
      snap_stack_release(st);
      take(s, SLOT_NAMING, SLOT_UNNAMED);
      return false;
    }
  }
  bool app = false;
  int site = st ? call_site_of(st, &app) : 0;
  uintptr_t site_pc =
      st && snap_stack_count(st) ? snap_stack_frame(st, site)->pc : 0;
  int id = index_find(site_pc, s);
  if (id >= 0) { /* another stack to a known call site */
    if (take(s, SLOT_NAMING, id)) {
      audit_record_t *r = &audit_records[id];
      atomic_store_explicit(&audit_slots[r->last].next, i,
                            memory_order_release);
      r->last = i;
    }
    snap_stack_release(st);
    return true;
  }
  id = claim_id();
  if (id < 0) {
    take(s, SLOT_NAMING, SLOT_DROPPED);
    snap_stack_release(st);
    return true;
  }
  audit_record_t *r = &audit_records[id];
  r->named = true;
  r->slot = i;
  r->stack = st;
  r->call_site = site;
  r->app = app;
  r->site_pc = site_pc;
  r->last = i;
  atomic_store(&r->written, 0);
  /* A flush that took the slot meanwhile owns it: this id stays a gap
     (never ready), and its stack is the record's to keep. */
  if (take(s, SLOT_NAMING, id)) {
    atomic_store_explicit(&r->ready, true, memory_order_release);
    index_add(id);
  }
  return true;
}

void audit_name_pending(void) {
  for (int i = 0; i < AUDIT_MAX_SLOTS; i++)
    if (audit_slot_ready(i) &&
        atomic_load(&audit_slots[i].record) == SLOT_UNNAMED)
      (void)name_one(i);
}

void audit_raw_pending(void) {
  const snap__images_t *t = snap__images_acquire();
  for (int i = 0; i < AUDIT_MAX_SLOTS; i++) {
    if (!audit_slot_ready(i))
      continue;
    audit_slot_t *s = &audit_slots[i];
    int state = atomic_load(&s->record);
    if ((state != SLOT_UNNAMED && state != SLOT_NAMING) ||
        !take(s, state, SLOT_RAW))
      continue;
    int id = claim_id();
    if (id < 0) {
      atomic_store(&s->record, SLOT_DROPPED);
      continue;
    }
    audit_record_t *r = &audit_records[id];
    r->named = false;
    r->slot = i;
    r->stack = NULL;
    r->call_site = 0;
    r->app = false;
    /* The call site by image alone: no symbols to skip interceptors by. */
    const uintptr_t *pcs = audit_slot_pcs(s);
    for (int f = 0; f < s->npcs; f++) {
      const snap__image_t *im = snap__images_find(t, pcs[f] - 1);
      if (im && im->in_app && im->base != audit_cfg.self_base) {
        r->call_site = f;
        r->app = true;
        break;
      }
    }
    r->site_pc = s->npcs ? pcs[r->call_site] : 0;
    r->last = i;
    atomic_store(&r->written, 0);
    atomic_store_explicit(&r->ready, true, memory_order_release);
    atomic_store(&s->record, id);
  }
  snap__images_release(t);
}

void audit_record_sum(int id, audit_sum_t *out) {
  memset(out, 0, sizeof *out);
  const audit_record_t *r = &audit_records[id];
  int steps = 0;
  for (int i = r->slot; i >= 0 && steps < AUDIT_MAX_SLOTS; steps++) {
    audit_slot_t *s = &audit_slots[i];
    out->count += atomic_load_explicit(&s->count, memory_order_acquire);
    uint64_t first = atomic_load_explicit(&s->first_ns, memory_order_relaxed);
    uint64_t last = atomic_load_explicit(&s->last_ns, memory_order_relaxed);
    if (first && (!out->first_ns || first < out->first_ns))
      out->first_ns = first;
    if (last > out->last_ns)
      out->last_ns = last;
    int claims = atomic_load_explicit(&s->thread_claims, memory_order_relaxed);
    if (claims > AUDIT_MAX_THREADS)
      out->threads_more = true;
    for (int t = 0; t < claims && t < AUDIT_MAX_THREADS; t++) {
      int tid = atomic_load_explicit(&s->tids[t], memory_order_acquire);
      bool known = tid == 0;
      for (int k = 0; k < out->nthreads && !known; k++)
        known = out->tids[k] == tid;
      if (known)
        continue;
      if (out->nthreads == AUDIT_MAX_THREADS) {
        out->threads_more = true;
        continue;
      }
      out->tids[out->nthreads] = tid;
      out->names[out->nthreads++] = s->names[t];
    }
    i = atomic_load_explicit(&s->next, memory_order_acquire);
  }
  if (out->first_ns > out->last_ns)
    out->first_ns = out->last_ns;
}

uint64_t audit_calls_dropped(void) {
  uint64_t n = 0;
  for (int i = 0; i < AUDIT_MAX_SLOTS; i++)
    if (audit_slot_ready(i) &&
        atomic_load(&audit_slots[i].record) == SLOT_DROPPED)
      n += atomic_load(&audit_slots[i].count);
  return n;
}

void audit_records_forget(void) {
  for (int i = 0; i < AUDIT_MAX_RECORDS; i++)
    atomic_store(&audit_records[i].ready, false);
  memset(g_index, 0, sizeof g_index);
  atomic_store(&audit_nrecords, 0);
}
