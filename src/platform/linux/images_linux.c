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
 * The stamp is dlpi_adds and dlpi_subs: glibc bumps them on every dlopen
 * and dlclose, so one callback (we stop after the first image) tells
 * whether the table is stale. Adds in the high half, subs in the low: both
 * only grow, so a later stamp is never smaller (images.c keeps the newer
 * of two tables built at once by that).
 *
 * Identity (platform.h, snap__plat_image_ident), for the walker: glibc >=
 * 2.35 answers "which image holds this address" lock-free and
 * async-signal-safely with _dl_find_object, from a copy of the loaded
 * objects that dlclose updates before it unmaps anything. We keep a mix of
 * the values it copies out and never follow the link-map pointer among
 * them: a concurrent dlclose frees that record (the symbol cache once read
 * its l_name there: a use-after-free). Each range's identity, its build ID
 * (kept for reports named later, and hashed to tell a rebuilt library from
 * the one before) and its extent are taken inside dl_iterate_phdr's
 * callback, with the loader's lock held, so they belong to the image the
 * callback describes.
 *
 * Must not: run in the stopped window (but for snap__plat_image_ident).
 * dl_iterate_phdr takes the loader lock, which a stopped thread may hold.
 * Must not: dereference a link map outside that lock.
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

#if defined(DLFO_STRUCT_HAS_EH_DBASE) /* glibc >= 2.35 */
/* The values compared: where the image is mapped, where its unwind table
   is, and which link map (by address) describes it. Two different images
   agree in all of them only if the second reuses the first's address,
   size, table offset and freed link-map memory at once (docs/guarantees.md,
   "Images that come and go"). */
static uint64_t mix_ident(const struct dl_find_object *fo) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  const uintptr_t v[4] = {
      (uintptr_t)fo->dlfo_map_start, (uintptr_t)fo->dlfo_map_end,
      (uintptr_t)fo->dlfo_link_map, (uintptr_t)fo->dlfo_eh_frame};
  for (int i = 0; i < 4; i++) {
    h = (h ^ (uint64_t)v[i]) * 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
  }
  return h > SNAP__IDENT_UNKNOWN ? h : h + 2; /* never NONE or UNKNOWN */
}

void snap__plat_image_ident(uintptr_t addr, snap__plat_ident_t *out) {
  struct dl_find_object fo;
  if (_dl_find_object((void *)addr, &fo) != 0) {
    *out = (snap__plat_ident_t){0, 0, SNAP__IDENT_NONE, 0};
    return;
  }
  out->lo = (uintptr_t)fo.dlfo_map_start;
  out->hi = (uintptr_t)fo.dlfo_map_end;
  out->id = mix_ident(&fo);
  out->unwind_hdr = (uintptr_t)fo.dlfo_eh_frame;
}
#else
/* Older glibc has no lock-free lookup: the walker trusts the table as last
   refreshed (docs/guarantees.md, "Images that come and go"). */
void snap__plat_image_ident(uintptr_t addr, snap__plat_ident_t *out) {
  (void)addr;
  *out = (snap__plat_ident_t){0, 0, SNAP__IDENT_UNKNOWN, 0};
}
#endif

/* Whether [lo, hi) lies inside one readable PT_LOAD of the image: the
   loader maps nothing else, and a note outside it (a hostile or odd file)
   must not be read. */
static bool loaded(const struct dl_phdr_info *info, uintptr_t lo,
                   uintptr_t hi) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t s = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R) && lo >= s && hi >= lo &&
        hi - s <= ph->p_memsz)
      return true;
  }
  return false;
}

/* The image's GNU build ID note into r (build_id, build_id_len; nothing
   when it has none, or one longer than SNAP__BUILD_ID_MAX) and r->content,
   a hash of it. Read from the image's memory inside dl_iterate_phdr's
   callback: the image cannot be unmapped while the loader's lock is held;
   every read is inside a loaded segment and inside the note segment, sizes
   checked in uintptr_t (a 32-bit size field plus padding must not wrap). */
static void read_build_id(const struct dl_phdr_info *info,
                          snap__plat_range_t *r) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t p = info->dlpi_addr + ph->p_vaddr, end = p + ph->p_memsz;
    if (ph->p_type != PT_NOTE || end < p || !loaded(info, p, end))
      continue;
    while (end - p >= sizeof(ElfW(Nhdr))) {
      const ElfW(Nhdr) *n = (const void *)p;
      uintptr_t name = p + sizeof *n;
      uintptr_t namesz = ((uintptr_t)n->n_namesz + 3) & ~(uintptr_t)3;
      uintptr_t descsz = ((uintptr_t)n->n_descsz + 3) & ~(uintptr_t)3;
      if (namesz > end - name || descsz > end - name - namesz)
        break;
      uintptr_t desc = name + namesz;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
          memcmp((const void *)name, "GNU", 4) == 0) {
        const uint8_t *id = (const uint8_t *)desc;
        uint64_t h = 0xCBF29CE484222325ull; /* FNV-1a */
        for (uint32_t k = 0; k < n->n_descsz; k++)
          h = (h ^ id[k]) * 0x100000001B3ull;
        r->content = h;
        if (n->n_descsz > 0 && n->n_descsz <= SNAP__BUILD_ID_MAX) {
          memcpy(r->build_id, id, n->n_descsz);
          r->build_id_len = (uint8_t)n->n_descsz;
        }
        return;
      }
      p = desc + descsz;
    }
  }
}

/* The image's extent from its load bias: the end of its highest PT_LOAD. */
static uintptr_t image_size(const struct dl_phdr_info *info) {
  uintptr_t size = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && ph->p_vaddr + ph->p_memsz > size)
      size = ph->p_vaddr + ph->p_memsz;
  }
  return size;
}

void snap__plat_build_id_text(const uint8_t *id, size_t len, char *out,
                              size_t size) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  for (size_t i = 0; i < len && o + 2 < size; i++) {
    out[o++] = hex[id[i] >> 4];
    out[o++] = hex[id[i] & 15];
  }
  if (size)
    out[o] = '\0';
}

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
  read_build_id(info, &r);
  r.size = image_size(info);
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
    snap__plat_ident_t id;
    snap__plat_image_ident(r.start, &id); /* under the loader's lock */
    r.ident = id.id;
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
    *stamp = ((uint64_t)info->dlpi_adds << 32) + (uint32_t)info->dlpi_subs;
  return 1; /* the counters are global: one image is enough */
}

/* Why a symbol-cache hit asks this stamp, under the loader's lock (issue
   26): a hit must not serve names of an image that was unloaded, nor of
   whatever was loaded at its place,
   once the dlclose or dlopen has returned. glibc tells that exactly only
   through dl_iterate_phdr's load/unload counts (dlpi_adds, dlpi_subs),
   read under its loader lock: on every call that is one lock and unlock of
   a line all naming threads write, so hits from two threads do not scale
   (bench_symbols part 3). The lock-free alternative measured beside it
   ("identity hits", off by default): the thread's front serves a hit only
   if _dl_find_object (lock-free, ~6-10 ns an image) still names, for every
   image the names came from, the identity the table recorded under the
   lock (mapping, unwind table and loader-record address). That catches
   every unload and reload but one: a rebuilt library loaded again at the
   same place with the same layout whose loader record reuses the freed
   one's memory — likely for a plugin reloaded after a rebuild, since the
   record is the same size and malloc hands the same block back — has the
   same identity, and its old names would be served until a miss refreshes
   the table. tests/symbols/test_dlclose_naming.c's two libraries are
   exactly that case: run with identity hits on, 1.5 % of its checked
   stacks (259 k of 17.3 M) came back with the unloaded library's names.
   No lock-free answer closes that hole: glibc publishes no load/unload
   counter outside the lock (r_debug has only a state, not a count;
   _dl_find_object's version and the counts dl_iterate_phdr copies live in
   its private data), and the library's build ID, which would tell the two
   apart, is in memory a concurrent dlclose can unmap. So exact is the
   default, made as cheap as it can be (the fork gate a hit passes writes
   only the thread's own line: posix/lock_fork.c; a thread's front answers
   its repeated call sites without falling through to the shared table:
   cache_front.c), and identity hits stay a measured alternative
   (snap__symbolicate_set_identity_hits). */
uint64_t snap__plat_images_stamp(void) {
  uint64_t stamp = 0;
  walk_images(first_stamp, &stamp);
  return stamp;
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
