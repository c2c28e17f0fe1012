/*
 * pure_seam.h — the one entry of the emulated Apple backend's pure
 * functions (pure_seam.c), shared by the Mach-O image built against the SDK
 * and its host twin (host_pure.c).
 */
#ifndef SNAP_EMU_PURE_SEAM_H
#define SNAP_EMU_PURE_SEAM_H

#include <stdint.h>

#define SNAP_EMU_OP_RUNLOOP 1u /* runloop_nesting.c */
#define SNAP_EMU_OP_CSLINE 2u  /* callstack_lines.c */
#define SNAP_EMU_OP_UNWIND 3u  /* compact_unwind.c */
#define SNAP_EMU_OP_WAIT 4u    /* wait_abi.c */

/* The arena both builds map, and the most output words an op writes. */
#define SNAP_EMU_ARENA 0x30000000u
#define SNAP_EMU_ARENA_SIZE 0x400000u
#define SNAP_EMU_OUT_MAX 4096u

uint64_t snap_emu_pure(uint64_t op, const uint64_t *in, uint64_t *out);

#endif /* SNAP_EMU_PURE_SEAM_H */
