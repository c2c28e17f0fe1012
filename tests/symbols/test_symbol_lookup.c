/*
 * test_symbol_lookup.c — snap_symbol_lookup, one address named into the
 * caller's buffer, against oracles made outside it:
 *
 *  - 1 000 random addresses inside random functions of a library of
 *    50 000 generated functions (every third local): the name and start
 *    nm lists there, the load address dladdr gives; and the same answer,
 *    field by field, as snap_symbolicate's for that address
 *    (SNAP_SYMBOLICATE_EXACT_PC0) and snap_image_lookup's image;
 *  - four threads at once doing the same (for TSan and ASan);
 *  - a buffer too small: the name cut, NUL-terminated, nothing written
 *    past it, the whole length told; NULL and 0 ask for the length only;
 *  - refusals write nothing: out NULL, an unknown size, a NULL buffer
 *    with a size, unknown flags, an address in no image;
 *  - a library unloaded (dladdr agrees it is gone): its old address is in
 *    no image, not named from what was cached for it.
 * Demangled and mangled names are checked in test_demangle (c++filt).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "stacksnap.h"
#include "xorshift.h"

#ifndef ELF_BIG_LIB
#error "built by tests/symbols/elf.cmake"
#endif

#define PREFIX "snapbig_"
#define SAMPLES 1000

/* The generated functions as nm lists them: start and size by number. */
typedef struct func {
  uint64_t addr, size;
} func_t;

static func_t *g_funcs;
static int g_nfuncs;
static uintptr_t g_bias;

static void load_oracle(void) {
  FILE *f = fopen(ELF_BIG_NM, "r");
  CHECK(f != NULL, "oracle %s missing", ELF_BIG_NM);
  if (!f)
    return;
  g_funcs = calloc(60000, sizeof *g_funcs);
  char line[512], type, name[256];
  unsigned long long addr, size;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "%llx %llx %c %255s", &addr, &size, &type, name) == 4 &&
        (type == 'T' || type == 't') &&
        strncmp(name, PREFIX, strlen(PREFIX)) == 0) {
      int i = atoi(name + strlen(PREFIX));
      if (i >= 0 && i < 60000) {
        g_funcs[i] = (func_t){addr, size};
        g_nfuncs = i + 1 > g_nfuncs ? i + 1 : g_nfuncs;
      }
    }
  fclose(f);
  CHECK(g_nfuncs == 50000, "nm lists %d generated functions", g_nfuncs);
}

/* One random address inside function *fn, and its function. */
static uintptr_t pick(uint64_t *rng, int *fn) {
  int i;
  do
    i = (int)(snap_xorshift(rng) % (uint64_t)g_nfuncs);
  while (!g_funcs[i].size);
  *fn = i;
  return g_bias + (uintptr_t)g_funcs[i].addr +
         (uintptr_t)(snap_xorshift(rng) % g_funcs[i].size);
}

/* Whether addr's answer is function fn's, as nm says; prints why not. */
static bool named_right(uintptr_t addr, int fn, unsigned flags,
                        const char *who) {
  snap_symbol_info_t info = {.size = sizeof info};
  char name[64], want[64];
  snprintf(want, sizeof want, PREFIX "%d", fn);
  int rc = snap_symbol_lookup(addr, flags, &info, name, sizeof name);
  bool ok = rc == SNAP_OK && strcmp(name, want) == 0 &&
            info.symbol_len == strlen(want) &&
            info.symbol_addr == g_bias + (uintptr_t)g_funcs[fn].addr;
  if (!ok)
    fprintf(stderr, "  %s: %#lx: rc %d \"%s\" at %#lx, nm: %s at %#lx\n", who,
            (unsigned long)addr, rc, rc == SNAP_OK ? name : "",
            (unsigned long)info.symbol_addr, want,
            (unsigned long)(g_bias + g_funcs[fn].addr));
  return ok;
}

/* Against nm, and against the other public answers for the address. */
static void check_against_oracles(void) {
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  int right = 0, same = 0;
  for (int k = 0; k < SAMPLES; k++) {
    int fn;
    uintptr_t addr = pick(&rng, &fn);
    right += named_right(addr, fn, k % 2 ? SNAP_SYMBOLICATE_MANGLED : 0, "nm");

    snap_symbol_info_t info = {.size = sizeof info};
    char name[64];
    snap_image_info_t img = {.size = sizeof img};
    const snap_stack_t *s =
        snap_symbolicate(&addr, 1, SNAP_SYMBOLICATE_EXACT_PC0);
    const snap_frame_t *f = snap_stack_frame(s, 0);
    bool agree =
        snap_symbol_lookup(addr, 0, &info, name, sizeof name) == SNAP_OK &&
        snap_image_lookup(addr, &img) == SNAP_OK && f && f->symbol &&
        strcmp(f->symbol, name) == 0 && f->symbol_addr == info.symbol_addr &&
        f->image_base == info.image_base && img.base == info.image_base &&
        strcmp(f->image, info.image) == 0 && img.name == info.image &&
        img.path == info.image_path && f->in_app == info.in_app &&
        img.in_app == info.in_app;
    snap_stack_release(s);
    if (!agree)
      fprintf(stderr, "  %#lx: snap_symbolicate or snap_image_lookup differ\n",
              (unsigned long)addr);
    same += agree;
  }
  CHECK(right == SAMPLES, "%d of %d named as nm says", right, SAMPLES);
  CHECK(same == SAMPLES, "%d of %d answered as the other calls do", same,
        SAMPLES);
}

static void *worker(void *arg) {
  uint64_t rng = 0x1234567ull + (uintptr_t)arg;
  intptr_t wrong = 0;
  for (int k = 0; k < SAMPLES; k++) {
    int fn;
    uintptr_t addr = pick(&rng, &fn);
    wrong += !named_right(addr, fn, 0, "thread");
  }
  return (void *)wrong;
}

static void check_threads(void) {
  pthread_t t[4];
  for (intptr_t i = 0; i < 4; i++)
    CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0,
          "pthread_create");
  for (int i = 0; i < 4; i++) {
    void *wrong = NULL;
    pthread_join(t[i], &wrong);
    CHECK(wrong == NULL, "thread %d: %ld wrong", i, (long)(intptr_t)wrong);
  }
}

static void check_buffers(void) {
  uintptr_t addr = g_bias + (uintptr_t)g_funcs[12345].addr;
  const char *want = PREFIX "12345";
  snap_symbol_info_t info = {.size = sizeof info};
  char buf[16];
  for (size_t cap = 1; cap <= sizeof buf; cap++) {
    memset(buf, 'x', sizeof buf);
    CHECK_EQ(snap_symbol_lookup(addr, 0, &info, buf, cap), SNAP_OK);
    size_t keep = strlen(want) < cap ? strlen(want) : cap - 1;
    CHECK(strncmp(buf, want, keep) == 0 && buf[keep] == '\0',
          "buffer of %zu: \"%.*s\"", cap, (int)keep, buf);
    for (size_t i = cap; i < sizeof buf; i++)
      CHECK(buf[i] == 'x', "buffer of %zu: byte %zu written", cap, i);
    CHECK_EQ(info.symbol_len, strlen(want));
  }
  info = (snap_symbol_info_t){.size = sizeof info};
  CHECK_EQ(snap_symbol_lookup(addr, 0, &info, NULL, 0), SNAP_OK);
  CHECK_EQ(info.symbol_len, strlen(want));
  CHECK(info.symbol_addr == addr && info.image_path,
        "the length-only call fills the rest");
}

static bool untouched(const void *p, size_t n, unsigned char byte) {
  for (size_t i = 0; i < n; i++)
    if (((const unsigned char *)p)[i] != byte)
      return false;
  return true;
}

static void check_refusals(void) {
  uintptr_t addr = g_bias + (uintptr_t)g_funcs[7].addr;
  char buf[32];
  snap_symbol_info_t info;
  uint32_t sizes[] = {0, 4, sizeof info - 1, sizeof info + 8};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    memset(&info, 0xa5, sizeof info);
    memset(buf, 0xa5, sizeof buf);
    info.size = sizes[k];
    CHECK_EQ(snap_symbol_lookup(addr, 0, &info, buf, sizeof buf), SNAP_EINVAL);
    CHECK(untouched((char *)&info + 4, sizeof info - 4, 0xa5) &&
              untouched(buf, sizeof buf, 0xa5),
          "size %u refused, yet written", sizes[k]);
  }
  CHECK_EQ(snap_symbol_lookup(addr, 0, NULL, buf, sizeof buf), SNAP_EINVAL);
  struct {
    unsigned flags;
    char *buf;
    size_t size;
    uintptr_t addr;
  } bad[] = {{0, NULL, 8, addr},
             {SNAP_SYMBOLICATE_EXACT_PC0, buf, sizeof buf, addr},
             {SNAP_SYMBOLICATE_SOURCE_LINES, buf, sizeof buf, addr},
             {1u << 30, buf, sizeof buf, addr},
             {0, buf, sizeof buf, 0},
             {0, buf, sizeof buf, (uintptr_t)&info}}; /* the stack */
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    memset(&info, 0xa5, sizeof info);
    info.size = sizeof info;
    memset(buf, 0xa5, sizeof buf);
    CHECK_EQ(snap_symbol_lookup(bad[k].addr, bad[k].flags, &info, bad[k].buf,
                                bad[k].size),
             SNAP_EINVAL);
    CHECK(untouched((char *)&info + 4, sizeof info - 4, 0xa5) &&
              untouched(buf, sizeof buf, 0xa5),
          "refusal %zu wrote", k);
  }
}

static void check_unloaded(void) {
  void *h = dlopen(ELF_SMALL_LIB, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL, "dlopen %s: %s", ELF_SMALL_LIB, dlerror());
  if (!h)
    return;
  uintptr_t addr = (uintptr_t)dlsym(h, "snapsmall_1");
  CHECK(addr != 0, "snapsmall_1");
  snap_symbol_info_t info = {.size = sizeof info};
  char name[64];
  CHECK_EQ(snap_symbol_lookup(addr, 0, &info, name, sizeof name), SNAP_OK);
  CHECK(strcmp(name, "snapsmall_1") == 0, "loaded: \"%s\"", name);
  dlclose(h);
  Dl_info dl;
  CHECK(!dladdr((void *)addr, &dl), "dlclose left %s loaded", ELF_SMALL_LIB);
  memset(name, 'x', sizeof name);
  CHECK_EQ(snap_symbol_lookup(addr, 0, &info, name, sizeof name), SNAP_EINVAL);
  CHECK(name[0] == 'x', "an unloaded address was written a name");
}

int main(void) {
  load_oracle();
  void *h = dlopen(ELF_BIG_LIB, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL, "dlopen %s: %s", ELF_BIG_LIB, dlerror());
  void *one = h ? dlsym(h, PREFIX "1") : NULL;
  if (!one || g_nfuncs != 50000)
    return check_result("test_symbol_lookup");
  g_bias = (uintptr_t)one - (uintptr_t)g_funcs[1].addr;
  check_against_oracles();
  check_threads();
  check_buffers();
  check_refusals();
  check_unloaded();
  return check_result("test_symbol_lookup");
}
