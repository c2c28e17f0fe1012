/*
 * callstack_lines.h — reads one line of Apple's call-stack text (the
 * elements of +[NSThread callStackSymbols], _NSCallStackArray's
 * descriptions, backtrace_symbols) back into its parts.
 *
 * The layout is Libc's "%-4d%-35s 0x%016lx %s + %lu": index, image base
 * name padded to 35 columns (longer names push the rest right; names may
 * hold spaces), the address, then a symbol and the decimal offset of the
 * address from it. Where the loader knows no symbol the "symbol" is a hex
 * number ("0x0 + <address>" when the image is unknown too, "???" for the
 * image then).
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
  const char *symbol; /* inside the line; NULL when no name is known (a hex
                         placeholder or "<redacted>") */
  size_t symbol_len;
  uintptr_t offset; /* addr - offset is the symbol's (or placeholder's)
                       address */
} snap__cs_line_t;

/* Parses line[0..len) (a trailing newline is allowed). False for anything
   not in the layout above. Allocates nothing. */
bool snap__cs_line_parse(const char *line, size_t len, snap__cs_line_t *out);

#endif /* SNAP_PLATFORM_DARWIN_CALLSTACK_LINES_H */
