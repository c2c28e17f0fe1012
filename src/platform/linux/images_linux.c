/*
 * images_linux.c — loaded images through dl_iterate_phdr.
 *
 * Every PT_LOAD with PF_X becomes one executable range. PT_GNU_EH_FRAME
 * gives the .eh_frame_hdr search table the CFI reader binary-searches; the
 * read-only PT_LOAD around it bounds every read the reader makes (the
 * .eh_frame section it points into sits in the same segment with every
 * linker we know; if not, the reader fails its bounds check and falls back
 * to frame records).
 *
 * The stamp mixes dlpi_adds and dlpi_subs: glibc bumps them on every dlopen
 * and dlclose, so one callback (we stop after the first image) tells
 * whether the table is stale. The load count alone can also be read
 * without the loader's lock, once found (below).
 *
 * Must not: run in the stopped window. dl_iterate_phdr takes the loader
 * lock, which a stopped thread may hold.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/linux/linux.h"

typedef struct enum_ctx {
  snap__plat_range_cb cb;
  void *ctx;
  const char *exe_path;
} enum_ctx_t;

static int each_image(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  enum_ctx_t *e = arg;
  const ElfW(Phdr) *eh = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
      eh = &info->dlpi_phdr[i];

  snap__plat_range_t r = {0};
  r.base = info->dlpi_addr;
  /* The main program has an empty name; name it by its file. */
  r.path =
      (info->dlpi_name && info->dlpi_name[0]) ? info->dlpi_name : e->exe_path;
  if (eh) {
    uintptr_t hdr_vaddr = eh->p_vaddr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
      const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
      if (ph->p_type == PT_LOAD && hdr_vaddr >= ph->p_vaddr &&
          hdr_vaddr < ph->p_vaddr + ph->p_memsz) {
        r.unwind_hdr = info->dlpi_addr + hdr_vaddr;
        r.unwind_lo = info->dlpi_addr + ph->p_vaddr;
        r.unwind_hi = r.unwind_lo + ph->p_memsz;
      }
    }
  }
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || ph->p_memsz == 0)
      continue;
    r.start = info->dlpi_addr + ph->p_vaddr;
    r.end = r.start + ph->p_memsz;
    e->cb(&r, e->ctx);
  }
  return 0;
}

/* Every dl_iterate_phdr of ours runs under this lock, which fork() holds
   (platform.h, Locks): glibc (2.36) makes its dl_load_lock new in a forked
   child but not dl_load_write_lock, which dl_iterate_phdr holds for its
   whole walk; a child forked while one of our threads walked would wait
   in its first dl_iterate_phdr forever. Held across a loader call, against
   the rule, because it cannot deadlock: dl_load_write_lock's other holders
   (dlopen and dlclose while they edit the list) call no code of anyone's,
   and our callbacks take no lock. Made on first use (constructors). */
static snap__lock_t g_walk;
static pthread_once_t g_walk_once = PTHREAD_ONCE_INIT;
static void walk_init(void) { (void)snap__plat_lock_init(&g_walk); }

static void walk_images(int (*fn)(struct dl_phdr_info *, size_t, void *),
                        void *arg) {
  pthread_once(&g_walk_once, walk_init);
  snap__plat_lock_lock(&g_walk);
  dl_iterate_phdr(fn, arg);
  snap__plat_lock_unlock(&g_walk);
}

int snap__plat_images_enumerate(snap__plat_range_cb cb, void *ctx) {
  char exe[4096];
  enum_ctx_t e = {cb, ctx, ""};
  if (snap__plat_main_executable(exe, sizeof exe))
    e.exe_path = exe;
  walk_images(each_image, &e);
  return SNAP_OK;
}

typedef struct counters {
  uint64_t adds, subs;
  bool ok;
} counters_t;

static int first_stamp(struct dl_phdr_info *info, size_t size, void *arg) {
  counters_t *c = arg;
  /* dlpi_adds/dlpi_subs exist when size says so (glibc >= 2.4). */
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
    *c = (counters_t){info->dlpi_adds, info->dlpi_subs, true};
  return 1; /* the counters are global: one image is enough */
}

/* ---- The load counter without the loader's lock ---------------------------
 *
 * dl_iterate_phdr is the only published way to read glibc's load counter
 * (dlpi_adds), and it takes the loader's write lock: not async-signal-safe,
 * so a capture may not call it. The counter itself is an unsigned long long
 * in the loader's _rtld_global (_dl_load_adds), bumped under that lock. So,
 * on the setup side, we find it: at the first locked read, every 8-aligned
 * word of _rtld_global equal to dlpi_adds is a candidate; at each later
 * locked read that sees the count move, candidates that did not move with
 * it drop out. The shortcut is on once exactly one candidate has followed
 * the count through a change, and goes off for good the first time a
 * locked read disagrees with it. No layout is assumed; where the search
 * fails (another libc, a static program) walks check each image instead.
 * A candidate is accepted only once it has followed the count across an
 * unload as well: a count of loaded objects (glibc keeps one per namespace)
 * rises with every load like the counter but falls back at each unload.
 * So the shortcut is learnt after a dlclose and a later dlopen; until then
 * walks check each image. */
#define MAX_CANDIDATES 16
static const uint64_t *g_cand[MAX_CANDIDATES];
static int g_ncand = -1;     /* -1: not searched; all three guarded by */
static uint64_t g_cand_adds; /* g_learning (dlpi_adds and dlpi_subs at */
static uint64_t g_cand_subs; /* the last check) */
/* Taken by trying only: a thread that finds it held skips this lesson (the
   next locked read gives another), so nothing waits on it, and a child
   forked mid-lesson merely never learns. */
static atomic_flag g_learning = ATOMIC_FLAG_INIT;
static const uint64_t *_Atomic g_adds; /* the found counter, or NULL */
static atomic_bool g_adds_off;

static uint64_t load_word(const uint64_t *w) {
  return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

static void search_counter(uint64_t adds, uint64_t subs) {
  void *rtld = dlsym(RTLD_DEFAULT, "_rtld_global");
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  g_ncand = 0;
  if (!rtld || !dladdr1(rtld, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
      (uintptr_t)rtld % sizeof(uint64_t))
    return;
  const uint64_t *words = rtld;
  for (size_t i = 0; i < sym->st_size / sizeof(uint64_t); i++)
    if (load_word(&words[i]) == adds) {
      if (g_ncand == MAX_CANDIDATES) {
        g_ncand = 0; /* too common a value to learn from: give up */
        return;
      }
      g_cand[g_ncand++] = &words[i];
    }
  g_cand_adds = adds;
  g_cand_subs = subs;
}

/* Called with each locked read; before/after: the shortcut's answer just
   before and after it (both valid only if have). */
static void learn_counter(const counters_t *c, bool have, uint64_t before,
                          uint64_t after) {
  if (!c->ok)
    return;
  if (atomic_load(&g_adds)) {
    if (have && before == after && before != c->adds)
      atomic_store(&g_adds_off, true); /* it is not the counter after all */
    return;
  }
  if (atomic_flag_test_and_set_explicit(&g_learning, memory_order_acquire))
    return;
  if (g_ncand < 0) {
    search_counter(c->adds, c->subs);
  } else if (g_ncand > 0 && c->adds != g_cand_adds) {
    int kept = 0;
    for (int i = 0; i < g_ncand; i++)
      if (load_word(g_cand[i]) == c->adds)
        g_cand[kept++] = g_cand[i];
    g_ncand = kept;
    /* Decided only across an unload too: a count of loaded objects rises
       with each load like the counter, but falls back at each unload. */
    if (kept == 1 && c->subs != g_cand_subs)
      atomic_store(&g_adds, g_cand[0]);
    g_cand_adds = c->adds;
  }
  atomic_flag_clear_explicit(&g_learning, memory_order_release);
}

bool snap__plat_images_loads_now(uint64_t *loads) {
  const uint64_t *w = atomic_load_explicit(&g_adds, memory_order_acquire);
  if (!w || atomic_load_explicit(&g_adds_off, memory_order_relaxed))
    return false;
  *loads = load_word(w);
  return true;
}

uint64_t snap__plat_images_stamp(void) {
  uint64_t before = 0, after = 0;
  bool have = snap__plat_images_loads_now(&before);
  counters_t c = {0, 0, false};
  walk_images(first_stamp, &c);
  have = have && snap__plat_images_loads_now(&after);
  learn_counter(&c, have, before, after);
  return c.ok ? c.adds * 0x9E3779B97F4A7C15ull + c.subs : 0;
}

#if defined(DLFO_STRUCT_HAS_EH_DBASE) /* glibc >= 2.35 */
/* _dl_find_object is glibc's lock-free, async-signal-safe lookup for
   unwinders: it copies, under a version check, the loader's own snapshot of
   the loaded objects, which dlclose updates before it unmaps anything. Only
   the copied values are used; the link map is never dereferenced (a
   concurrent dlclose may free it), its address only mixed into the
   identity, with the mapping's range and unwind header: a library loaded
   where another was gets a new identity unless all four repeat (two builds
   of one layout, the freed link map reused: then the image table's
   generation, moved by the next refresh, tells them apart). */
bool snap__plat_image_live(uintptr_t pc, snap__plat_live_t *out) {
  struct dl_find_object fo;
  if (_dl_find_object((void *)pc, &fo) != 0)
    return false;
  out->lo = (uintptr_t)fo.dlfo_map_start;
  out->hi = (uintptr_t)fo.dlfo_map_end;
  out->unwind_hdr = (uintptr_t)fo.dlfo_eh_frame;
  uint64_t h = 0x243f6a8885a308d3ull;
  uintptr_t parts[4] = {out->lo, out->hi, out->unwind_hdr,
                        (uintptr_t)fo.dlfo_link_map};
  for (int i = 0; i < 4; i++)
    h = (h ^ (uint64_t)parts[i]) * 0x9e3779b97f4a7c15ull;
  out->id = (h ^ h >> 29) | 1; /* never 0: 0 means "no check" */
  return out->hi > out->lo;
}
#else
/* Older glibc has no lock-free lookup: no live check, trust the table. */
bool snap__plat_image_live(uintptr_t pc, snap__plat_live_t *out) {
  (void)pc;
  *out = (snap__plat_live_t){0, UINTPTR_MAX, 0, 0};
  return true;
}
#endif

/* Asked through dl_iterate_phdr, under the loader's lock, so every record
   read is alive. Not the lock-free _dl_find_object: the link map it returns
   (and the file name in it) may be freed by a concurrent dlclose the moment
   it is returned. The symbol cache does not ask this on Linux: it judges
   its hits by the image table alone (symbols/cache.c). */
typedef struct holds_ctx {
  uintptr_t addr, base;
  const char *path;
  int found; /* 0 in no image, 1 same image, -1 another image */
} holds_ctx_t;

static int holds_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  holds_ctx_t *h = arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type != PT_LOAD || h->addr < lo || h->addr >= lo + ph->p_memsz)
      continue;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    h->found = h->path && info->dlpi_addr == h->base &&
                       (!name[0] || strcmp(name, h->path) == 0)
                   ? 1
                   : -1;
    return 1;
  }
  return 0;
}

bool snap__plat_image_holds(uintptr_t addr, uintptr_t base, const char *path) {
  holds_ctx_t h = {addr, base, path, 0};
  walk_images(holds_cb, &h);
  return h.found == 0 ? path == NULL : h.found == 1;
}

bool snap__plat_app_root(char *buf, size_t size) {
  if (!snap__plat_main_executable(buf, size))
    return false;
  char *slash = strrchr(buf, '/');
  if (!slash)
    return false;
  slash[1] = '\0';
  return true;
}

bool snap__plat_main_executable(char *buf, size_t size) {
  if (size < 2)
    return false;
  ssize_t n = readlink("/proc/self/exe", buf, size - 1);
  if (n <= 0 || (size_t)n >= size - 1)
    return false;
  buf[n] = '\0';
  return true;
}

/* Linux images carry no index of their own beyond .eh_frame, whose entries
   capture/cfi.c already reads: the walker asks those for function bounds. */
bool snap__plat_function_bounds(uintptr_t index, size_t index_size,
                                uintptr_t base, uintptr_t pc, uintptr_t *start,
                                uintptr_t *end) {
  (void)index, (void)index_size, (void)base, (void)pc, (void)start, (void)end;
  return false;
}
