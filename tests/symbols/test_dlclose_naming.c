/*
 * test_dlclose_naming.c — naming while another thread loads and unloads
 * libraries (issue 12, defect 1).
 *
 * One thread loads libsnap_churn_a.so, unloads it, loads libsnap_churn_b.so
 * (same layout, other names: the loader puts it where A was), unloads it,
 * and so on, publishing under a sequence count which library is loaded and
 * where its four functions are. The other thread names stacks through the
 * loaded library's functions — repeated ones (cache hits, the path that
 * used to read the loader's record of the library without its lock) and
 * fresh ones — and, whenever the library stayed loaded from before the
 * naming to after it, checks each name against nm's symbol table of that
 * library file. Under ASan a read of a freed loader record is a report and
 * a failure; a name served for the library that was unloaded is a failure
 * everywhere.
 *
 * Runs SNAP_CHURN_SECONDS (default 8; the build passes fewer under qemu).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "stacksnap.h"
#include "test_clock.h"

#ifndef SNAP_CHURN_SECONDS
#define SNAP_CHURN_SECONDS 8
#endif
#define NFN 4

typedef struct sym {
  uintptr_t off;
  char name[64];
} sym_t;

/* nm's view of each library: the offsets of churn_<tag>_f0..f3. */
static sym_t g_syms[2][NFN];
static const char *const g_paths[2] = {LIB_A, LIB_B};
static const char g_tags[2] = {'a', 'b'};

/* Published by the churn thread: odd while changing. */
static atomic_uint g_seq;
static atomic_int g_which = -1; /* -1: none loaded */
static _Atomic uintptr_t g_base;
static atomic_bool g_stop;

static void load_nm(int lib) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "nm --defined-only %s", g_paths[lib]);
  FILE *p = popen(cmd, "r");
  CHECK(p != NULL, "cannot run nm on %s", g_paths[lib]);
  char line[512];
  int found = 0;
  while (fgets(line, sizeof line, p)) {
    unsigned long long v;
    char type, name[256];
    if (sscanf(line, "%llx %c %255s", &v, &type, name) != 3)
      continue;
    for (int i = 0; i < NFN; i++) {
      char want[64];
      snprintf(want, sizeof want, "churn_%c_f%d", g_tags[lib], i);
      if (strcmp(name, want) == 0) {
        g_syms[lib][i].off = (uintptr_t)v;
        snprintf(g_syms[lib][i].name, sizeof g_syms[lib][i].name, "%.63s",
                 name);
        found++;
      }
    }
  }
  pclose(p);
  CHECK(found == NFN, "nm found %d of the %d functions in %s", found, NFN,
        g_paths[lib]);
}

static void *churn(void *arg) {
  (void)arg;
  unsigned long cycles = 0;
  for (int lib = 0; !atomic_load(&g_stop); lib ^= 1, cycles++) {
    atomic_fetch_add(&g_seq, 1); /* odd: changing */
    void *h = dlopen(g_paths[lib], RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "dlopen %s: %s", g_paths[lib], dlerror());
    char sym[64];
    snprintf(sym, sizeof sym, "churn_%c_f0", g_tags[lib]);
    uintptr_t f0 = (uintptr_t)dlsym(h, sym);
    CHECK(f0 != 0, "%s not found", sym);
    atomic_store(&g_base, f0 - g_syms[lib][0].off);
    atomic_store(&g_which, lib);
    atomic_fetch_add(&g_seq, 1); /* even: stable, lib loaded */
    for (int i = 0; i < 200 && !atomic_load(&g_stop); i++)
      sched_yield(); /* let the namer hit the cache a few times */
    atomic_fetch_add(&g_seq, 1);
    atomic_store(&g_which, -1);
    CHECK(dlclose(h) == 0, "dlclose %s", g_paths[lib]);
    atomic_fetch_add(&g_seq, 1);
  }
  printf("churn: %lu load/unload cycles\n", cycles);
  return NULL;
}

int main(void) {
  load_nm(0);
  load_nm(1);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, churn, NULL) == 0, "pthread_create");

  unsigned long named = 0, checked = 0, hits_before = 0;
  snap_symbol_cache_stats_t st = {.size = sizeof st};
  CHECK(snap_symbol_cache_stats(&st) == SNAP_OK, "snap_symbol_cache_stats");
  hits_before = st.hits;
  double end = mono_s() + SNAP_CHURN_SECONDS;
  for (unsigned long round = 0; mono_s() < end; round++) {
    unsigned s1 = atomic_load(&g_seq);
    int lib = atomic_load(&g_which);
    uintptr_t base = atomic_load(&g_base);
    if ((s1 & 1) || lib < 0) {
      sched_yield();
      continue;
    }
    /* Repeated: the same four return addresses every time (a cache hit
       after the first). Fresh: a rotation and a varying outer pc. */
    uintptr_t pcs[NFN + 1];
    int n = NFN;
    for (int i = 0; i < NFN; i++)
      pcs[i] = base + g_syms[lib][i].off + 9;
    if (round % 4 == 3) {
      uintptr_t first = pcs[0];
      memmove(pcs, pcs + 1, (NFN - 1) * sizeof *pcs);
      pcs[NFN - 1] = first;
      pcs[n++] = (uintptr_t)&main + 1 + round % 97;
    }
    const snap_stack_t *s = snap_symbolicate(pcs, n, 0);
    named++;
    /* Checked only if the library stayed loaded throughout. */
    if (atomic_load(&g_seq) == s1 && s) {
      for (int i = 0; i < NFN; i++) {
        const snap_frame_t *f = snap_stack_frame(s, i);
        uintptr_t off = pcs[i] - 1 - base;
        const char *want = NULL;
        for (int k = 0; k < NFN; k++)
          if (off >= g_syms[lib][k].off && off - g_syms[lib][k].off < 32)
            want = g_syms[lib][k].name;
        CHECK(want != NULL, "pc %#lx is in no function nm lists",
              (unsigned long)pcs[i]);
        if (!f || !f->symbol || strcmp(f->symbol, want) != 0) {
          fprintf(stderr, "round %lu frame %d: got %s, want %s (lib %c)\n",
                  round, i, f && f->symbol ? f->symbol : "(null)", want,
                  g_tags[lib]);
          CHECK(0, "a name of the library that was unloaded, or none (above)");
        }
      }
      checked++;
    }
    snap_stack_release(s);
  }
  atomic_store(&g_stop, true);
  pthread_join(t, NULL);
  CHECK(snap_symbol_cache_stats(&st) == SNAP_OK, "snap_symbol_cache_stats");
  printf("named %lu stacks, %lu checked against nm, %llu cache hits\n", named,
         checked, (unsigned long long)(st.hits - hits_before));
  CHECK(checked > 0, "no naming happened while a library stayed loaded");
  CHECK(st.hits > hits_before,
        "no cache hit: the repeated stacks were never served from the cache");
  return check_result("test_dlclose_naming");
}
