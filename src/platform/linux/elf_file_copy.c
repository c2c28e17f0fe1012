/*
 * elf_file_copy.c — the bytes the ELF reader parses, copied into memory
 * the symbol provider owns: the parts of a file the reader looks at (or
 * the whole file), and the vdso's image out of the process's memory.
 *
 * Owns: snap__elf_map_file, snap__elf_copy_vdso, snap__elf_unmap, the
 * later reads of a copy's part left in its file (snap__elf_reopen,
 * snap__elf_read, snap__elf_fill_unread), and the one way the provider
 * opens a file (snap__linux_open_regular: never blocking, regular files
 * only). Must not: keep a file mapped (design.md rule 6: a file cut on
 * disk while mapped faults on access; reads are bounded preads, retried
 * on EINTR, stopped at end of file, and a file cut since its size was
 * read is a result, not an error); read the vdso but through the safe
 * read (the kernel's page is the only copy, and its headers may lie); run
 * in the stopped window (it opens files and allocates).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/linux/elf_image.h"
#include "platform/linux/linux.h"

#include <elf.h>

static int64_t mtime_ns(const struct stat *st) {
  return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* The vdso is one or two pages; anything claiming more is not believed. */
#define MAX_VDSO_SIZE (1u << 20)
/* A file bigger than this is not read (its names are lost): the copy is
   held as long as the image is cached. */
#define MAX_FILE_SIZE ((uint64_t)512 << 20)

/* Reads [off, off + len) of fd into dst with bounded preads (abseil's
   symbolize_elf shape): retried on EINTR, stopped at end of file. Returns
   the bytes read: fewer when the file was cut since we looked at its
   size, and that truncation is a result, not an error (the bytes not read
   stay zero: the parse then fails or names less). */
uint64_t snap__elf_read(int fd, void *dst, uint64_t off, uint64_t len) {
  uint64_t got = 0;
  while (got < len) {
    ssize_t n = pread(fd, (uint8_t *)dst + got, (size_t)(len - got),
                      (off_t)(off + got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (uint64_t)n;
  }
  return got;
}

/* The same into buf + off: buf holds the file at its own offsets. */
static uint64_t read_at(int fd, uint8_t *buf, uint64_t off, uint64_t len) {
  return snap__elf_read(fd, buf + off, off, len);
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
   section this misses only costs what it would have named. leave: the
   first .symtab's bytes are not read; its range then in *left_off,
   *left_len. */
static bool read_parts(int fd, uint8_t *buf, uint64_t size, bool leave,
                       uint64_t *left_off, uint64_t *left_len) {
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
    if (!want || s.sh_offset > size || s.sh_size > size - s.sh_offset)
      continue;
    if (leave && s.sh_type == SHT_SYMTAB && *left_len == 0 && s.sh_size) {
      *left_off = s.sh_offset, *left_len = s.sh_size;
      continue;
    }
    read_at(fd, buf, s.sh_offset, s.sh_size);
  }
  return true;
}

int snap__linux_open_regular(const char *path, struct stat *st) {
  int fd;
  do
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return -1;
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    close(fd);
    return -1;
  }
  return fd;
}

/* The parts of the file the reader needs (read_parts; or all of it),
   copied into memory we own. Never a mapping: a file rewritten in place
   while mapped (cp over a library being developed) turns every page past
   its new end into SIGBUS for whoever reads it. The buffer is the file's
   size, zeroed: calloc of a large block is fresh zero pages, so the parts
   never read cost address space, not memory. Copying into fresh pages is
   also most of a first lookup in a big library (60 k functions: 2.1 MB of
   .symtab and .strtab, ~3 ms on this VM, where the same bytes read into
   a 64 KiB buffer already in the CPU's caches take ~0.55 ms), hence
   leave_symtab: a lazy parse's scans read the table in pieces
   (elf_symbols.c), and it is copied only when the image is indexed. */
bool snap__elf_map_file(const char *path, mapping_t *m, bool leave_symtab) {
  memset(m, 0, sizeof *m);
  struct stat st;
  int fd = snap__linux_open_regular(path, &st);
  if (fd < 0)
    return false;
  uint8_t *buf = NULL;
  uint64_t size = 0;
  if (st.st_size > 0 && (uint64_t)st.st_size <= MAX_FILE_SIZE) {
    size = (uint64_t)st.st_size;
    buf = calloc(1, (size_t)size);
  }
  uint64_t left_off = 0, left_len = 0;
  if (buf && !read_parts(fd, buf, size, leave_symtab, &left_off, &left_len)) {
    left_off = left_len = 0; /* the whole file, read below */
    if (read_at(fd, buf, 0, size) == 0) {
      free(buf); /* nothing there: cut to nothing since fstat */
      buf = NULL;
    }
  }
  close(fd);
  if (!buf)
    return false;
  *m = (mapping_t){.addr = buf,
                   .size = (size_t)size,
                   .dev = st.st_dev,
                   .ino = st.st_ino,
                   .mtime_ns = mtime_ns(&st),
                   .unread_off = left_off,
                   .unread_len = left_len};
  return true;
}

bool snap__elf_reopen(const char *path, const mapping_t *m, int *fd) {
  struct stat st;
  *fd = snap__linux_open_regular(path, &st);
  if (*fd < 0)
    return false;
  if (st.st_dev == m->dev && st.st_ino == m->ino &&
      (uint64_t)st.st_size == m->size && mtime_ns(&st) == m->mtime_ns)
    return true;
  close(*fd);
  return false;
}

bool snap__elf_fill_unread(const char *path, mapping_t *m) {
  if (m->unread_len == 0)
    return true;
  int fd;
  if (!snap__elf_reopen(path, m, &fd))
    return false;
  bool ok = read_at(fd, m->addr, m->unread_off, m->unread_len) == m->unread_len;
  close(fd);
  if (ok)
    m->unread_off = m->unread_len = 0;
  return ok;
}

void snap__elf_unmap(mapping_t *m) {
  free(m->addr);
  memset(m, 0, sizeof *m);
}

/* The vdso's ELF image, copied out of memory. Its size is what its own
   headers say they span (program headers, PT_LOAD contents, section
   headers), capped; every byte goes through the safe read, so a vdso that
   is not what it claims costs names, not the process. */
bool snap__elf_copy_vdso(mapping_t *m) {
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
  *m = (mapping_t){.addr = copy, .size = (size_t)end, .vdso = true};
  return true;
}

bool snap__elf_is_vdso_name(const char *path) {
  return !strchr(path, '/') && (strncmp(path, "linux-vdso", 10) == 0 ||
                                strncmp(path, "linux-gate", 10) == 0);
}
