/*
 * compact_unwind.c — function bounds from an image's __unwind_info (Apple's
 * compact unwind tables), for snap__plat_function_bounds: what tells a
 * stale link register (it points into the sampled function itself) from a
 * live one when an image has no call-frame information to ask.
 *
 * The section (<mach-o/compact_unwind_encoding.h>, version 1; read the same
 * way by LLVM libunwind's UnwindCursor and llvm-objdump --unwind-info):
 *   header:      version, common encodings (offset, count), personalities
 *                (offset, count), first-level index (offset, count);
 *   first level: count entries of {functionOffset, secondLevelPageOffset,
 *                lsdaIndexOffset}, sorted; the last is a sentinel whose
 *                functionOffset is the end of the last function;
 *   second level, one page per first-level entry, either
 *     regular (kind 2):    {kind, entryPageOffset:16, entryCount:16}, then
 *                          entries {functionOffset, encoding}, or
 *     compressed (kind 3): {kind, entryPageOffset:16, entryCount:16,
 *                          encodingsPageOffset:16, encodingsCount:16}, then
 *                          32-bit entries: low 24 bits the function's offset
 *                          from its first-level entry's functionOffset, high
 *                          8 bits an encoding index.
 * All function offsets are from the image's base (its Mach-O header). An
 * entry runs to the next entry's offset, the last of a page to the next
 * first-level offset.
 *
 * Lookup: one read of the header; in each level, the last entry whose
 * offset is <= the target, found by probing single 4-byte offsets until at
 * most CHUNK candidates remain, then one read of those (and the next entry,
 * the end). A real table of a few hundred pages costs 4-6 reads. Sizes and
 * offsets come from memory an unload can free or anyone can craft: every
 * range is checked against the section size before it is read, and the
 * answer must satisfy page start <= start <= target < end <= page end, so
 * an unsorted or lying table gives "unknown", never a read outside the
 * section or bounds that do not hold the pc.
 *
 * Encodings are not read: an entry with no unwind encoding still bounds the
 * code it covers. Adjacent functions that unwind alike may share one entry
 * (the linker folds them), so the bounds can span several functions.
 *
 * Must not: name an Apple API or header (the lookup is tested on Linux),
 * read the section except through the read function (snap__plat_read on
 * the device: an image can be unmapped under us), allocate or lock.
 */
#include "platform/darwin/compact_unwind.h"

#include <string.h>

#include "platform/platform.h"

#define VERSION 1u
#define HEADER_SIZE 28u /* struct unwind_info_section_header */
#define FIRST_SIZE 12u  /* struct unwind_info_section_header_index_entry */
#define REGULAR 2u      /* UNWIND_SECOND_LEVEL_REGULAR */
#define COMPRESSED 3u   /* UNWIND_SECOND_LEVEL_COMPRESSED */
#define REGULAR_SIZE 8u /* struct unwind_info_regular_second_level_entry */
#define COMPRESSED_SIZE 4u
#define PAGE_HEADER 8u /* kind, entryPageOffset, entryCount */
#define OFFSET_24 0x00ffffffu
#define CHUNK 64u /* candidates read at once: 780 bytes of stack */
#define MAX_STRIDE 12u

/* Not `struct section`: <mach-o/loader.h>'s, in the SDK's modules, would
   clash with it under clang modules (SwiftPM and CocoaPods builds). */
typedef struct unwind_section {
  snap__cu_read_fn read;
  void *ctx;
  uint64_t size;
} section_t;

static uint32_t le32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v); /* arm64 and x86_64 Mach-O: little-endian */
  return v;
}

static uint16_t le16(const unsigned char *p) {
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static bool get(const section_t *s, uint64_t off, void *dst, size_t n) {
  if (off > s->size || n > s->size - off)
    return false;
  return s->read(s->ctx, (uint32_t)off, dst, n);
}

/* An array of n entries of `stride` bytes at `at`, keyed by the 32-bit
   word each starts with: key = (word & mask) + bias. */
typedef struct array {
  uint64_t at;
  uint32_t n, stride, mask;
  uint64_t bias;
} array_t;

typedef struct hit {
  unsigned char entry[MAX_STRIDE]; /* the entry found */
  uint64_t key;                    /* its key */
  bool has_next;
  uint64_t next; /* the next entry's key, if there is one */
} hit_t;

static uint64_t key_of(const array_t *a, const unsigned char *p) {
  return (uint64_t)(le32(p) & a->mask) + a->bias;
}

/* The last entry whose key is <= target (assuming sorted keys; if they are
   not, some entry with key <= target). False if there is none, or the
   array does not fit in the section, or a read fails. */
static bool search(const section_t *s, const array_t *a, uint64_t target,
                   hit_t *h) {
  if (a->n == 0 || a->stride > MAX_STRIDE || a->at > s->size ||
      (uint64_t)a->n * a->stride > s->size - a->at)
    return false;
  uint32_t lo = 0, hi = a->n; /* the answer, if any, is in [lo, hi) */
  while (hi - lo > CHUNK) {
    uint32_t mid = lo + (hi - lo) / 2;
    unsigned char w[4];
    if (!get(s, a->at + (uint64_t)mid * a->stride, w, sizeof w))
      return false;
    if (key_of(a, w) <= target)
      lo = mid;
    else
      hi = mid;
  }
  /* [lo, hi) and the entry after them (the end of the last candidate). */
  uint32_t count = (hi < a->n ? hi + 1 : hi) - lo;
  unsigned char buf[(CHUNK + 1) * MAX_STRIDE];
  if (!get(s, a->at + (uint64_t)lo * a->stride, buf, (size_t)count * a->stride))
    return false;
  uint32_t found = UINT32_MAX;
  for (uint32_t i = 0; i < hi - lo; i++)
    if (key_of(a, buf + (size_t)i * a->stride) <= target)
      found = i;
  if (found == UINT32_MAX)
    return false;
  const unsigned char *e = buf + (size_t)found * a->stride;
  memcpy(h->entry, e, a->stride);
  h->key = key_of(a, e);
  h->has_next = found + 1 < count;
  h->next = h->has_next ? key_of(a, e + a->stride) : 0;
  return true;
}

bool snap__cu_find(snap__cu_read_fn read, void *ctx, size_t size,
                   uint64_t target, uint32_t *start, uint32_t *end) {
  if (!read || size < HEADER_SIZE || size > UINT32_MAX || target > UINT32_MAX)
    return false;
  section_t s = {read, ctx, size};
  unsigned char hdr[HEADER_SIZE];
  if (!get(&s, 0, hdr, sizeof hdr) || le32(hdr) != VERSION)
    return false;

  /* First level: the sentinel is searched too; landing on it means the
     target is at or past the end of the last function. */
  array_t first = {le32(hdr + 20), le32(hdr + 24), FIRST_SIZE, UINT32_MAX, 0};
  hit_t page;
  if (first.n < 2 || !search(&s, &first, target, &page) || !page.has_next ||
      target >= page.next)
    return false;
  uint64_t page_lo = page.key, page_hi = page.next;
  uint64_t page_at = le32(page.entry + 4);

  unsigned char ph[PAGE_HEADER];
  if (page_at == 0 || !get(&s, page_at, ph, sizeof ph))
    return false;
  array_t second = {page_at + le16(ph + 4), le16(ph + 6), 0, UINT32_MAX, 0};
  if (le32(ph) == REGULAR) {
    second.stride = REGULAR_SIZE;
  } else if (le32(ph) == COMPRESSED) {
    second.stride = COMPRESSED_SIZE;
    second.mask = OFFSET_24;
    second.bias = page_lo;
  } else {
    return false;
  }
  hit_t fn;
  if (!search(&s, &second, target, &fn))
    return false;
  uint64_t lo = fn.key, hi = fn.has_next ? fn.next : page_hi;
  if (lo < page_lo || hi > page_hi || !(lo <= target && target < hi))
    return false;
  *start = (uint32_t)lo;
  *end = (uint32_t)hi;
  return true;
}

/* The section is read in place, in the image: through snap__plat_read,
   which survives the image being unmapped under us. */
static bool read_mapped(void *ctx, uint32_t off, void *dst, size_t n) {
  return snap__plat_read(*(const uintptr_t *)ctx + off, dst, n);
}

bool snap__plat_function_bounds(uintptr_t index, size_t index_size,
                                uintptr_t base, uintptr_t pc, uintptr_t *start,
                                uintptr_t *end) {
  if (!index || !index_size || pc < base || !start || !end)
    return false;
  uint32_t lo, hi;
  if (!snap__cu_find(read_mapped, &index, index_size, (uint64_t)(pc - base),
                     &lo, &hi))
    return false;
  *start = base + lo;
  *end = base + hi;
  return true;
}
