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
 * The stamp is dlpi_adds + dlpi_subs: glibc bumps them on every dlopen and
 * dlclose, so one callback (we stop after the first image) tells whether
 * the table is stale.
 *
 * Must not: run in the stopped window. dl_iterate_phdr takes the loader
 * lock, which a stopped thread may hold.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/linux/linux.h"
#include "platform/posix/locks.h"

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

/* Every dl_iterate_phdr of ours passes the fork gate (posix/locks.h):
   glibc (2.36) makes its dl_load_lock new in a forked child but not
   dl_load_write_lock, which dl_iterate_phdr holds for its whole walk; a
   child forked while one of our threads walked would wait in its first
   dl_iterate_phdr forever. A gate, not a lock: the image stamp is read on
   every app-only capture, and threads naming at once must not queue. */
static void walk_images(int (*fn)(struct dl_phdr_info *, size_t, void *),
                        void *arg) {
  snap__fork_gate_enter();
  dl_iterate_phdr(fn, arg);
  snap__fork_gate_leave();
}

int snap__plat_images_enumerate(snap__plat_range_cb cb, void *ctx) {
  char exe[4096];
  enum_ctx_t e = {cb, ctx, ""};
  if (snap__plat_main_executable(exe, sizeof exe))
    e.exe_path = exe;
  walk_images(each_image, &e);
  return SNAP_OK;
}

static int first_stamp(struct dl_phdr_info *info, size_t size, void *arg) {
  uint64_t *stamp = arg;
  /* dlpi_adds/dlpi_subs exist when size says so (glibc >= 2.4). */
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
    *stamp = (uint64_t)info->dlpi_adds * 0x9E3779B97F4A7C15ull +
             (uint64_t)info->dlpi_subs;
  return 1; /* the counters are global: one image is enough */
}

uint64_t snap__plat_images_stamp(void) {
  uint64_t stamp = 0;
  walk_images(first_stamp, &stamp);
  return stamp;
}

#if defined(DLFO_STRUCT_HAS_EH_DBASE) /* glibc >= 2.35 */
/* _dl_find_object is glibc's lock-free lookup for unwinders: a binary
   search over a copy of the loaded objects that dlclose updates before it
   unmaps anything. Comparing the link map's base and name (not the link
   map's address: a library loaded after a dlclose can get the freed link
   map's memory back) tells "still the same image" apart from "another image
   now at the same place". The main program's link map has an empty name
   and cannot be unloaded: its base is enough. */
bool snap__plat_image_holds(uintptr_t addr, uintptr_t base, const char *path) {
  struct dl_find_object fo;
  if (_dl_find_object((void *)addr, &fo) != 0)
    return path == NULL; /* in no image now: right only if it was in none */
  const struct link_map *lm = fo.dlfo_link_map;
  if (!path || !lm || lm->l_addr != base)
    return false;
  return !lm->l_name || !lm->l_name[0] || strcmp(lm->l_name, path) == 0;
}
#else
/* Older glibc: the same question through dl_iterate_phdr, which takes the
   loader lock — correct, but it serialises threads on every cache hit. */
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
#endif

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
