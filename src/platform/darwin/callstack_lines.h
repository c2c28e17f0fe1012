/*
 * callstack_lines.h — reads one line of Apple's call-stack text (the
 * elements of +[NSThread callStackSymbols], _NSCallStackArray's
 * descriptions, backtrace_symbols) back into its parts.
 *
 * The layout is Libc's "%-4d%-35s 0x%016lx %s + %lu" (backtrace_symbols,
 * gen/backtrace.c; docs/apple.md "Contract: _NSCallStackArray"): index,
 * image base name padded to 35 columns (cut to 35 characters by current
 * Libc, pushing the rest right in older ones; names may hold spaces), the
 * address, then a "symbol" and the decimal offset of the address from it.
 * The "symbol" is a function name only when dladdr gave one; otherwise
 * Libc prints, from dladdr's answer:
 *  - dli_sname "<redacted>" (a name elided from the shared cache) and the
 *    image's UUID known: that UUID, offset from the image base;
 *  - "<redacted>" itself when the UUID is not known;
 *  - no dli_sname but an image: the image's own name again, offset from
 *    the image base (older Libc: "0x<dli_saddr>" in hex);
 *  - no image either: "0x0", the offset being the address; "???" for the
 *    image.
 * None of these is a function's name, and the parser says so.
 *
 * Pure: no Apple API, so it is built and tested on Linux.
 */
#ifndef SNAP_PLATFORM_DARWIN_CALLSTACK_LINES_H
#define SNAP_PLATFORM_DARWIN_CALLSTACK_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct snap__cs_line {
  unsigned long index;
  const char *image; /* inside the line; NULL when printed as "???" */
  size_t image_len;
  uintptr_t addr;
  const char *symbol; /* inside the line; NULL when it names no function:
                         a hex number, "<redacted>", a UUID, or the image's
                         own name */
  size_t symbol_len;
  uintptr_t offset; /* addr - offset is the symbol's (or placeholder's)
                       address */
} snap__cs_line_t;

/* Parses line[0..len) (a trailing newline is allowed). False for anything
   not in the layout above. Allocates nothing. */
bool snap__cs_line_parse(const char *line, size_t len, snap__cs_line_t *out);

#endif /* SNAP_PLATFORM_DARWIN_CALLSTACK_LINES_H */
