/*
 * dwarf_lines.h — file:line for an address, from the DWARF line tables of
 * an ELF64 little-endian file held in memory (stacksnap-symbolicate).
 *
 * The answers are the ones `addr2line -e <file> <addr>` prints (binutils'
 * directory joining, the last row at or below the address within a
 * sequence, "??:0" outside every sequence). The index is built once and
 * owns everything it returns: the caller may free the file's buffer after
 * snap__dwarf_lines_open. Pure: no file I/O, no globals, no OS calls; any
 * bytes give a value or an error code (see dwarf_lines.c's head comment).
 * An index is read-only after open: lookups from many threads are safe.
 */
#ifndef SNAP_TOOLS_DWARF_LINES_H
#define SNAP_TOOLS_DWARF_LINES_H

#include <stddef.h>
#include <stdint.h>

/* One table makes the codes and snap__dwarf_lines_strerror(). */
#define SNAP_DWL_ERROR_MAP(X)                                                  \
  X(OK, 0, "success")                                                          \
  X(ENOTELF, -1, "not an ELF64 little-endian file")                            \
  X(ENOLINES, -2, "no DWARF line table (.debug_line) in the file")             \
  X(ECOMPRESSED, -3,                                                           \
    "compressed debug sections (SHF_COMPRESSED or .zdebug_*): not supported; " \
    "decompress with objcopy --decompress-debug-sections")                     \
  X(EMALFORMED, -4, "malformed ELF or DWARF data")                             \
  X(EVERSION, -5, "unsupported DWARF version (2 to 5 are read)")               \
  X(ELIMIT, -6, "the file asks for more memory or work than a real one needs") \
  X(ENOMEM, -7, "out of memory")                                               \
  X(ENOTFOUND, -8, "the address is in no line sequence (addr2line: ??:0)")     \
  X(EINVAL, -9, "invalid argument")

enum {
#define SNAP__DWL_ENUM(name, value, text) SNAP_DWL_##name = value,
  SNAP_DWL_ERROR_MAP(SNAP__DWL_ENUM)
#undef SNAP__DWL_ENUM
};

/* A static string for any int; never NULL. */
const char *snap__dwarf_lines_strerror(int code);

typedef struct snap__dwarf_lines snap__dwarf_lines_t;

/* What one address maps to. `file` is NUL-terminated and owned by the
   index (valid until snap__dwarf_lines_close); it is joined as addr2line
   joins it (comp_dir / include directory / file name); "<unknown>" and
   "??" where addr2line prints those (a file index out of the table, a
   table without files); possibly "" (a file entry named so: addr2line
   prints ":N"). line 0 is addr2line's "file:?". */
typedef struct snap__dwarf_line {
  const char *file;
  uint32_t line;
  uint32_t column;
  uint32_t discriminator; /* addr2line: "N (discriminator D)" when != 0 */
  uint64_t row_address;   /* the row's address (<= the one looked up) */
} snap__dwarf_line_t;

/* Reads every line program that a compile unit of .debug_info points at
   (every program in .debug_line when there is no .debug_info) and builds
   the sorted index. `buf` holds the whole file (a debug file made by
   objcopy --only-keep-debug, or an unstripped executable or shared
   library) at any alignment. Returns SNAP_DWL_OK and *out, or a negative
   SNAP_DWL_* code and *out = NULL. [setup: allocates] */
int snap__dwarf_lines_open(const void *buf, size_t len,
                           snap__dwarf_lines_t **out);

/* Frees the index; NULL is fine. */
void snap__dwarf_lines_close(snap__dwarf_lines_t *dl);

/* `addr` is a file virtual address: the pc minus the image's load bias
   (for a non-PIE executable the pc itself). SNAP_DWL_OK and *out, or
   SNAP_DWL_ENOTFOUND, or SNAP_DWL_EINVAL. O(log rows), no allocation. */
int snap__dwarf_lines_lookup(const snap__dwarf_lines_t *dl, uint64_t addr,
                             snap__dwarf_line_t *out);

/* Counts, for reports and tests: line rows kept and sequences. */
size_t snap__dwarf_lines_rows(const snap__dwarf_lines_t *dl);
size_t snap__dwarf_lines_sequences(const snap__dwarf_lines_t *dl);

#endif
