/*
 * dwarf_lines.h — file:line for an address, from the DWARF of an ELF file
 * held in memory (stacksnap-symbolicate), read by elfutils' libdw.
 *
 * The answers are the ones `addr2line -e <file> <addr>` prints: the line
 * row at or below the address within its sequence, the path joined with
 * the unit's directories; with -i, the chain of inlined calls that holds
 * the address. Compressed debug sections (SHF_COMPRESSED as Debian's
 * libc6-dbg ships them, and .zdebug_*) are read, within a byte budget
 * declared before anything is inflated. The index takes the caller's
 * buffer until snap__dwarf_lines_close: libelf reads it in place and
 * rewrites the section headers of what it inflates (so nothing else may
 * read the buffer as the file it was).
 * Not thread-safe: one thread per index (libdw caches as it reads).
 */
#ifndef SNAP_TOOLS_DWARF_LINES_H
#define SNAP_TOOLS_DWARF_LINES_H

#include <stddef.h>
#include <stdint.h>

/* One table makes the codes and snap__dwarf_lines_strerror(). */
#define SNAP_DWL_ERROR_MAP(X)                                                  \
  X(OK, 0, "success")                                                          \
  X(ENOTELF, -1, "not an ELF file")                                            \
  X(ENOLINES, -2, "no DWARF line table (.debug_line) in the file")             \
  X(EMALFORMED, -4, "malformed ELF or DWARF data")                             \
  X(ELIMIT, -6,                                                                \
    "its compressed debug sections would pass the memory budget "              \
    "(--max-memory)")                                                          \
  X(ENOMEM, -7, "out of memory")                                               \
  X(ENOTFOUND, -8, "the address is in no line sequence (addr2line: ??:0)")     \
  X(EINVAL, -9, "invalid argument")

enum {
#define SNAP__DWL_ENUM(name, value, text) SNAP_DWL_##name = value,
  SNAP_DWL_ERROR_MAP(SNAP__DWL_ENUM)
#undef SNAP__DWL_ENUM
};

/* "libdw (elfutils) 0.188": what reads file:line (for --version). */
const char *snap__dwarf_lines_version(void);

/* A static string for any int; never NULL. */
const char *snap__dwarf_lines_strerror(int code);

typedef struct snap__dwarf_lines snap__dwarf_lines_t;

/* What one address maps to. Strings are owned by the index: file is
   valid until the next lookup on it or snap__dwarf_lines_close (copy it to
   keep it). line 0 is addr2line's "file:?". */
typedef struct snap__dwarf_line {
  const char *file;
  uint32_t line;
  uint32_t column;
  uint32_t discriminator; /* addr2line: "N (discriminator D)" when != 0 */
  uint64_t row_address;   /* the row's address (<= the one looked up) */
} snap__dwarf_line_t;

/* Opens the ELF file in buf[0, len) (a debug file made by objcopy
   --only-keep-debug, or an unstripped executable or shared library) for
   lookups. max_inflate: the most bytes its compressed debug sections may
   inflate to (their headers say so before any is inflated; ELIMIT when
   more); *inflated (may be NULL) gets what they declare, for the caller's
   budget. Returns SNAP_DWL_OK and *out, or a negative SNAP_DWL_* code and
   *out = NULL. buf is the index's until it is closed (see above), and is
   the caller's to free after. [setup: allocates] */
int snap__dwarf_lines_open(void *buf, size_t len, uint64_t max_inflate,
                           uint64_t *inflated, snap__dwarf_lines_t **out);

/* Frees the index; NULL is fine. */
void snap__dwarf_lines_close(snap__dwarf_lines_t *dl);

/* `addr` is a file virtual address: the pc minus the image's load bias
   (for a non-PIE executable the pc itself). SNAP_DWL_OK and *out, or
   SNAP_DWL_ENOTFOUND, or SNAP_DWL_EINVAL. */
int snap__dwarf_lines_lookup(snap__dwarf_lines_t *dl, uint64_t addr,
                             snap__dwarf_line_t *out);

/* The inlined calls holding addr, innermost first, as `addr2line -f -i`
   prints them: each is the function inlined (function, NULL when unnamed)
   and the file:line of its call, in the function around it (the next
   entry's, or the frame's own function for the last). Fills at most max
   entries of out and returns how many calls there are (0: not inlined, or
   no DWARF for addr). The paths are joined as lookup's; strings are valid
   until the next call or snap__dwarf_lines_close. */
typedef struct snap__dwarf_inline {
  const char *function; /* the function inlined */
  const char *file;     /* where it was called */
  uint32_t line;
} snap__dwarf_inline_t;
size_t snap__dwarf_lines_inlined(snap__dwarf_lines_t *dl, uint64_t addr,
                                 snap__dwarf_inline_t *out, size_t max);

#endif
