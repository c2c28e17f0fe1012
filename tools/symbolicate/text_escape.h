/*
 * text_escape.h — a string from a report, made safe to print on a
 * terminal: what a terminal would act on is written as text instead.
 */
#ifndef SNAP_TOOLS_TEXT_ESCAPE_H
#define SNAP_TOOLS_TEXT_ESCAPE_H

#include <stddef.h>

/* s[0..len) with every C0 control (newline and tab too), DEL and byte that
   is not part of well-formed UTF-8 written as \xNN, and every C1 control
   (U+0080..U+009F, which UTF-8 terminals may take as ESC sequences) as
   \u{NN}; everything else, UTF-8 included, as it is. Writes at most
   out_size - 1 bytes and a NUL (a cut never splits an escape or a UTF-8
   sequence); returns the length of the whole escaped text, as snprintf
   does: at most 4 * len. */
size_t snap__text_escape(char *out, size_t out_size, const char *s, size_t len);

/* The same into a buffer of its own (free it), NULL when out of memory. */
char *snap__text_escaped(const char *s);

#endif
