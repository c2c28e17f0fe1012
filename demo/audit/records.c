/*
 * records.c — the table of records: one per (call site, function,
 * resource, result), with its count, first and last time, and threads.
 *
 * The hot path: a repeated call is one capture (snap_capture_self), one
 * cache hit (snap_symbolicate hands back the same stack object for the
 * same pcs) and one probe of the key index, keyed by that object's
 * address with the function, result and resource. A key miss is a new
 * stack: its call site is found (the innermost app frame, sanitizer
 * interceptors and this library skipped; else the hooked function's
 * caller), the record of (call site, function, resource, result) looked
 * up or made, and a key added that points the stack at it. A key holds
 * a reference on its stack (a record without a key, on its own), so an
 * address never comes back meaning another stack.
 *
 * Owns: the records, the two indexes, the counters of calls.
 * Must not: do I/O (a new record is handed to the writer's queue), or
 * change errno. Records are read without the lock by the writers: every
 * field is set before the record is published (audit_nrecords, release),
 * and the moving ones are atomics.
 */
#include "audit.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#define KEY_SLOTS 16384 /* keys: at most half full */
#define MAX_KEYS (KEY_SLOTS / 2)
#define RECORD_SLOTS (2 * AUDIT_MAX_RECORDS)

audit_record_t audit_records[AUDIT_MAX_RECORDS];
_Atomic int audit_nrecords;
_Atomic uint64_t audit_calls, audit_calls_not_kept;

typedef struct key {
  const snap_stack_t *stack; /* a reference */
  uint32_t hash;             /* of the resource */
  int fn, result, record;
} key_t_;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static key_t_ g_keys[MAX_KEYS];
static int g_nkeys;
static int g_key_slots[KEY_SLOTS];       /* key + 1; 0 = empty */
static int g_record_slots[RECORD_SLOTS]; /* record + 1; 0 = empty */

static uint32_t hash_str(const char *s) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static size_t mix(uint64_t a, uint64_t b) {
  uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15u)) * 0xff51afd7ed558ccdu;
  return (size_t)(h ^ (h >> 29));
}

static size_t key_slot(const snap_stack_t *s, int fn, int result,
                       uint32_t hash) {
  return mix((uintptr_t)s, ((uint64_t)hash << 32) ^ (uint64_t)(fn << 20) ^
                               (uint64_t)(uint32_t)result) %
         KEY_SLOTS;
}

static size_t record_slot(uintptr_t site, int fn, int result, uint32_t hash) {
  return mix(site, ((uint64_t)hash << 32) ^ (uint64_t)(fn << 20) ^
                       (uint64_t)(uint32_t)result) %
         RECORD_SLOTS;
}

/* The path as passed is not part of the key: only what it named. */
static bool same_record(const audit_record_t *r, int fn, int result,
                        uint32_t hash, const char *resource) {
  return r->fn == fn && r->result == result && r->hash == hash &&
         strcmp(r->resource, resource) == 0;
}

static int key_find(const snap_stack_t *s, int fn, int result, uint32_t hash,
                    const char *resource) {
  for (size_t i = key_slot(s, fn, result, hash);; i = (i + 1) % KEY_SLOTS) {
    int k = g_key_slots[i] - 1;
    if (k < 0)
      return -1;
    const key_t_ *key = &g_keys[k];
    if (key->stack == s && key->fn == fn && key->result == result &&
        key->hash == hash &&
        same_record(&audit_records[key->record], fn, result, hash, resource))
      return key->record;
  }
}

/* Adds a key; takes the caller's reference on s (true), or leaves it to
   the caller (false: no room, this stack takes the slow path each time). */
static bool key_add(const snap_stack_t *s, int fn, int result, uint32_t hash,
                    int record) {
  if (g_nkeys == MAX_KEYS)
    return false;
  key_t_ *key = &g_keys[g_nkeys];
  key->stack = s;
  key->fn = fn;
  key->result = result;
  key->hash = hash;
  key->record = record;
  size_t i = key_slot(s, fn, result, hash);
  while (g_key_slots[i])
    i = (i + 1) % KEY_SLOTS;
  g_key_slots[i] = ++g_nkeys;
  return true;
}

static int record_find(uintptr_t site, int fn, int result, uint32_t hash,
                       const char *resource) {
  for (size_t i = record_slot(site, fn, result, hash);;
       i = (i + 1) % RECORD_SLOTS) {
    int k = g_record_slots[i] - 1;
    if (k < 0)
      return -1;
    if (audit_records[k].site_pc == site &&
        same_record(&audit_records[k], fn, result, hash, resource))
      return k;
  }
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

/* A new record for a key miss; -1 when the table is full or memory ran
   out. Borrows s: the caller's reference goes to the record's key, or to
   the record itself when no key could be added (see audit_record_call);
   either lives as long as the record. */
static int record_new(const snap_stack_t *s, int site, bool app, bool truncated,
                      int fn, int result, int result_errno, uint32_t hash,
                      const char *resource, const char *argument) {
  int id = atomic_load_explicit(&audit_nrecords, memory_order_relaxed);
  if (id == AUDIT_MAX_RECORDS)
    return -1;
  char *res = strdup(resource);
  char *arg = argument ? strdup(argument) : NULL;
  if (!res || (argument && !arg)) {
    free(res);
    free(arg);
    return -1;
  }
  audit_record_t *r = &audit_records[id];
  memset(r, 0, sizeof *r);
  r->stack = s;
  r->call_site = site;
  r->app = app;
  r->truncated = truncated;
  r->fn = (unsigned char)fn;
  r->result = result;
  r->result_errno = result_errno;
  r->site_pc = snap_stack_count(s) ? snap_stack_frame(s, site)->pc : 0;
  r->hash = hash;
  r->resource = res;
  r->argument = arg;
  size_t i = record_slot(r->site_pc, fn, result, hash);
  while (g_record_slots[i])
    i = (i + 1) % RECORD_SLOTS;
  g_record_slots[i] = id + 1;
  return id;
}

/* Counts one call on record r by the calling thread at now. */
static void count(audit_record_t *r, uint64_t now, int tid) {
  uint64_t c = atomic_load_explicit(&r->count, memory_order_relaxed);
  if (c == 0)
    atomic_store_explicit(&r->first_ns, now, memory_order_relaxed);
  atomic_store_explicit(&r->last_ns, now, memory_order_relaxed);
  int n = atomic_load_explicit(&r->nthreads, memory_order_relaxed);
  bool known = false;
  for (int i = 0; i < n && !known; i++)
    known = atomic_load_explicit(&r->tids[i], memory_order_relaxed) == tid;
  if (!known && n < AUDIT_MAX_THREADS) {
    atomic_store_explicit(&r->tids[n], tid, memory_order_relaxed);
    char name[16] = "";
    prctl(PR_GET_NAME, name, 0, 0, 0);
    memcpy(r->names[n], name, sizeof name);
    atomic_store_explicit(&r->nthreads, n + 1, memory_order_release);
  } else if (!known) {
    atomic_store_explicit(&r->threads_more, true, memory_order_relaxed);
  }
  /* Last: a writer that sees the new count sees the rest with it. */
  atomic_store_explicit(&r->count, c + 1, memory_order_release);
}

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
  int skip = 0;
  while (skip < n && pcs[skip] > audit_cfg.self_start &&
         pcs[skip] <= audit_cfg.self_end)
    skip++;
  int keep = n - skip;
  bool truncated = keep > AUDIT_MAX_FRAMES;
  if (truncated)
    keep = AUDIT_MAX_FRAMES;
  const snap_stack_t *s =
      keep >= 0 ? snap_symbolicate(pcs + skip, keep, 0) : NULL;
  /* The frames' view is built here, on the first snap_stack_frame, so the
     writers (a signal handler among them) only ever read it. */
  if (!s || (snap_stack_count(s) > 0 && !snap_stack_frame(s, 0))) {
    snap_stack_release(s);
    atomic_fetch_add_explicit(&audit_calls_not_kept, 1, memory_order_relaxed);
    errno = saved;
    return;
  }
  uint32_t hash = hash_str(resource);
  bool fresh = false, kept = false;
  pthread_mutex_lock(&g_lock);
  int id = key_find(s, fn, result, hash, resource);
  if (id < 0) {
    bool app;
    int site = call_site_of(s, &app);
    uintptr_t site_pc = snap_stack_count(s) ? snap_stack_frame(s, site)->pc : 0;
    id = record_find(site_pc, fn, result, hash, resource);
    if (id < 0) {
      id = record_new(s, site, app, truncated, fn, result, result_errno, hash,
                      resource, argument);
      fresh = id >= 0;
    }
    if (id >= 0)
      kept = key_add(s, fn, result, hash, id) || fresh;
  }
  if (id >= 0) {
    count(&audit_records[id], now, tid);
    if (fresh) /* published with its first count */
      atomic_store_explicit(&audit_nrecords, id + 1, memory_order_release);
  } else {
    atomic_fetch_add_explicit(&audit_calls_not_kept, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&g_lock);
  if (!kept)
    snap_stack_release(s);
  if (fresh)
    audit_writer_announce(id);
  errno = saved;
}

void audit_records_lock(void) { pthread_mutex_lock(&g_lock); }
void audit_records_unlock(void) { pthread_mutex_unlock(&g_lock); }

void audit_records_forget(void) {
  pthread_mutex_init(&g_lock, NULL);
  memset(g_key_slots, 0, sizeof g_key_slots);
  memset(g_record_slots, 0, sizeof g_record_slots);
  g_nkeys = 0;
  atomic_store(&audit_nrecords, 0);
  atomic_store(&audit_calls, 0);
  atomic_store(&audit_calls_not_kept, 0);
}
