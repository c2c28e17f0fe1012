/*
 * live_images.c — the slow half of live_images.h: a pc outside every image
 * the walk has met so far is asked of the platform, and the answer kept
 * (once the memo is full, the slot after the last one used is reused); and
 * the record of an image the table does not know yet.
 *
 * Must not: lock, allocate, or read the loader's records. [signal-safe]
 */
#include "capture/live_images.h"

#include <string.h>

/* Makes e[i] the last answer; its unpacked copy is written only here. */
static const snap__plat_ident_t *use(snap__live_memo_t *m, int i) {
  m->last = i;
  m->last_lo = m->e[i].lo;
  m->last_span = m->e[i].hi - m->e[i].lo;
  m->last_id = m->e[i].id;
  return &m->e[i];
}

const snap__plat_ident_t *snap__live_lookup_slow(snap__live_memo_t *m,
                                                 uintptr_t pc,
                                                 snap__plat_ident_t *tmp) {
  for (int i = 0; i < m->n; i++)
    if (pc - m->e[i].lo < m->e[i].hi - m->e[i].lo)
      return use(m, i);
  snap__plat_image_ident(pc, tmp);
  if (tmp->lo >= tmp->hi)
    return tmp; /* an answer for pc alone: nothing to remember */
  int i = m->n < SNAP__LIVE_MEMO ? m->n++ : (m->last + 1) % SNAP__LIVE_MEMO;
  m->e[i] = *tmp;
  return use(m, i);
}

const snap__image_t *snap__live_unwind_record(snap__live_memo_t *m,
                                              uintptr_t pc,
                                              snap__image_t *scratch) {
  snap__plat_ident_t tmp;
  const snap__plat_ident_t *now = snap__live_lookup(m, pc, &tmp);
  if (now->id == SNAP__IDENT_NONE || now->id == SNAP__IDENT_UNKNOWN ||
      !now->unwind_hdr || now->lo >= now->hi)
    return NULL;
  memset(scratch, 0, sizeof *scratch);
  scratch->start = now->lo;
  scratch->end = now->hi;
  scratch->unwind_hdr = now->unwind_hdr;
  scratch->unwind_lo = now->lo;
  scratch->unwind_hi = now->hi;
  scratch->ident = now->id;
  scratch->read_safely = true;
  return scratch;
}
