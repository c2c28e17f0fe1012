/*
 * elf_image.h — what the parts of the Linux symbol provider share: an
 * image as the provider keeps it (its file copy, its parse, and its
 * separate debug file's), and the functions one part calls in another.
 *
 * The provider is split by job: elf_symbols.c (the cache of images and
 * snap__plat_symbolize), elf_file_copy.c (the bytes of a file or of the
 * vdso, copied into memory we own) and elf_debug_file.c (finding and
 * checking a stripped image's separate debug file). The parse itself is
 * elf_reader.c's.
 *
 * Owns: image_t and mapping_t. Must not: be included outside the
 * provider's parts. None of this runs in the stopped window: every
 * function opens files, allocates, or both.
 */
#ifndef SNAP_PLATFORM_LINUX_ELF_IMAGE_H
#define SNAP_PLATFORM_LINUX_ELF_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "platform/linux/elf_reader.h"

typedef struct mapping {
  void *addr;
  size_t size;
  bool vdso; /* copied from memory: no file, no debug file */
  dev_t dev;
  ino_t ino;
  int64_t mtime_ns; /* with dev, ino and size: the file read, not a new one */
  /* The symbol table's bytes left in the file (snap__elf_map_file's
     leave_symtab), zero in the buffer until snap__elf_fill_unread. */
  uint64_t unread_off, unread_len;
} mapping_t;

typedef struct image {
  char *path; /* NULL: free slot */
  /* The caller's pointer for path when last asked: paths come interned
     (platform.h, snap__plat_sym_query_t), so the same pointer is the same
     path, and a run of frames compares pointers, not 40-byte strings. */
  const char *asked;
  uint64_t used;  /* LRU clock */
  bool ok;        /* file parsed */
  bool has_dbg;   /* separate debug file parsed */
  unsigned scans; /* lookups answered by scanning (not yet indexed) */
  mapping_t file, debug;
  snap__elf_t elf, dbg;
  int syms_fd;    /* the file, open during one scan of its unread table */
  bool syms_open; /* ... when true */
} image_t;

/* elf_file_copy.c: the file at path (or, snap__elf_copy_vdso, the vdso)
   copied into a buffer m owns, freed by snap__elf_unmap. leave_symtab: its
   .symtab's bytes stay in the file (m->unread_off, m->unread_len). False:
   nothing kept, m zeroed. */
bool snap__elf_map_file(const char *path, mapping_t *m, bool leave_symtab);
/* The file at path opened again, if it is still the one m was read from
   (device, inode, size, modification time): *fd, to read with
   snap__elf_read and close. */
bool snap__elf_reopen(const char *path, const mapping_t *m, int *fd);
/* Up to len bytes of fd at off into dst: how many (fewer at end of file). */
uint64_t snap__elf_read(int fd, void *dst, uint64_t off, uint64_t len);
/* Reads m's unread part into its buffer, from the same file (see
   snap__elf_reopen); true when nothing is left unread. */
bool snap__elf_fill_unread(const char *path, mapping_t *m);
bool snap__elf_copy_vdso(mapping_t *m);
void snap__elf_unmap(mapping_t *m);
/* Whether a loader's image name is the vdso's (it has no file). */
bool snap__elf_is_vdso_name(const char *path);

/* elf_debug_file.c: for a parsed image without .symtab, finds its debug
   file and, if one matches, parses it into img->dbg (img->has_dbg). */
void snap__elf_find_debug_file(image_t *img);

#endif /* SNAP_PLATFORM_LINUX_ELF_IMAGE_H */
