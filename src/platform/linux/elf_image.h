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

/* elf_file_copy.c: the file at path (or, snap__elf_copy_vdso, the vdso)
   copied into a buffer m owns, freed by snap__elf_unmap. False: nothing
   kept, m zeroed. */
bool snap__elf_map_file(const char *path, mapping_t *m);
bool snap__elf_copy_vdso(mapping_t *m);
void snap__elf_unmap(mapping_t *m);
/* Whether a loader's image name is the vdso's (it has no file). */
bool snap__elf_is_vdso_name(const char *path);

/* elf_debug_file.c: for a parsed image without .symtab, finds its debug
   file and, if one matches, parses it into img->dbg (img->has_dbg). */
void snap__elf_find_debug_file(image_t *img);

#endif /* SNAP_PLATFORM_LINUX_ELF_IMAGE_H */
