/*
 * emu_seam.h — what the emulated Apple walker (run_emulated.py) and its host
 * twin (host_walk.c) share: the world a walk runs in (the memory regions
 * laid out for it, the image table with each image's __unwind_info,
 * whether a Swift task runs) and one walk's call block. Both are plain 64-bit
 * words, so the harness writes them into the emulated Mach-O image's memory and
 * the host program reads them from a file with the same layout on both sides.
 *
 * emu_seam.c is the platform seam (platform.h) and the image table
 * (images.h) over this world: the same file in both builds, so the two
 * walkers differ only in the portable core's machine code.
 */
#ifndef SNAP_EMU_SEAM_H
#define SNAP_EMU_SEAM_H

#include <stdint.h>

#define SNAP_EMU_REGIONS 8
#define SNAP_EMU_IMAGES 4
#define SNAP_EMU_MAX_PCS 64

/* Region kinds: the walked thread's stack (bounds known, direct reads), or
   memory only the checked read may touch (heap, another stack). */
#define SNAP_EMU_STACK 1u
#define SNAP_EMU_HEAP 2u

/* Which walk entry a case calls. */
#define SNAP_EMU_BOUNDED 0u  /* snap__walk_bounded, hi from the case */
#define SNAP_EMU_READERS 1u  /* snap__walk_bounded_readers: no fast path */
#define SNAP_EMU_PLATFORM 2u /* snap__walk: bounds from the seam */

struct snap_emu_region {
  uint64_t lo, hi, kind;
};

/* An image: its text [start, end) from its load address start, and where
   a copy of its __unwind_info lies in the laid-out memory (0: none). */
struct snap_emu_image {
  uint64_t start, end, in_app, unwind_info, unwind_info_size;
};

struct snap_emu_world {
  uint64_t n_regions;
  struct snap_emu_region regions[SNAP_EMU_REGIONS];
  uint64_t n_images;
  struct snap_emu_image images[SNAP_EMU_IMAGES];
  uint64_t async_active; /* snap__plat_async_task_active's answer */
  uint64_t reads;        /* checked reads made (the harness reads it) */
};

struct snap_emu_call {
  uint64_t pc, sp, fp, lr, lr_valid, exact, flags, hi, max, skip, entry;
  uint64_t n; /* out: pcs written */
  uint64_t pcs[SNAP_EMU_MAX_PCS];
};

extern struct snap_emu_world snap_emu_world;

/* Runs the walk call->entry names with the case's registers, into
   call->pcs; returns call->n. */
int snap_emu_walk(struct snap_emu_call *call);

#endif /* SNAP_EMU_SEAM_H */
