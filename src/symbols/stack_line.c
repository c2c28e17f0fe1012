/*
 * stack_line.c — one frame's line, as snap_stack_line hands it out.
 *
 * Lines follow Apple's callStackSymbols layout, which crash-report readers
 * and tools already parse: index padded to 4, image name padded to 35, the
 * pc as 0x + 16 hex digits, then "symbol + offset" (offset from the
 * function's first byte to the pc as captured, as Apple prints it), or
 * "image + offset-in-image" when the symbol is unknown, or "0x0 + pc" when
 * no image holds the pc.
 *
 * Must not: allocate or lock (the lines view measures every line with it,
 * then writes them all into one block).
 */
#include <string.h>

#include "decimal.h"
#include "symbols/stack.h"

/* A line is built twice per frame — measured, then written — on every
   cache miss, so it is formatted by hand: snprintf's format parsing was
   half the cost of naming a stack afresh. The layout is exactly
   "%-4d%-35s 0x%016lx %s + %lu" (the tests compare with snprintf's). */
typedef struct line_out {
  char *p; /* NULL: only count */
  size_t len;
} line_out_t;

static void put(line_out_t *o, const char *s, size_t n) {
  if (o->p)
    memcpy(o->p + o->len, s, n);
  o->len += n;
}

/* s, then spaces up to width (never truncated). */
static void put_padded(line_out_t *o, const char *s, size_t width) {
  size_t n = strlen(s);
  put(o, s, n);
  for (; n < width; n++)
    put(o, " ", 1);
}

static void put_dec(line_out_t *o, uint64_t v, size_t width) {
  char tmp[SNAP__DEC_MAX];
  snap__dec_u64(tmp, v);
  put_padded(o, tmp, width);
}

static void put_hex16(line_out_t *o, uint64_t v) {
  char tmp[16];
  for (int i = 15; i >= 0; i--, v >>= 4)
    tmp[i] = "0123456789abcdef"[v & 15];
  put(o, tmp, 16);
}

size_t snap__stack_format_line(char *dst, int i, const snap_frame_t *f) {
  line_out_t o = {dst, 0};
  put_dec(&o, (uint64_t)i, 4);
  put_padded(&o, f->image, 35);
  put(&o, " 0x", 3);
  put_hex16(&o, (uint64_t)f->pc);
  put(&o, " ", 1);
  uintptr_t offset;
  if (f->symbol) {
    put_padded(&o, f->symbol, 0);
    offset = f->pc - f->symbol_addr;
  } else if (strcmp(f->image, "???") != 0) { /* base 0: a non-PIE program */
    put_padded(&o, f->image, 0);
    offset = f->pc - f->image_base;
  } else {
    put(&o, "0x0", 3);
    offset = f->pc;
  }
  put(&o, " + ", 3);
  put_dec(&o, (uint64_t)offset, 0);
  return o.len;
}
