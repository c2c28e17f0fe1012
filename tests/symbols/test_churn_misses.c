/*
 * test_churn_misses.c — naming from several threads while another loads
 * and unloads libraries never leaves a pc of a library that stayed loaded
 * unnamed (issue 26, goal 7: 1-2 such pcs in millions, image unknown).
 *
 * The churn thread loads libsnap_churn_a.so, unloads it, loads _b.so (the
 * loader puts it where A was), and so on, publishing under a sequence
 * count which library is loaded and where its four functions are (dlsym:
 * the loader's own answer). NAMERS threads name stacks through the loaded
 * library — fresh ones mostly (a miss names, and every thread that sees
 * the loader's stamp move rebuilds the image table: builds run at once),
 * a repeated one now and then (a hit) — and, when the library stayed
 * loaded from before the naming to after it, count each frame named as in
 * no image or with no symbol (a miss) and each frame given another name (a
 * wrong name). Both must be 0. Each round also names one of the four pcs
 * alone (snap_symbol_lookup), with the same two counts, both 0. Bounded:
 * SNAP_CHURN_SECONDS (default 3).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

#ifndef SNAP_CHURN_SECONDS
#define SNAP_CHURN_SECONDS 3
#endif
#define NFN 4
#define NAMERS 3

static const char *const g_paths[2] = {LIB_A, LIB_B};
static const char g_tags[2] = {'a', 'b'};

/* Published by the churn thread: odd while changing. */
static atomic_uint g_seq;
static atomic_int g_which = -1;
static _Atomic uintptr_t g_fn[NFN];
static atomic_bool g_stop;
static atomic_ulong g_checked, g_frames, g_misses, g_wrong;
static atomic_ulong g_lookups, g_lookup_misses, g_lookup_wrong;

static void *churn(void *arg) {
  (void)arg;
  unsigned long cycles = 0;
  for (int lib = 0; !atomic_load(&g_stop); lib ^= 1, cycles++) {
    atomic_fetch_add(&g_seq, 1); /* odd: changing */
    void *h = dlopen(g_paths[lib], RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "dlopen %s: %s", g_paths[lib], dlerror());
    if (!h)
      break;
    for (int i = 0; i < NFN; i++) {
      char sym[64];
      snprintf(sym, sizeof sym, "churn_%c_f%d", g_tags[lib], i);
      atomic_store(&g_fn[i], (uintptr_t)dlsym(h, sym));
    }
    atomic_store(&g_which, lib);
    atomic_fetch_add(&g_seq, 1); /* even: stable, lib loaded */
    for (int i = 0; i < 50 && !atomic_load(&g_stop); i++)
      sched_yield(); /* let the namers name through it */
    atomic_fetch_add(&g_seq, 1);
    atomic_store(&g_which, -1);
    CHECK(dlclose(h) == 0, "dlclose %s", g_paths[lib]);
    atomic_fetch_add(&g_seq, 1);
  }
  printf("churn: %lu load/unload cycles\n", cycles);
  return NULL;
}

static void *namer(void *arg) {
  unsigned long round = (unsigned long)(uintptr_t)arg * 1000003u;
  while (!atomic_load(&g_stop)) {
    round++;
    unsigned s1 = atomic_load(&g_seq);
    int lib = atomic_load(&g_which);
    if ((s1 & 1) || lib < 0) {
      sched_yield();
      continue;
    }
    uintptr_t fn[NFN], pcs[NFN + 1];
    for (int i = 0; i < NFN; i++)
      fn[i] = atomic_load(&g_fn[i]);
    if (atomic_load(&g_seq) != s1)
      continue;
    for (int i = 0; i < NFN; i++)
      pcs[i] = fn[i] + 9;
    /* Mostly fresh (a miss: named now), a repeated stack one time in 8. */
    pcs[NFN] = round % 8 ? (uintptr_t)&namer + 1 + round % 4093
                         : (uintptr_t)&namer + 1;
    const snap_stack_t *s = snap_symbolicate(pcs, NFN + 1, 0);
    /* And one of its pcs alone, through the one-address call. */
    int one = (int)(round % NFN);
    snap_symbol_info_t info = {.size = sizeof info};
    char name[64];
    int one_rc = snap_symbol_lookup(pcs[one], 0, &info, name, sizeof name);
    if (atomic_load(&g_seq) == s1) { /* the library stayed loaded */
      char want_one[32];
      snprintf(want_one, sizeof want_one, "churn_%c_f%d", g_tags[lib], one);
      atomic_fetch_add(&g_lookups, 1);
      if (one_rc != SNAP_OK || !name[0]) {
        if (atomic_fetch_add(&g_lookup_misses, 1) < 5)
          fprintf(stderr, "lookup miss: pc %#lx (%s): rc %d, \"%s\"\n",
                  (unsigned long)pcs[one], want_one, one_rc,
                  one_rc == SNAP_OK ? name : "");
      } else if (strcmp(name, want_one) != 0) {
        if (atomic_fetch_add(&g_lookup_wrong, 1) < 5)
          fprintf(stderr, "lookup wrong: pc %#lx named %s, want %s\n",
                  (unsigned long)pcs[one], name, want_one);
      }
      atomic_fetch_add(&g_checked, 1);
      for (int i = 0; i < NFN; i++) {
        const snap_frame_t *f = snap_stack_frame(s, i);
        char want[32];
        snprintf(want, sizeof want, "churn_%c_f%d", g_tags[lib], i);
        atomic_fetch_add(&g_frames, 1);
        if (!f || !f->symbol || !f->image_path) {
          if (atomic_fetch_add(&g_misses, 1) < 5)
            fprintf(stderr, "miss: pc %#lx (%s) named %s in %s\n",
                    (unsigned long)pcs[i], want,
                    f && f->symbol ? f->symbol : "(null)",
                    f && f->image_path ? f->image_path : "(no image)");
        } else if (strcmp(f->symbol, want) != 0) {
          if (atomic_fetch_add(&g_wrong, 1) < 5)
            fprintf(stderr, "wrong: pc %#lx named %s, want %s\n",
                    (unsigned long)pcs[i], f->symbol, want);
        }
      }
    }
    snap_stack_release(s);
  }
  return NULL;
}

int main(void) {
  pthread_t c, n[NAMERS];
  CHECK_EQ(pthread_create(&c, NULL, churn, NULL), 0);
  for (int i = 0; i < NAMERS; i++)
    CHECK_EQ(pthread_create(&n[i], NULL, namer, (void *)(uintptr_t)i), 0);
  double end = mono_s() + SNAP_CHURN_SECONDS;
  while (mono_s() < end) {
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  atomic_store(&g_stop, true);
  for (int i = 0; i < NAMERS; i++)
    pthread_join(n[i], NULL);
  pthread_join(c, NULL);
  printf("%lu stacks checked (%lu frames): %lu misses, %lu wrong names\n",
         atomic_load(&g_checked), atomic_load(&g_frames),
         atomic_load(&g_misses), atomic_load(&g_wrong));
  CHECK(atomic_load(&g_checked) > 0,
        "no naming happened while a library stayed loaded");
  printf("%lu addresses looked up alone: %lu misses, %lu wrong names\n",
         atomic_load(&g_lookups), atomic_load(&g_lookup_misses),
         atomic_load(&g_lookup_wrong));
  CHECK_EQ(atomic_load(&g_misses), 0ul);
  CHECK_EQ(atomic_load(&g_wrong), 0ul);
  CHECK(atomic_load(&g_lookups) > 0, "no lookup while a library stayed loaded");
  CHECK_EQ(atomic_load(&g_lookup_misses), 0ul);
  CHECK_EQ(atomic_load(&g_lookup_wrong), 0ul);
  return check_result("test_churn_misses");
}
