/*
 * stack.c — packing named frames into one immutable, reference-counted
 * block, and the public accessors for it.
 *
 * Layout of the block: header, frames[n], lines[n] (pointers), the key's
 * pcs and image records, then the bytes of every copied string and
 * formatted line. One allocation, so a
 * stack costs one malloc and one free, and the cache can charge its exact
 * size against the memory cap.
 *
 * Lines follow Apple's callStackSymbols layout, which crash-report readers
 * and tools already parse: index padded to 4, image name padded to 35, the
 * pc as 0x + 16 hex digits, then "symbol + offset" (offset from the
 * function's first byte to the pc as captured, as Apple prints it), or
 * "image + offset-in-image" when the symbol is unknown, or "0x0 + pc" when
 * no image holds the pc.
 *
 * Must not: be called from the stopped window (allocates).
 */
#include "symbols/stack.h"

#include <stdlib.h>
#include <string.h>

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

static void put_dec(line_out_t *o, uintmax_t v, size_t width) {
  char tmp[24];
  int i = (int)sizeof tmp;
  tmp[--i] = '\0';
  do
    tmp[--i] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  put_padded(o, tmp + i, width);
}

static void put_hex16(line_out_t *o, uint64_t v) {
  char tmp[16];
  for (int i = 15; i >= 0; i--, v >>= 4)
    tmp[i] = "0123456789abcdef"[v & 15];
  put(o, tmp, 16);
}

/* Writes frame f's line at dst (or only measures, with dst NULL); returns
   its length, without the terminating NUL (which it does not write). */
static size_t format_line(char *dst, int i, const snap_frame_t *f) {
  line_out_t o = {dst, 0};
  put_dec(&o, (uintmax_t)i, 4);
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
  put_dec(&o, (uintmax_t)offset, 0);
  return o.len;
}

static size_t str_size(const char *s) { return s ? strlen(s) + 1 : 0; }

static char *copy_str(char **pool, const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = memcpy(*pool, s, n);
  *pool += n;
  return d;
}

snap_stack_t *snap__stack_pack(const snap_frame_t *frames, int n,
                               const snap__stack_key_t *key) {
  /* Every array below holds pointer-aligned members, so each starts
     pointer-aligned after the one before. */
  _Static_assert(sizeof(snap_stack_t) % sizeof(void *) == 0, "alignment");
  _Static_assert(sizeof(snap_frame_t) % sizeof(void *) == 0, "alignment");
  _Static_assert(sizeof(snap__stack_image_t) % sizeof(void *) == 0,
                 "alignment");
  size_t frames_at = sizeof(snap_stack_t);
  size_t lines_at = frames_at + (size_t)n * sizeof(snap_frame_t);
  size_t pcs_at = lines_at + (size_t)n * sizeof(char *);
  size_t images_at = pcs_at + (size_t)key->n * sizeof(uintptr_t);
  size_t pool_at =
      images_at + (size_t)key->n_images * sizeof(snap__stack_image_t);
  size_t total = pool_at;
  for (int i = 0; i < n; i++)
    total += str_size(frames[i].symbol) + str_size(frames[i].source_file) +
             format_line(NULL, i, &frames[i]) + 1;

  char *block = malloc(total);
  if (!block)
    return NULL;
  snap_stack_t *s = (snap_stack_t *)(void *)block;
  atomic_init(&s->refs, 1);
  s->count = n;
  s->bytes = total;
  s->frames = (snap_frame_t *)(void *)(block + frames_at);
  s->lines = (const char **)(void *)(block + lines_at);
  s->key = *key;
  uintptr_t *pcs = (uintptr_t *)(void *)(block + pcs_at);
  snap__stack_image_t *images =
      (snap__stack_image_t *)(void *)(block + images_at);
  if (key->n)
    memcpy(pcs, key->pcs, (size_t)key->n * sizeof *pcs);
  if (key->n_images)
    memcpy(images, key->images, (size_t)key->n_images * sizeof *images);
  s->key.pcs = pcs;
  s->key.images = images;
  atomic_init(&s->checked_generation, key->generation);
  char *pool = block + pool_at;
  for (int i = 0; i < n; i++) {
    snap_frame_t *f = &s->frames[i];
    *f = frames[i];
    f->symbol = copy_str(&pool, frames[i].symbol);
    f->source_file = copy_str(&pool, frames[i].source_file);
    size_t len = format_line(pool, i, f);
    pool[len] = '\0';
    s->lines[i] = pool;
    pool += len + 1;
  }
  return s;
}

snap_stack_t *snap__stack_retain(const snap_stack_t *cs) {
  snap_stack_t *s = (snap_stack_t *)cs;
  atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
  return s;
}

void snap_stack_release(const snap_stack_t *cs) {
  snap_stack_t *s = (snap_stack_t *)cs;
  if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
    free(s);
}

int snap_stack_count(const snap_stack_t *s) { return s ? s->count : 0; }

const snap_frame_t *snap_stack_frame(const snap_stack_t *s, int i) {
  return s && i >= 0 && i < s->count ? &s->frames[i] : NULL;
}

const char *snap_stack_line(const snap_stack_t *s, int i) {
  return s && i >= 0 && i < s->count ? s->lines[i] : NULL;
}
