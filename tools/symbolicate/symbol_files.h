/*
 * symbol_files.h — the files that name an image of a report: found by
 * build id, never by name alone, and read with the project's own ELF
 * reader (src/platform/linux/elf_reader.c) and, for file:line, elfutils'
 * libdw over the bytes read (dwarf_lines.c).
 */
#ifndef SNAP_TOOLS_SYMBOL_FILES_H
#define SNAP_TOOLS_SYMBOL_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct snap__symfile snap__symfile_t;

/* Where to look, in this order: the --binary files (whose build id must
   be the image's), each --debug-dir's .build-id tree, /usr/lib/debug's
   (unless no_default_dirs), then the file at the image's path and its
   .gnu_debuglink, each accepted only when its build id is the image's.
   A report's build id must be hex of 8 to 64 bytes (else the image is
   refused); a file a report leads to is read only when its build-id note,
   probed first, is the image's, and is never mentioned otherwise. */
typedef struct snap__symfind_opts {
  const char *const *debug_dirs;
  int n_debug_dirs;
  const char *const *binaries;
  int n_binaries;
  bool no_default_dirs;
  /* The most bytes of symbol files read whole, in all (0: the default,
     SNAP__SYMFILES_BUDGET); a file that would pass it is not read, and
     the image's status says so. */
  unsigned long long max_bytes;
} snap__symfind_opts_t;

#define SNAP__SYMFILES_BUDGET (4ULL << 30)

typedef struct snap__symfinder snap__symfinder_t;

/* NULL when out of memory. Reads each --binary once (a file that cannot be
   read is remembered, with why, and reported as such). */
snap__symfinder_t *snap__symfinder_new(const snap__symfind_opts_t *opts);
void snap__symfinder_free(snap__symfinder_t *f);

/* What was found for one image. */
typedef struct snap__symfound {
  const snap__symfile_t *names; /* has the image's function names; NULL */
  const snap__symfile_t *lines; /* has its line tables; NULL if none */
  /* One line a person reads: the files used, or why none was ("no file
     with build id ...: /lib/x.so has build id ..."). */
  char status[1024];
} snap__symfound_t;

/* Finds the files for the image with this path and build id (lowercase
   hex; NULL or "" when the report has none: then only a --binary of the
   same base name is used, and the status says it could not be checked).
   Results are cached per (path, build id); files by device and inode. */
void snap__symfind(snap__symfinder_t *f, const char *path, const char *build_id,
                   snap__symfound_t *out);

/* A frame's name from a file's symbols: function (NULL if none holds the
   address), its start, file:line (NULL / 0 when the file has no line
   table for it) and the inlined calls there. vaddr is the image offset (the
   file's virtual address: the report's base is the load bias). Strings live
   with the finder. */
#define SNAP__SYMNAME_MAX_INLINED 16

typedef struct snap__symname {
  const char *function;
  uint64_t function_start;
  const char *file;
  unsigned line;
  /* The inlined calls at vaddr, innermost first (addr2line -i): each the
     function inlined and the file:line it was called from. Valid until
     the next snap__symname. */
  size_t n_inlined;
  struct {
    const char *function, *file; /* NULL when the DWARF has none */
    unsigned line;
  } inlined[SNAP__SYMNAME_MAX_INLINED];
} snap__symname_t;

void snap__symname(const snap__symfound_t *found, uint64_t vaddr,
                   snap__symname_t *out);

/* Paths of --binary files whose build id matched no image asked for so
   far, one per call (i = 0, 1, ...), NULL at the end: a user who passed
   one for a report of another build learns it. */
const char *snap__symfinder_unused_binary(const snap__symfinder_t *f, int i,
                                          const char **why);

#endif
