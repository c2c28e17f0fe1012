/*
 * live_images.h — which image holds a pc right now, asked of the platform
 * lock-free and remembered for one walk.
 *
 * Why: the image table a walk reads (images.c) is only as fresh as its
 * last refresh, and snap_capture_self cannot refresh it (a refresh takes
 * the loader's lock; the capture is async-signal-safe). After a dlclose
 * and a dlopen at the same address the table still lists the old library
 * there: its unwind-table address may now be another library's bytes or
 * unmapped memory, and rules cached for its pcs would be served for the
 * new library's. So every table range is checked against the platform's
 * live identity for the pc before its tables are read
 * (snap__live_image), and every cached rule is filed under the identity
 * of the image it came from (snap__live_salt): a rule of an unloaded
 * image matches no live one. Where the table has no valid range (a library
 * loaded since the last refresh: its constructor capturing, say), the
 * platform's answer also gives the image's unwind tables; they are read
 * through snap__plat_read, which cannot fault (snap__live_unwind_record).
 *
 * Cost: one snap__plat_image_ident per distinct image per walk (glibc's
 * _dl_find_object: ~6 ns), then a range compare per frame; frames of one
 * image come in runs, so the last answer is tried first.
 *
 * Must not: lock, allocate, or read the loader's records. [signal-safe]
 */
#ifndef SNAP_CAPTURE_LIVE_IMAGES_H
#define SNAP_CAPTURE_LIVE_IMAGES_H

#include <stdint.h>

#include "images/images.h"
#include "platform/platform.h"

#define SNAP__LIVE_MEMO 8 /* distinct images remembered per walk */

typedef struct snap__live_memo {
  /* e[last], unpacked (written only by live_images.c's use()): the
     per-frame test is one subtraction and one compare. */
  uintptr_t last_lo, last_span;
  uint64_t last_id;
  int n, last;
  snap__plat_ident_t e[SNAP__LIVE_MEMO];
} snap__live_memo_t;

static inline void snap__live_init(snap__live_memo_t *m) {
  m->last_lo = 0;
  m->last_span = 0; /* matches no pc */
  m->last_id = SNAP__IDENT_NONE;
  m->n = 0;
  m->last = 0;
}

/* The platform's answer for the image holding pc now (platform.h), kept
   in m, or in *tmp when it covers pc alone. */
const snap__plat_ident_t *snap__live_lookup_slow(snap__live_memo_t *m,
                                                 uintptr_t pc,
                                                 snap__plat_ident_t *tmp);

static inline const snap__plat_ident_t *
snap__live_lookup(snap__live_memo_t *m, uintptr_t pc, snap__plat_ident_t *tmp) {
  if (pc - m->last_lo < m->last_span)
    return &m->e[m->last];
  return snap__live_lookup_slow(m, pc, tmp);
}

static inline uint64_t snap__live_ident(snap__live_memo_t *m, uintptr_t pc) {
  if (pc - m->last_lo < m->last_span)
    return m->last_id;
  snap__plat_ident_t tmp;
  return snap__live_lookup_slow(m, pc, &tmp)->id;
}

/* The rule-cache salt for pc: the walk's salt mixed with the identity of
   pc's image, so that a rule is served only while the same image holds
   pc. */
static inline uint64_t snap__live_salt(snap__live_memo_t *m, uint64_t salt,
                                       uintptr_t pc) {
  return salt ^ snap__live_ident(m, pc);
}

/* img (the table's range for pc, may be NULL) if the image it describes
   still holds pc, else NULL: its tables are not to be read. */
static inline const snap__image_t *
snap__live_image(snap__live_memo_t *m, const snap__image_t *img, uintptr_t pc) {
  if (!img || img->ident == SNAP__IDENT_UNKNOWN)
    return img; /* the platform cannot tell (platform.h): trust the table */
  return snap__live_ident(m, pc) == img->ident ? img : NULL;
}

/* Where the table has no valid range for pc: a record made from the
   platform's answer in *scratch (its unwind tables, bounded by the whole
   mapping, read_safely set), or NULL if the platform knows no image with
   tables there. */
const snap__image_t *snap__live_unwind_record(snap__live_memo_t *m,
                                              uintptr_t pc,
                                              snap__image_t *scratch);

#endif /* SNAP_CAPTURE_LIVE_IMAGES_H */
