/*
 * elf_symbols.c — the Linux system symbol provider: snap__plat_symbolize.
 *
 * Owns: what naming needs of the files behind the images (read into memory
 * we own, parsed, then only the names and PLT tables kept), and a small
 * cache of parsed images. Reading a file is elf_file_copy.c's, the search
 * for separate debug files elf_debug_file.c's (elf_image.h holds what
 * they share), the parsing elf_reader.c's; Objective-C method names come
 * from objc_names.c.
 *
 * Per image, on first use:
 *  1. read the file (open + fstat + pread: see elf_file_copy.c). The vdso has
 *     no file: dl_iterate_phdr names it "linux-vdso.so.1"; its ELF image is
 *     copied out of memory (getauxval(AT_SYSINFO_EHDR)) through the safe
 *     read, since the kernel's page is the only copy;
 *  2. parse it; if it has no .symtab (a stripped system library), look for
 *     its debug file as gdb does: /usr/lib/debug/.build-id/xx/yyyy.debug
 *     (accepted only if its own build-id matches), then the .gnu_debuglink
 *     name in <dir>/, <dir>/.debug/ and /usr/lib/debug/<dir>/ (accepted if
 *     the link's CRC32 of the whole file matches, or both build-ids do).
 *     A debug file names the functions; the file itself still decodes its
 *     PLT (a debug file's .plt is NOBITS);
 *  3. lazily (snap__elf_parse_lazy): the first SCAN_PCS lookups in the
 *     image scan its symbol table, one pass each, and a process that
 *     names a stack or two in a big library never sorts it (60 k
 *     functions: a first lookup in ~2 ms of CPU, not ~10). A .symtab is
 *     not copied for them: each scan reads it from the file through a
 *     64 KiB window (syms_window), if the file is still the one read
 *     (else the scan names nothing). The lookup
 *     after those, or a batch of more pcs, sorts the functions
 *     (snap__elf_index: index_image), then detaches the parses from the
 *     file copies (snap__elf_detach: the function names and the PLT's
 *     tables copied into blocks of their own) and frees the copies.
 * Addresses: a symbol's file vaddr + image_base (the load bias), which is
 * right for PIE, shared objects and non-PIE executables (bias 0).
 *
 * Cache: up to MAX_IMAGES images keyed by path (symbols are file offsets:
 * where the image is loaded is the query's business), least recently used
 * dropped and freed; an image that fails to load is cached too, so a bad
 * file is opened once, not once per pc. One lock guards it, held while the
 * ELF answers are looked up and copied out of the copies — never while
 * calling anything that may take the loader's lock, nor the callbacks (see
 * snap__plat_symbolize).
 *
 * Must not: run in the stopped window (it opens files, locks, allocates),
 * or keep a file mapped (design.md rule 6: a file cut on disk while mapped
 * faults on access). The cost: the parts of a file read (elf_file_copy.c's
 * read_parts) until it is sorted; then, per cached image, its function names
 * and sorted symbols (and its PLT's tables). A file rewritten after it was
 * indexed keeps its old names until its entry is dropped; rewritten between
 * its first lookup and its indexing (while its scans still read .symtab from
 * it), it names nothing until then: a name from the new file's table would
 * be a guess for the old code (tests/symbols/test_elf_rewrite.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/linux/elf_image.h"
#include "platform/linux/elf_reader.h"
#include "platform/linux/linux.h"
#include "platform/linux/objc_names.h"

#include <elf.h>

/* Lookups in an image answered by scanning its symbol table before it is
   sorted: one scan costs ~1/40 of a sort, and a process that names one
   stack in a library (a crash report) never sorts it. */
#define SCAN_PCS 4
/* Images kept parsed. A process rarely names frames from more than a few
   dozen images; each entry holds its functions' names and a symbol array
   of ~24 bytes a function (the file copy only while it is parsed). */
#define MAX_IMAGES 32
/* Guards g_images and g_clock. Made on first use (platform.h,
   snap__lazy_lock_t). */
static snap__lazy_lock_t g_lock;
static image_t g_images[MAX_IMAGES];
static uint64_t g_clock;

/* ---- The image cache --------------------------------------------------------
 */

static void drop(image_t *img) {
  if (img->has_dbg)
    snap__elf_free(&img->dbg);
  if (img->ok)
    snap__elf_free(&img->elf);
  snap__elf_unmap(&img->debug);
  snap__elf_unmap(&img->file);
  free(img->path);
  memset(img, 0, sizeof *img);
}

/* Where a scan of an image's unread symbol table reads it, a window at a
   time (guarded by g_lock, as the scans are): memory the CPU's caches
   keep, where copying the whole table into fresh pages was most of a
   first lookup (elf_file_copy.c). */
static uint8_t g_window[64 << 10];

/* snap__elf_t.syms_window for an image whose .symtab was left in its file:
   opened on the first window of a scan (and only if it is still the file
   read at first: snap__elf_reopen), closed after the lookup (done_scan). */
static const uint8_t *syms_window(void *ctx, uint64_t off, uint64_t want,
                                  uint64_t *got) {
  image_t *img = ctx;
  *got = 0;
  if (!img->syms_open && !(img->syms_open = snap__elf_reopen(
                               img->path, &img->file, &img->syms_fd)))
    return NULL;
  uint64_t n = want < sizeof g_window ? want : sizeof g_window;
  *got = snap__elf_read(img->syms_fd, g_window, off, n - n % sizeof(Elf64_Sym));
  return g_window;
}

static void done_scan(image_t *img) {
  if (img->syms_open)
    close(img->syms_fd);
  img->syms_open = false;
}

static void load(image_t *img) {
  bool vdso = snap__elf_is_vdso_name(img->path);
  bool mapped = vdso ? snap__elf_copy_vdso(&img->file)
                     : snap__elf_map_file(img->path, &img->file, true);
  if (!mapped)
    return;
  if (snap__elf_parse_lazy(&img->elf, img->file.addr, img->file.size) != 0) {
    snap__elf_unmap(&img->file);
    return;
  }
  img->ok = true;
  /* The table the scans read is the .symtab left in the file. (Without
     one, .dynsym is scanned: it was read.) */
  if (img->file.unread_len && img->elf.from_symtab) {
    img->elf.syms_window = syms_window;
    img->elf.syms_ctx = img;
  }
  if (!img->elf.from_symtab && !img->file.vdso)
    snap__elf_find_debug_file(img);
}

/* Sorts the image's functions (snap__elf_index), then detaches the parses
   from the file copies (snap__elf_detach) and frees the copies. Until
   then its lookups scan the symbol table. An index that cannot be built
   (out of memory) leaves the image scanning, copies kept. */
static void index_image(image_t *img) {
  snap__elf_t *names = img->has_dbg ? &img->dbg : &img->elf;
  if (!img->ok || !names->lazy)
    return;
  /* The table is sorted in the buffer: read it in now (a file changed
     since leaves the image scanning, and its scans naming nothing). */
  if (names->syms_window) {
    if (!snap__elf_fill_unread(img->path, &img->file))
      return;
    names->syms_window = NULL;
  }
  if (snap__elf_index(names) != 0)
    return;
  if (img->has_dbg) {
    if (snap__elf_detach(&img->dbg) == 0)
      snap__elf_unmap(&img->debug);
    img->elf.lazy = false; /* its own table is never searched: only its PLT */
  }
  if (snap__elf_detach(&img->elf) == 0)
    snap__elf_unmap(&img->file);
}

/* Frames of one image come in runs, and so do calls: the image the last
   call used is checked before the walk over every entry. */
static int g_last;

/* Whether img is path's: the same pointer as last asked, else the same
   string; a match remembers path's pointer for the next frame. */
static bool is_for(image_t *img, const char *path) {
  if (!img->path)
    return false;
  if (img->asked != path && strcmp(img->path, path) != 0)
    return false;
  img->asked = path;
  return true;
}

static image_t *image_for(const char *path) {
  image_t *img = &g_images[g_last];
  if (is_for(img, path)) {
    img->used = ++g_clock;
    return img;
  }
  image_t *victim = &g_images[0];
  for (int i = 0; i < MAX_IMAGES; i++) {
    img = &g_images[i];
    if (is_for(img, path)) {
      img->used = ++g_clock;
      g_last = i;
      return img;
    }
    if (!img->path)
      victim = img, victim->used = 0;
    else if (victim->path && img->used < victim->used)
      victim = img;
  }
  drop(victim);
  victim->path = strdup(path);
  if (!victim->path)
    return NULL;
  victim->asked = path;
  victim->used = ++g_clock;
  g_last = (int)(victim - g_images);
  load(victim);
  return victim;
}

/* ---- Naming -----------------------------------------------------------------
 */

/* What the locked phase found for one query, for the unlocked phase. */
typedef struct found {
  const char *name; /* a copy (the image may go once unlocked), or NULL */
  uintptr_t addr;   /* the function's first byte */
  uintptr_t floor;  /* Objective-C methods are looked for above this */
  bool plt;         /* a PLT pc: named for its target or not at all */
  bool ask_objc;    /* the query had an image to search */
  bool heap;        /* name was malloc'ed (the pool was full) */
} found_t;

/* Where the locked phase copies names: the caller's stack while it lasts,
   then malloc. A cold lookup names one pc or a few: their copies and the
   found_t array cost no allocation (each was a malloc and a free, a
   tenth of a lookup). */
#define LOCAL_FOUND 32
#define POOL_BYTES 2048
typedef struct pool {
  char *at;
  size_t left;
} pool_t;

/* Copies name up to a symbol version: a .symtab written by binutils >=
   2.35 spells versioned symbols "memcpy@@GLIBC_2.14"; the version is the
   linker's business, not the function's name (dladdr and Apple's tools
   print it bare). No C, C++ or Swift name contains '@'. One pass over the
   name (strchrnul, not strchr then strlen): its first bytes are a cache
   miss in a big library's string table, and a long C++ name is read once. */
static void copy_name(pool_t *p, const char *name, bool versioned,
                      found_t *out) {
  size_t len = versioned ? (size_t)(strchrnul(name, '@') - name) : strlen(name);
  char *d;
  if (len < p->left) {
    d = p->at;
    p->at += len + 1, p->left -= len + 1;
  } else if ((d = malloc(len + 1)) != NULL) {
    out->heap = true;
  } else {
    return; /* out of memory: unnamed */
  }
  memcpy(d, name, len);
  d[len] = '\0';
  out->name = d;
}

/* The ELF answer for q, under g_lock. */
static void find_one(const image_t *img, const snap__plat_sym_query_t *q,
                     found_t *out, pool_t *pool, char *buf, size_t size) {
  uintptr_t base = q->image_base;
  if (q->addr < base)
    return;
  uint64_t v = q->addr - base;
  out->ask_objc = true;
  out->floor = base;
  if (!img->ok)
    return;
  /* A PLT entry is named for its target or not at all: never for the
     function laid out before it. */
  uint64_t entry;
  int plt = snap__elf_plt_name(&img->elf, v, buf, size, &entry);
  if (plt >= 0) {
    out->plt = true;
    if (plt == 1) {
      copy_name(pool, buf, false, out);
      out->addr = base + (uintptr_t)entry;
    }
    return;
  }
  uint64_t below;
  snap__elf_sym_t scratch;
  const snap__elf_sym_t *s = snap__elf_lookup(
      img->has_dbg ? &img->dbg : &img->elf, v, &below, &scratch);
  if (s) {
    copy_name(pool, s->name, true, out);
    out->addr = base + (uintptr_t)s->addr;
    out->floor = out->addr;
  } else if (below > 0) {
    out->floor = base + (uintptr_t)below - 1; /* a method may start there */
  }
}

/* Two phases. Under g_lock, the ELF answers are looked up and copied
   (names point into file copies only the lock keeps alive). Then, holding no
   lock of ours, the Objective-C runtime is asked and the callbacks run:
   both may take the loader's lock (dl_iterate_phdr, dlsym, a dlopen of
   the C++ runtime to demangle), and a thread inside dlopen — a library
   constructor asking for a stack — holds that lock and may be waiting for
   g_lock: holding g_lock across those calls would deadlock. */
int snap__plat_symbolize(const snap__plat_sym_query_t *q, int n,
                         snap__plat_sym_cb cb, void *ctx) {
  if ((!q && n > 0) || n < 0 || !cb)
    return SNAP_EINVAL;
  found_t local[LOCAL_FOUND];
  found_t *f = n <= LOCAL_FOUND ? local : malloc((size_t)n * sizeof *f);
  if (!f)
    return SNAP_ENOMEM;
  memset(f, 0, (size_t)n * sizeof *f);
  char names[POOL_BYTES];
  pool_t pool = {names, sizeof names};
  char buf[1024];
  snap__plat_lazy_lock(&g_lock);
  image_t *last = NULL;
  for (int i = 0; i < n; i++) {
    if (!q[i].image_path || !q[i].image_path[0])
      continue;
    /* Frames of one image come in runs: skip the cache walk for them. */
    if (!last || !is_for(last, q[i].image_path)) {
      last = image_for(q[i].image_path);
      /* Scanning answers the first few pcs of an image (a first lookup
         in a 60 k-function library: ~0.5 M instructions, not the ~20 M
         of sorting its table); the pc past SCAN_PCS, or a run of more,
         sorts it. */
      int run = 1;
      while (i + run < n && q[i + run].image_path &&
             (q[i + run].image_path == q[i].image_path ||
              strcmp(q[i + run].image_path, q[i].image_path) == 0))
        run++;
      if (last && last->scans + (unsigned)run > SCAN_PCS)
        index_image(last);
    }
    if (last) {
      find_one(last, &q[i], &f[i], &pool, buf, sizeof buf);
      done_scan(last);
      last->scans +=
          last->ok && (last->has_dbg ? last->dbg.lazy : last->elf.lazy);
    }
  }
  snap__plat_lazy_unlock(&g_lock);

  /* Objective-C IMPs usually have no ELF symbol (stripped, or local to a
     runtime-registered class): a method above the ELF function's start, or
     in the gap after the last function, is the better name. The runtime
     is asked once for the whole batch. */
  bool objc = n > 0 && snap__linux_objc_prepare(q[0].images_generation);
  for (int i = 0; i < n; i++) {
    uintptr_t imp =
        objc && f[i].ask_objc && !f[i].plt
            ? snap__linux_objc_lookup(q[i].addr, f[i].floor, buf, sizeof buf)
            : 0;
    if (imp)
      cb(i, buf, imp, ctx);
    else if (f[i].name)
      cb(i, f[i].name, f[i].addr, ctx);
    if (f[i].heap)
      free((char *)f[i].name);
  }
  if (f != local)
    free(f);
  return SNAP_OK;
}
