/*
 * cache_admit.c — the symbol cache's doorkeeper: which missed stacks the
 * cache takes in. A stack is cached on its SECOND sighting, not its first.
 *
 * Why: a miss that is cached costs 1.5-4x one that is not (issue 26, goal
 * 1; a 60 k-function library: ~3 900 instructions against ~2 070): the
 * shared table's probe (a stripe lock), interning every name (the shared
 * strings' lock, twice), the insertion (the stripe again, the index, the
 * front's fill) and the trims, and the cache's heap grows by the stack.
 * Most of a cold workload's stacks are never asked for again (a lag
 * report's, a one-off print, a bench's fresh addresses), and a hook's
 * repeated call site pays one miss more before it hits as before. So, as
 * TinyLFU's doorkeeper does, the first sighting of a key only records it
 * here and is answered the way the cache-off path answers (a stack with its
 * own strings: stack.h; no interning, no insertion, no eviction, no front
 * fill, and no probe of the shared table, which cannot hold a key never
 * seen); a key seen before is admitted as every miss was before.
 *
 * The record is a Bloom filter of the keys, two generations of DOOR_WORDS
 * 64-bit words each (16 KiB of static memory, never the heap: not counted
 * in the cap, as the stripes themselves are not). A key sets two bits in
 * one word (one cache line touched, one store); "seen" means both
 * bits set in either generation. After DOOR_WINDOW first sightings the
 * older generation is cleared and becomes the current one, so a key is
 * remembered for at least DOOR_WINDOW first sightings of other keys and the
 * filter never fills (at most 2 x DOOR_WINDOW keys in it: a false "seen",
 * which only admits a stack as before: 1.8 % of keys in test_cache_admit,
 * with DOOR_WINDOW 4096, 8 KiB a generation and two bits a key). A key the
 * filter forgot while its stack is still in the table is named once more
 * the cache-off way (the shared table is probed again from its next
 * sighting); its thread's front still answers it meanwhile.
 *
 * Lock-free (relaxed atomics: a lost bit or a stale word only changes
 * which stack is cached, never an answer), so fork leaves nothing held and
 * a signal-interrupted caller holds nothing. A cap of 0 forgets
 * everything (snap__cache_admit_forget).
 *
 * Owns: the filter and its count of first sightings (the stats' misses
 * that never reached the shared table). Must not: decide anything but
 * admission (hits are cache.c's and cache_front.c's).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/cache.h"
#include "symbols/cache_parts.h"

#define DOOR_WORDS 1024u  /* per generation: 64 Ki bits, 8 KiB */
#define DOOR_WINDOW 4096u /* first sightings per generation */

static _Atomic uint64_t g_door[2][DOOR_WORDS];
static atomic_uint g_door_gen;              /* g_door[gen & 1] is current */
static atomic_uint_fast64_t g_first_sights; /* ever: the stats' misses */
static atomic_bool g_admit_all;             /* the switch: every miss cached */

/* The word index and the two bits of key (the same in both
   generations). Keys are avalanched hashes, but the test hook's mask
   (snap__cache_set_key_mask) can leave a few bits only: a multiply
   spreads them over the word index and bit positions. */
static inline unsigned door_slot(uint64_t key, uint64_t *bits) {
  uint64_t h = (key ^ (key >> 31)) * 0x9E3779B97F4A7C15ull;
  unsigned b0 = (unsigned)(h >> 20) & 63; /* two different bits */
  unsigned b1 = (b0 + 1 + (unsigned)((h >> 26) % 63)) & 63;
  *bits = (1ull << b0) | (1ull << b1);
  return (unsigned)(h >> 54); /* the top 10 bits: DOOR_WORDS */
}
_Static_assert(DOOR_WORDS == 1u << 10, "door_slot takes the top 10 bits");

/* Clears words of generation gen, which becomes the current one. Racing
   setters may lose a bit or keep one: admission only. */
static void door_clear(unsigned gen) {
  for (unsigned i = 0; i < DOOR_WORDS; i++)
    atomic_store_explicit(&g_door[gen & 1][i], 0, memory_order_relaxed);
}

bool snap__cache_admits(uint64_t key) {
  if (atomic_load_explicit(&g_admit_all, memory_order_relaxed))
    return true;
  unsigned gen = atomic_load_explicit(&g_door_gen, memory_order_relaxed);
  uint64_t bits;
  unsigned at = door_slot(key, &bits);
  _Atomic uint64_t *cur = &g_door[gen & 1][at];
  _Atomic uint64_t *old = &g_door[(gen + 1) & 1][at];
  /* Seen: only loads, so that a key asked again and again (a stack the
     table holds, probed by threads whose fronts miss) writes nothing
     shared. */
  uint64_t word = atomic_load_explicit(cur, memory_order_relaxed);
  if ((word & bits) == bits ||
      (atomic_load_explicit(old, memory_order_relaxed) & bits) == bits)
    return true;
  /* A plain store, not an atomic OR (a locked instruction on every cold
     lookup): a racing thread's bits lost here only make its key's next
     sighting a first one again, named uncached once more. */
  atomic_store_explicit(cur, word | bits, memory_order_relaxed);
  uint64_t n =
      atomic_fetch_add_explicit(&g_first_sights, 1, memory_order_relaxed) + 1;
  if (n % DOOR_WINDOW == 0) { /* one thread ages it: the one that counted */
    unsigned next = atomic_fetch_add(&g_door_gen, 1) + 1;
    door_clear(next);
  }
  return false;
}

void snap__cache_admit_forget(void) {
  door_clear(0);
  door_clear(1);
}

uint64_t snap__cache_admit_refused(void) {
  return atomic_load_explicit(&g_first_sights, memory_order_relaxed);
}

void snap__cache_set_admit_all(bool on) { atomic_store(&g_admit_all, on); }
