/*
 * pure_seam.c — one entry, snap_emu_pure, over the Apple backend's pure
 * functions (src/platform/darwin/: runloop_nesting.c, callstack_lines.c,
 * compact_unwind.c, wait_abi.c), for run_emulated.py's SDK part: the same
 * file is compiled against the iPhoneOS SDK's headers into the emulated
 * Mach-O image and by the host compiler into host_pure.c's program, and
 * both are given the same words in the same arena (an address both map).
 *
 * Every input and output is a 64-bit word; pointers are arena addresses.
 * The op's layout is written at each case below and in run_emulated.py.
 * Returns the number of output words.
 */
#include "pure_seam.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/darwin/callstack_lines.h"
#include "platform/darwin/compact_unwind.h"
#include "platform/darwin/runloop_nesting.h"
#include "platform/darwin/wait_abi.h"
#include "platform/platform.h"

/* The arena's readable parts for the wait decoder, and its threads. */
typedef struct wait_world {
  const uint64_t *regions; /* lo, hi pairs */
  uint64_t n_regions;
  const uint64_t *threads; /* port, tid pairs */
  uint64_t n_threads;
  uint64_t reads;
} wait_world_t;

static bool w_read(void *ctx, uintptr_t addr, void *dst, size_t n) {
  wait_world_t *w = ctx;
  w->reads++;
  for (uint64_t i = 0; i < w->n_regions; i++) {
    uint64_t lo = w->regions[2 * i], hi = w->regions[2 * i + 1];
    if (addr >= lo && addr <= hi && n <= hi - addr) {
      const volatile unsigned char *s = (const volatile unsigned char *)addr;
      unsigned char *d = dst;
      for (size_t k = 0; k < n; k++)
        d[k] = s[k];
      return true;
    }
  }
  return false;
}

static bool w_port(void *ctx, uint32_t port, snap_thread_t *out) {
  wait_world_t *w = ctx;
  for (uint64_t i = 0; i < w->n_threads; i++)
    if (w->threads[2 * i] == port) {
      *out = (snap_thread_t)port;
      return true;
    }
  return false;
}

static bool w_tid(void *ctx, uint64_t tid, snap_thread_t *out) {
  wait_world_t *w = ctx;
  for (uint64_t i = 0; i < w->n_threads; i++)
    if (w->threads[2 * i + 1] == tid) {
      *out = (snap_thread_t)w->threads[2 * i];
      return true;
    }
  return false;
}

/* compact_unwind.c's snap__plat_function_bounds reads the section through
   the checked read: here, anything inside the arena. */
bool snap__plat_read(uintptr_t addr, void *dst, size_t n) {
  if (addr < SNAP_EMU_ARENA || addr >= SNAP_EMU_ARENA + SNAP_EMU_ARENA_SIZE ||
      n > SNAP_EMU_ARENA + SNAP_EMU_ARENA_SIZE - addr)
    return false;
  const volatile unsigned char *s = (const volatile unsigned char *)addr;
  unsigned char *d = dst;
  for (size_t k = 0; k < n; k++)
    d[k] = s[k];
  return true;
}

/* The compact-unwind section, read from the arena. */
static bool cu_read(void *ctx, uint32_t off, void *dst, size_t n) {
  const volatile unsigned char *s = (const unsigned char *)ctx + off;
  unsigned char *d = dst;
  for (size_t k = 0; k < n; k++)
    d[k] = s[k];
  return true;
}

uint64_t snap_emu_pure(uint64_t op, const uint64_t *in, uint64_t *out) {
  switch (op) {
  case SNAP_EMU_OP_RUNLOOP: {
    /* in: depth, busy, n, activity[n]. out: verdict[n], depth, busy. */
    snap__rl_nesting_t n;
    snap__rl_nesting_init(&n, (unsigned)in[0], in[1] != 0);
    uint64_t k = in[2];
    for (uint64_t i = 0; i < k; i++)
      out[i] = (uint64_t)snap__rl_nesting_step(&n, (unsigned)in[3 + i]);
    out[k] = n.depth;
    out[k + 1] = n.busy;
    return k + 2;
  }
  case SNAP_EMU_OP_CSLINE: {
    /* in: line address, length. out: ok, index, image offset in the line
       (~0: none), image length, addr, symbol offset (~0), symbol length,
       offset. */
    const char *line = (const char *)(uintptr_t)in[0];
    snap__cs_line_t l = {0, NULL, 0, 0, NULL, 0, 0};
    bool ok = snap__cs_line_parse(line, (size_t)in[1], &l);
    out[0] = ok;
    out[1] = ok ? l.index : 0;
    out[2] = ok && l.image ? (uint64_t)(l.image - line) : ~(uint64_t)0;
    out[3] = ok ? l.image_len : 0;
    out[4] = ok ? l.addr : 0;
    out[5] = ok && l.symbol ? (uint64_t)(l.symbol - line) : ~(uint64_t)0;
    out[6] = ok ? l.symbol_len : 0;
    out[7] = ok ? l.offset : 0;
    return 8;
  }
  case SNAP_EMU_OP_UNWIND: {
    /* in: section address, size, image base, n, target[n] (offsets from
       the base). out per target: snap__cu_find's found, start, end, then
       snap__plat_function_bounds's (what the walker asks on Apple, reading
       through snap__plat_read) found, start, end. */
    void *sec = (void *)(uintptr_t)in[0];
    uint64_t k = in[3];
    for (uint64_t i = 0; i < k; i++) {
      uint32_t start = 0, end = 0;
      bool found =
          snap__cu_find(cu_read, sec, (size_t)in[1], in[4 + i], &start, &end);
      out[6 * i] = found;
      out[6 * i + 1] = found ? start : 0;
      out[6 * i + 2] = found ? end : 0;
      uintptr_t s = 0, e = 0;
      found = snap__plat_function_bounds(
          (uintptr_t)in[0], (size_t)in[1], (uintptr_t)in[2],
          (uintptr_t)(in[2] + in[4 + i]), &s, &e);
      out[6 * i + 3] = found;
      out[6 * i + 4] = found ? s : 0;
      out[6 * i + 5] = found ? e : 0;
    }
    return 6 * k;
  }
  case SNAP_EMU_OP_WAIT: {
    /* in: arch, waiter, source, pc, nr, args[6], n_regions, (lo, hi)...,
       n_threads, (port, tid)... out: kind, owner_state, owner, fd,
       address, syscall, args[6], reads. */
    wait_world_t w = {0, 0, 0, 0, 0};
    w.n_regions = in[11];
    w.regions = in + 12;
    w.n_threads = in[12 + 2 * w.n_regions];
    w.threads = in + 13 + 2 * w.n_regions;
    snap__darwin_wait_env_t env = {(unsigned)in[0], w_read, w_port, w_tid, &w};
    snap__plat_wait_regs_t regs;
    regs.source = (uint32_t)in[2];
    regs.pc = (uintptr_t)in[3];
    regs.nr = (int64_t)in[4];
    for (int i = 0; i < 6; i++)
      regs.args[i] = in[5 + i];
    snap_wait_t r;
    volatile unsigned char *p = (volatile unsigned char *)&r;
    for (size_t i = 0; i < sizeof r; i++)
      p[i] = 0xa5; /* every field must be written */
    r.size = sizeof r;
    snap__darwin_wait_abi_decode(&env, (snap_thread_t)in[1], &regs, &r);
    out[0] = r.kind;
    out[1] = r.owner_state;
    out[2] = (uint64_t)r.owner;
    out[3] = (uint64_t)(int64_t)r.fd;
    out[4] = r.address;
    out[5] = (uint64_t)r.syscall;
    for (int i = 0; i < 6; i++)
      out[6 + i] = r.args[i];
    out[12] = w.reads;
    return 13;
  }
  default: return 0;
  }
}
