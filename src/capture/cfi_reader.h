/*
 * cfi_reader.h — the bounded byte reader cfi.c and cfi_program.c read
 * unwind tables through: little-endian fields, LEB128 numbers and
 * DW_EH_PE_* pointer encodings, each checked against [lo, hi), the
 * segment holding the tables, and, for a table the image table did not
 * know (live_images.h: read_safely), copied through snap__plat_read, which
 * cannot fault.
 *
 * Owns: rd_t and its readers, static inline so that every caller's
 * constant-size read folds to one load, as it did when both users were
 * one file. Must not: read a byte outside [lo, hi) (a failed check sets
 * bad, and every later read returns 0), call libc (no memcpy, no struct
 * copy large enough to become one: the stopped window), or be included
 * outside the call-frame-information reader.
 */
#ifndef SNAP_CAPTURE_CFI_READER_H
#define SNAP_CAPTURE_CFI_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/platform.h"

/* Bounded byte reader over one segment; with `safe`, through a window of
   WINDOW bytes copied by snap__plat_read (on Linux a process_vm_readv
   system call, ~1 us: a copy per field would make one lookup cost ms). */
#define WINDOW 64
typedef struct rd {
  uintptr_t p, lo, hi;
  bool bad;
  bool safe;
  uintptr_t win_at; /* the window holds [win_at, win_at + win_len) */
  size_t win_len;
  uint8_t win[WINDOW];
} rd_t;

static inline bool rd_ok(rd_t *r, size_t n) {
  if (r->bad || r->p < r->lo || r->p > r->hi || r->hi - r->p < n) {
    r->bad = true;
    return false;
  }
  return true;
}

/* Unaligned little-endian loads (the tables pack their fields). Not
   memcpy: at -O0 and under ThreadSanitizer that is a call into libc (or the
   sanitizer's interceptor), and this file promises none. Loads through
   these types are one instruction at every optimisation level; may_alias
   because the bytes are not objects of these types. */
typedef uint16_t __attribute__((aligned(1), may_alias)) u16_bytes;
typedef uint32_t __attribute__((aligned(1), may_alias)) u32_bytes;
typedef uint64_t __attribute__((aligned(1), may_alias)) u64_bytes;

/* n (<= 8) bytes at r->p, little-endian, through the window, refilled
   from r->p when it does not hold them; a refill that meets unmapped memory
   retries with just the n bytes (a table may end right before a hole).
   Assembled by shifts: a byte-copy loop could become a memcpy call. */
static __attribute__((noinline)) uint64_t rd_window(rd_t *r, size_t n) {
  if (r->p < r->win_at || r->p - r->win_at > r->win_len ||
      r->win_len - (r->p - r->win_at) < n) {
    size_t len = r->hi - r->p < WINDOW ? (size_t)(r->hi - r->p) : WINDOW;
    if (!snap__plat_read(r->p, r->win, len)) {
      len = n;
      if (!snap__plat_read(r->p, r->win, len)) {
        r->win_len = 0;
        r->bad = true;
        return 0;
      }
    }
    r->win_at = r->p;
    r->win_len = len;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++)
    v |= (uint64_t)r->win[r->p - r->win_at + i] << (8 * i);
  return v;
}

/* Inlined: every caller passes a constant n, so the switch folds to one
   load. Little-endian targets only (x86_64, arm64). */
static inline __attribute__((always_inline)) uint64_t rd_u(rd_t *r, size_t n) {
  if (!rd_ok(r, n))
    return 0;
  uint64_t v;
  if (r->safe) {
    v = rd_window(r, n);
    if (r->bad)
      return 0;
    r->p += n;
    return v;
  }
  switch (n) {
  case 1: v = *(const uint8_t *)r->p; break;
  case 2: v = *(const u16_bytes *)r->p; break;
  case 4: v = *(const u32_bytes *)r->p; break;
  default: v = *(const u64_bytes *)r->p; break; /* 8: the only other size */
  }
  r->p += n;
  return v;
}

static inline uint8_t rd_u8(rd_t *r) { return (uint8_t)rd_u(r, 1); }

static inline uint64_t rd_uleb(rd_t *r) {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    uint8_t b = rd_u8(r);
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80) || r->bad)
      return v;
  }
  r->bad = true; /* longer than any 64-bit value */
  return 0;
}

static inline int64_t rd_sleb(rd_t *r) {
  int64_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    if (shift >= 64) {
      r->bad = true;
      return 0;
    }
    b = rd_u8(r);
    v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
    shift += 7;
  } while ((b & 0x80) && !r->bad);
  if (shift < 64 && (b & 0x40))
    v = (int64_t)((uint64_t)v | (~(uint64_t)0 << shift)); /* sign-extend */
  return v;
}

/* Factored offsets times alignment factors. Hostile tables can make the
   product overflow; wrap (as the hardware would) instead of invoking
   undefined behaviour, and let the range checks reject the result. */
static inline int64_t scaled(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* DW_EH_PE_* pointer encodings. */
#define PE_OMIT 0xff
#define PE_FMT(e) ((e)&0x0f)
#define PE_APP(e) ((e)&0x70)
#define PE_INDIRECT 0x80

static inline uint64_t rd_encoded(rd_t *r, uint8_t enc, uintptr_t datarel) {
  if (enc == PE_OMIT) {
    r->bad = true;
    return 0;
  }
  uintptr_t at = r->p;
  uint64_t v;
  switch (PE_FMT(enc)) {
  case 0x00: v = rd_u(r, sizeof(uintptr_t)); break; /* absptr */
  case 0x01: v = rd_uleb(r); break;
  case 0x02: v = rd_u(r, 2); break;
  case 0x03: v = rd_u(r, 4); break;
  case 0x04: v = rd_u(r, 8); break;
  case 0x09: v = (uint64_t)rd_sleb(r); break;
  case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_u(r, 2); break;
  case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_u(r, 4); break;
  case 0x0c: v = rd_u(r, 8); break;
  default: r->bad = true; return 0;
  }
  switch (PE_APP(enc)) {
  case 0x00: break;
  case 0x10: v += at; break;        /* pcrel */
  case 0x30: v += datarel; break;   /* datarel: from the .eh_frame_hdr */
  default: r->bad = true; return 0; /* textrel/funcrel/aligned: unused */
  }
  if (enc & PE_INDIRECT)
    r->bad = true; /* would dereference a data pointer: not needed here */
  return v;
}

#endif /* SNAP_CAPTURE_CFI_READER_H */
