/*
 * elf_symbols.c — the Linux system symbol provider: snap__plat_symbolize.
 *
 * Owns: what naming needs of the files behind the images (read into memory
 * we own, parsed, then only the names and PLT tables kept), the
 * search for their separate debug files, and a small cache of parsed
 * images. The parsing itself is elf_reader.c's; Objective-C method names
 * come from objc_names.c.
 *
 * Per image, on first use:
 *  1. read the file (open + fstat + pread: see map_file). The vdso has
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
 *     functions: a first lookup in ~2 ms of CPU, not ~10). The lookup
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
 * faults on access). The cost: the parts of a file read (read_parts) until
 * it is sorted; then, per cached image, its function names and sorted
 * symbols (and its PLT's tables). A file rewritten after it was read keeps its
 * old names until its entry is dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

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
/* The vdso is one or two pages; anything claiming more is not believed. */
#define MAX_VDSO_SIZE (1u << 20)
#define DEBUG_ROOT "/usr/lib/debug"
/* A file bigger than this is not read (its names are lost): the copy is
   held as long as the image is cached. */
#define MAX_FILE_SIZE ((uint64_t)512 << 20)

typedef struct mapping {
  void *addr;
  size_t size;
  bool vdso; /* copied from memory: no file, no debug file */
  dev_t dev;
  ino_t ino;
} mapping_t;

typedef struct image {
  char *path;     /* NULL: free slot */
  uint64_t used;  /* LRU clock */
  bool ok;        /* file parsed */
  bool has_dbg;   /* separate debug file parsed */
  unsigned scans; /* lookups answered by scanning (not yet indexed) */
  mapping_t file, debug;
  snap__elf_t elf, dbg;
} image_t;

/* Guards g_images and g_clock. Made on first use (platform.h,
   snap__lazy_lock_t). */
static snap__lazy_lock_t g_lock;
static image_t g_images[MAX_IMAGES];
static uint64_t g_clock;

/* ---- Files ----------------------------------------------------------------
 */

/* Reads [off, off + len) of fd into buf + off with bounded preads
   (abseil's symbolize_elf shape): retried on EINTR, stopped at end of
   file. Returns the bytes read: fewer when the file was cut since we
   looked at its size, and that truncation is a result, not an error (the
   bytes not read stay zero: the parse then fails or names less). */
static uint64_t read_at(int fd, uint8_t *buf, uint64_t off, uint64_t len) {
  uint64_t got = 0;
  while (got < len) {
    ssize_t n =
        pread(fd, buf + off + got, (size_t)(len - got), (off_t)(off + got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (uint64_t)n;
  }
  return got;
}

static bool is_named(const uint8_t *buf, uint64_t size, const Elf64_Shdr *tab,
                     uint32_t name, const char *want) {
  size_t len = strlen(want) + 1;
  return name < tab->sh_size && tab->sh_size - name >= len &&
         tab->sh_offset + name + len <= size &&
         memcmp(buf + tab->sh_offset + name, want, len) == 0;
}

/* Fills only the parts of buf (size bytes, zeroed) that the reader looks
   at: the headers, the symbol and string tables, notes, relocations, the
   PLTs and the debuglink. The text, data and DWARF — most of a file — are
   never read. False when the headers are not what the reader expects;
   the caller then reads the whole file and lets the reader judge it. A
   section this misses only costs what it would have named. */
static bool read_parts(int fd, uint8_t *buf, uint64_t size) {
  Elf64_Ehdr eh;
  Elf64_Shdr s0, names;
  if (size < sizeof eh || read_at(fd, buf, 0, sizeof eh) != sizeof eh)
    return false;
  memcpy(&eh, buf, sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff == 0 ||
      eh.e_shoff > size || size - eh.e_shoff < sizeof s0 ||
      read_at(fd, buf, eh.e_shoff, sizeof s0) != sizeof s0)
    return false;
  memcpy(&s0, buf + eh.e_shoff, sizeof s0);
  uint64_t num = eh.e_shnum ? eh.e_shnum : s0.sh_size;
  if (num == 0 || num > (size - eh.e_shoff) / sizeof(Elf64_Shdr) ||
      read_at(fd, buf, eh.e_shoff, num * sizeof(Elf64_Shdr)) !=
          num * sizeof(Elf64_Shdr))
    return false;
  if (eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phoff <= size &&
      (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) <= size - eh.e_phoff) {
    read_at(fd, buf, eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr));
    for (unsigned i = 0; i < eh.e_phnum; i++) {
      Elf64_Phdr ph;
      memcpy(&ph, buf + eh.e_phoff + i * sizeof ph, sizeof ph);
      if (ph.p_type == PT_NOTE && ph.p_offset <= size &&
          ph.p_filesz <= size - ph.p_offset)
        read_at(fd, buf, ph.p_offset, ph.p_filesz);
    }
  }
  uint64_t strndx = eh.e_shstrndx == SHN_XINDEX ? s0.sh_link : eh.e_shstrndx;
  bool names_ok = strndx < num;
  if (names_ok) {
    memcpy(&names, buf + eh.e_shoff + strndx * sizeof names, sizeof names);
    names_ok = names.sh_type == SHT_STRTAB && names.sh_offset <= size &&
               names.sh_size <= size - names.sh_offset;
  }
  if (names_ok)
    read_at(fd, buf, names.sh_offset, names.sh_size);
  /* .dynsym and its strings serve two ends: the names of a file without
     .symtab, and PLT entries' targets. A file with a .symtab and no PLT
     needs neither, and in a big library they are a third of what would be
     read (its exported names, again). */
  bool symtab = false, plt = !names_ok, plt_got = !names_ok;
  for (uint64_t i = 1; i < num; i++) {
    Elf64_Shdr s;
    memcpy(&s, buf + eh.e_shoff + i * sizeof s, sizeof s);
    symtab |= s.sh_type == SHT_SYMTAB;
    plt |= names_ok && (is_named(buf, size, &names, s.sh_name, ".plt") ||
                        is_named(buf, size, &names, s.sh_name, ".plt.sec"));
    plt_got |= names_ok && is_named(buf, size, &names, s.sh_name, ".plt.got");
  }
  plt |= plt_got;
  uint64_t skip_str = 0; /* the section index of .dynsym's strings */
  for (uint64_t i = 1; i < num && symtab && !plt; i++) {
    Elf64_Shdr s;
    memcpy(&s, buf + eh.e_shoff + i * sizeof s, sizeof s);
    if (s.sh_type == SHT_DYNSYM)
      skip_str = s.sh_link;
  }
  for (uint64_t i = 1; i < num; i++) {
    Elf64_Shdr s;
    memcpy(&s, buf + eh.e_shoff + i * sizeof s, sizeof s);
    if (symtab && !plt &&
        (s.sh_type == SHT_DYNSYM || (skip_str && i == skip_str)))
      continue;
    /* Relocations name PLT entries: .rela.plt those of .plt and
       .plt.sec, .rela.dyn (megabytes in a big C++ library) only those of
       a .plt.got (elf_reader.c keeps the same ones). */
    bool want =
        s.sh_type == SHT_SYMTAB || s.sh_type == SHT_DYNSYM ||
        s.sh_type == SHT_STRTAB || s.sh_type == SHT_NOTE ||
        (s.sh_type == SHT_RELA &&
         (plt_got || (s.sh_flags & SHF_INFO_LINK) ||
          (names_ok && is_named(buf, size, &names, s.sh_name, ".rela.plt"))));
    if (!want && s.sh_type == SHT_PROGBITS && names_ok)
      want = is_named(buf, size, &names, s.sh_name, ".plt") ||
             is_named(buf, size, &names, s.sh_name, ".plt.sec") ||
             is_named(buf, size, &names, s.sh_name, ".plt.got") ||
             is_named(buf, size, &names, s.sh_name, ".gnu_debuglink");
    if (want && s.sh_offset <= size && s.sh_size <= size - s.sh_offset)
      read_at(fd, buf, s.sh_offset, s.sh_size);
  }
  return true;
}

/* The parts of the file the reader needs (read_parts; or all of it),
   copied into memory we own. Never a mapping: a file rewritten in place
   while mapped (cp over a library being developed) turns every page past
   its new end into SIGBUS for whoever reads it. The buffer is the file's
   size, zeroed: calloc of a large block is fresh zero pages, so the parts
   never read cost address space, not memory. */
static bool map_file(const char *path, mapping_t *m) {
  memset(m, 0, sizeof *m);
  int fd;
  do
    fd = open(path, O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return false;
  struct stat st;
  uint8_t *buf = NULL;
  uint64_t size = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      (uint64_t)st.st_size <= MAX_FILE_SIZE) {
    size = (uint64_t)st.st_size;
    buf = calloc(1, (size_t)size);
  }
  if (buf && !read_parts(fd, buf, size) && read_at(fd, buf, 0, size) == 0) {
    free(buf); /* nothing there: cut to nothing since fstat */
    buf = NULL;
  }
  close(fd);
  if (!buf)
    return false;
  *m = (mapping_t){buf, (size_t)size, false, st.st_dev, st.st_ino};
  return true;
}

static void unmap(mapping_t *m) {
  free(m->addr);
  memset(m, 0, sizeof *m);
}

/* The vdso's ELF image, copied out of memory. Its size is what its own
   headers say they span (program headers, PT_LOAD contents, section
   headers), capped; every byte goes through the safe read, so a vdso that
   is not what it claims costs names, not the process. */
static bool copy_vdso(mapping_t *m) {
  memset(m, 0, sizeof *m);
  uintptr_t at = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  Elf64_Ehdr eh;
  if (!at || !snap__plat_read(at, &eh, sizeof eh) ||
      memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > MAX_VDSO_SIZE ||
      eh.e_shoff > MAX_VDSO_SIZE)
    return false;
  uint64_t end = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
  uint64_t ph_end = eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr);
  if (ph_end > end)
    end = ph_end;
  if (end > MAX_VDSO_SIZE)
    return false;
  for (unsigned i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    if (!snap__plat_read(at + eh.e_phoff + i * sizeof ph, &ph, sizeof ph))
      return false;
    if (ph.p_type == PT_LOAD && ph.p_offset <= MAX_VDSO_SIZE &&
        ph.p_filesz <= MAX_VDSO_SIZE && ph.p_offset + ph.p_filesz > end)
      end = ph.p_offset + ph.p_filesz;
  }
  if (end == 0 || end > MAX_VDSO_SIZE)
    return false;
  uint8_t *copy = malloc(end);
  if (!copy)
    return false;
  for (uint64_t off = 0; off < end; off += 4096) {
    size_t n = end - off < 4096 ? (size_t)(end - off) : 4096;
    if (!snap__plat_read(at + off, copy + off, n)) {
      free(copy);
      return false;
    }
  }
  *m = (mapping_t){copy, (size_t)end, true, 0, 0};
  return true;
}

static bool is_vdso_name(const char *path) {
  return !strchr(path, '/') && (strncmp(path, "linux-vdso", 10) == 0 ||
                                strncmp(path, "linux-gate", 10) == 0);
}

/* ---- Separate debug files -------------------------------------------------
 */

/* CRC-32 (the polynomial of zlib and of gdb's gnu_debuglink_crc32) of the
   whole file at path, read in chunks (the file copy holds only parts).
   False when the file cannot be read to its end. */
static bool crc32_file(const char *path, uint32_t *out) {
  uint32_t table[256];
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  int fd;
  do
    fd = open(path, O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return false;
  enum { CHUNK = 1 << 16 };
  uint8_t *chunk = malloc(CHUNK);
  uint32_t crc = 0xFFFFFFFFu;
  bool ok = chunk != NULL;
  for (;;) {
    ssize_t n = ok ? read(fd, chunk, CHUNK) : 0;
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      ok = false;
    if (n <= 0)
      break;
    for (ssize_t i = 0; i < n; i++)
      crc = table[(crc ^ chunk[i]) & 0xFF] ^ (crc >> 8);
  }
  free(chunk);
  close(fd);
  *out = crc ^ 0xFFFFFFFFu;
  return ok;
}

static bool same_build_id(const snap__elf_t *a, const snap__elf_t *b) {
  return a->build_id && b->build_id && a->build_id_len == b->build_id_len &&
         memcmp(a->build_id, b->build_id, a->build_id_len) == 0;
}

/* Maps and parses a candidate debug file; keeps it only if it has a
   .symtab, is for the same machine, is not the image itself, and matches:
   by build-id, or (by_crc) by the debuglink's CRC. */
static bool try_debug(image_t *img, const char *path, bool by_crc) {
  mapping_t m;
  uint32_t crc;
  if (!map_file(path, &m))
    return false;
  snap__elf_t d;
  bool ok = !(m.dev == img->file.dev && m.ino == img->file.ino) &&
            snap__elf_parse_lazy(&d, m.addr, m.size) == 0;
  if (ok) {
    ok = d.from_symtab && d.machine == img->elf.machine &&
         (same_build_id(&img->elf, &d) ||
          (by_crc && crc32_file(path, &crc) && crc == img->elf.debuglink_crc));
    if (!ok)
      snap__elf_free(&d);
  }
  if (!ok) {
    unmap(&m);
    return false;
  }
  img->debug = m; /* until indexed (index_image) */
  img->dbg = d;
  img->has_dbg = true;
  return true;
}

static bool try_debuglink_in(image_t *img, const char *dir) {
  const char *fmt[] = {"%s/%s", "%s/.debug/%s", DEBUG_ROOT "%s/%s"};
  char path[PATH_MAX];
  for (size_t i = 0; i < sizeof fmt / sizeof fmt[0]; i++) {
    int n = snprintf(path, sizeof path, fmt[i], dir, img->elf.debuglink);
    if (n > 0 && (size_t)n < sizeof path && try_debug(img, path, true))
      return true;
  }
  return false;
}

static void find_debug_file(image_t *img) {
  const snap__elf_t *e = &img->elf;
  char path[PATH_MAX];
  if (e->build_id && e->build_id_len >= 2) {
    int n = snprintf(path, sizeof path, DEBUG_ROOT "/.build-id/%02x/",
                     e->build_id[0]);
    for (size_t i = 1; i < e->build_id_len && n > 0 && n < 200; i++)
      n += snprintf(path + n, sizeof path - (size_t)n, "%02x", e->build_id[i]);
    if (n > 0 && n < 200) {
      snprintf(path + n, sizeof path - (size_t)n, ".debug");
      if (try_debug(img, path, false))
        return;
    }
  }
  if (!e->debuglink || img->path[0] != '/')
    return;
  /* <dir> as the loader named the file, then as the file really is (on
     merged-/usr systems /lib/x86_64-linux-gnu is /usr/lib/x86_64-linux-gnu,
     and /usr/lib/debug holds the latter). */
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", img->path);
  char *slash = strrchr(dir, '/');
  *slash = '\0';
  if (try_debuglink_in(img, dir))
    return;
  if (realpath(img->path, path)) {
    slash = strrchr(path, '/');
    if (slash) {
      *slash = '\0';
      if (strcmp(path, dir) != 0)
        try_debuglink_in(img, path);
    }
  }
}

/* ---- The image cache --------------------------------------------------------
 */

static void drop(image_t *img) {
  if (img->has_dbg)
    snap__elf_free(&img->dbg);
  if (img->ok)
    snap__elf_free(&img->elf);
  unmap(&img->debug);
  unmap(&img->file);
  free(img->path);
  memset(img, 0, sizeof *img);
}

static void load(image_t *img) {
  bool mapped = is_vdso_name(img->path) ? copy_vdso(&img->file)
                                        : map_file(img->path, &img->file);
  if (!mapped)
    return;
  if (snap__elf_parse_lazy(&img->elf, img->file.addr, img->file.size) != 0) {
    unmap(&img->file);
    return;
  }
  img->ok = true;
  if (!img->elf.from_symtab && !img->file.vdso)
    find_debug_file(img);
}

/* Sorts the image's functions (snap__elf_index), then detaches the parses
   from the file copies (snap__elf_detach) and frees the copies. Until
   then its lookups scan the symbol table. An index that cannot be built
   (out of memory) leaves the image scanning, copies kept. */
static void index_image(image_t *img) {
  snap__elf_t *names = img->has_dbg ? &img->dbg : &img->elf;
  if (!img->ok || !names->lazy || snap__elf_index(names) != 0)
    return;
  if (img->has_dbg) {
    if (snap__elf_detach(&img->dbg) == 0)
      unmap(&img->debug);
    img->elf.lazy = false; /* its own table is never searched: only its PLT */
  }
  if (snap__elf_detach(&img->elf) == 0)
    unmap(&img->file);
}

/* Frames of one image come in runs, and so do calls: the image the last
   call used is checked before the walk over every entry. */
static int g_last;

static image_t *image_for(const char *path) {
  image_t *img = &g_images[g_last];
  if (img->path && strcmp(img->path, path) == 0) {
    img->used = ++g_clock;
    return img;
  }
  image_t *victim = &g_images[0];
  for (int i = 0; i < MAX_IMAGES; i++) {
    img = &g_images[i];
    if (img->path && strcmp(img->path, path) == 0) {
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
   print it bare). No C, C++ or Swift name contains '@'. */
static void copy_name(pool_t *p, const char *name, bool versioned,
                      found_t *out) {
  const char *at = versioned ? strchr(name, '@') : NULL;
  size_t len = at ? (size_t)(at - name) : strlen(name);
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
    if (!last || strcmp(last->path, q[i].image_path) != 0) {
      last = image_for(q[i].image_path);
      /* Scanning answers the first few pcs of an image (a first lookup
         in a 60 k-function library: ~0.5 M instructions, not the ~20 M
         of sorting its table); the pc past SCAN_PCS, or a run of more,
         sorts it. */
      int run = 1;
      while (i + run < n && q[i + run].image_path &&
             strcmp(q[i + run].image_path, q[i].image_path) == 0)
        run++;
      if (last && last->scans + (unsigned)run > SCAN_PCS)
        index_image(last);
    }
    if (last) {
      find_one(last, &q[i], &f[i], &pool, buf, sizeof buf);
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
