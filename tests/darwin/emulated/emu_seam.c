/*
 * emu_seam.c — the platform seam (platform.h) and the image table
 * (images.h) the portable walker needs, over the world the harness lays
 * out (emu_seam.h), and the one entry the harness calls, snap_emu_walk.
 *
 * Compiled into both the emulated Mach-O image (arm64/arm64e, freestanding,
 * run_emulated.py) and the host program (host_walk.c), from this one file:
 * whatever the two walks disagree on is the core's machine code, not the
 * seam. Where Apple's backend gives a fixed answer, this gives the same
 * one: no image identity (image_ident.c), no signal frame to decode
 * (signal_frames_darwin.c: _sigtramp's own frame record crosses it); where
 * its code is pure, it is Apple's: snap__plat_function_bounds is
 * compact_unwind.c's, reading a real __unwind_info through this file's
 * checked read.
 *
 * The checked read refuses anything outside the laid-out regions, as
 * vm_read_overwrite refuses unmapped memory: a walker that follows a
 * pointer it should not gets a refusal here, never a fault.
 */
#include "emu_seam.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/walk.h"
#include "images/images.h"
#include "platform/platform.h"

struct snap_emu_world snap_emu_world;

static const struct snap_emu_region *region_of(uintptr_t addr, size_t n) {
  for (uint64_t i = 0; i < snap_emu_world.n_regions && i < SNAP_EMU_REGIONS;
       i++) {
    const struct snap_emu_region *r = &snap_emu_world.regions[i];
    if (addr >= r->lo && addr < r->hi && r->hi - addr >= n)
      return r;
  }
  return NULL;
}

bool snap__plat_read(uintptr_t addr, void *dst, size_t n) {
  snap_emu_world.reads++;
  if (n == 0 || !region_of(addr, n))
    return false;
  /* Byte by byte: this file must not depend on memcpy's alignment. */
  const volatile unsigned char *s = (const volatile unsigned char *)addr;
  unsigned char *d = dst;
  for (size_t i = 0; i < n; i++)
    d[i] = s[i];
  return true;
}

static bool stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
  const struct snap_emu_region *r = region_of(sp, 1);
  if (!r || r->kind != SNAP_EMU_STACK)
    return false;
  *lo = sp;
  *hi = r->hi;
  return true;
}

bool snap__plat_stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
  return stack_bounds(sp, lo, hi);
}

bool snap__plat_own_stack_bounds(uintptr_t sp, uintptr_t *lo, uintptr_t *hi) {
  return stack_bounds(sp, lo, hi);
}

void snap__plat_image_ident(uintptr_t addr, snap__plat_ident_t *out) {
  (void)addr;
  *out = (snap__plat_ident_t){0, 0, SNAP__IDENT_UNKNOWN, 0};
}

bool snap__plat_sigframe_regs(uintptr_t sp, snap__regs_t *out) {
  (void)sp;
  (void)out;
  return false;
}

bool snap__plat_is_sigreturn(uintptr_t pc) {
  (void)pc;
  return false;
}

bool snap__plat_async_task_active(void) {
  return snap_emu_world.async_active != 0;
}

/* ---- The image table: the world's images, no call-frame tables (Apple's
   images have no .eh_frame_hdr), function bounds from __unwind_info
   through Apple's own lookup (compact_unwind.c, linked beside this). --- */

struct snap__images {
  uint64_t n;
  snap__image_t img[SNAP_EMU_IMAGES];
};

static struct snap__images table;

const snap__images_t *snap__images_acquire(void) {
  table.n = 0;
  for (uint64_t i = 0; i < snap_emu_world.n_images && i < SNAP_EMU_IMAGES;
       i++) {
    const struct snap_emu_image *w = &snap_emu_world.images[i];
    snap__image_t *m = &table.img[table.n++];
    /* Field by field: no memset or struct copy for the compiler to turn
       into a call. */
    m->start = w->start, m->end = w->end, m->base = w->start;
    m->unwind_hdr = m->unwind_lo = m->unwind_hi = 0;
    m->func_index = w->unwind_info;
    m->func_index_size = w->unwind_info_size;
    m->path = m->name = "image", m->build_id = NULL;
    m->ident = SNAP__IDENT_UNKNOWN, m->content = 0;
    m->size = w->end - w->start;
    m->in_app = w->in_app != 0;
    m->read_safely = false;
    m->since = 1;
  }
  return &table;
}

void snap__images_release(const snap__images_t *t) { (void)t; }

const snap__image_t *snap__images_find(const snap__images_t *t, uintptr_t pc) {
  for (uint64_t i = 0; i < t->n; i++)
    if (pc >= t->img[i].start && pc < t->img[i].end)
      return &t->img[i];
  return NULL;
}

uint64_t snap__images_generation(const snap__images_t *t) {
  (void)t;
  return 1;
}

uint64_t snap__images_current_generation(void) { return 1; }

/* ---- The entry ---------------------------------------------------------- */

int snap_emu_walk(struct snap_emu_call *call) {
  snap__regs_t regs = {call->pc, call->sp, call->fp, call->lr,
                       call->lr_valid != 0};
  uintptr_t pcs[SNAP_EMU_MAX_PCS];
  int max = call->max > SNAP_EMU_MAX_PCS ? SNAP_EMU_MAX_PCS : (int)call->max;
  int n;
  switch (call->entry) {
  case SNAP_EMU_READERS:
    n = snap__walk_bounded_readers(&regs, call->exact != 0,
                                   (unsigned)call->flags, call->hi, pcs, max,
                                   (int)call->skip);
    break;
  case SNAP_EMU_PLATFORM:
    n = snap__walk(&regs, call->exact != 0, (unsigned)call->flags, pcs, max,
                   (int)call->skip);
    break;
  default:
    n = snap__walk_bounded(&regs, call->exact != 0, (unsigned)call->flags,
                           call->hi, pcs, max, (int)call->skip);
    break;
  }
  for (int i = 0; i < n && i < SNAP_EMU_MAX_PCS; i++)
    call->pcs[i] = pcs[i];
  call->n = (uint64_t)n;
  return n;
}
