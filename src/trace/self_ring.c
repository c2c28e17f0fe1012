/*
 * self_ring.c — the samples a thread takes of itself (its CPU-time timer's
 * handler), queued for the trace's sampler thread: one lock-free ring per
 * timed thread.
 *
 * Owns: the ring's memory layout (made whole at snap_trace_start from the
 * trace's budget), the handler's side (snap__sring_tick: walk the thread's
 * own stack from the interrupted registers into the next free entry) and
 * the sampler's side (peek, pop; newest, for a reader that holds the
 * lock the sampler pops under). Must not: allocate, lock, print or read
 * a file in snap__sring_tick, which runs in a signal handler on the
 * sampled thread (the waker's post and alarm are signal-safe).
 *
 * Single producer, single consumer: only the thread itself writes (its
 * handler cannot nest: the signal is blocked while it runs), only the
 * sampler reads. An entry takes the bytes its pcs need (a stack of 45
 * frames 384 bytes, the deepest 2 KiB), so a ring holds many of the
 * stacks threads have and the sampler wakes seldom. `head` counts bytes
 * written, `tail` bytes consumed. The producer walks straight into the
 * ring at head, so it needs the deepest entry's room there, unbroken:
 * where less is left before the ring's end, it skips to the start, and a
 * skip entry (n SKIP) marks the rest, or nothing when less than an
 * entry's head is left (both sides skip such an end alike). It writes
 * only while the room it needs is free (head - tail + room <= cap),
 * publishes the entry (its start in `newest`, then head, release), and
 * the consumer reads entries below head (acquire) and gives each back
 * with a release store of tail. A full ring drops the new sample and
 * counts it (lost): the sampler was held back longer than the ring
 * covers.
 *
 * The main thread's ring wakes the sampler (snap__sring_watch): the
 * sampler sleeps while the ticks come (schedule.c), and the
 * handler pushes the waker's alarm later, so it goes off once they stop.
 */
#include <string.h>

#include "capture/walk.h"
#include "trace/trace.h"

#define SKIP (-1000) /* n of an entry that only fills a ring's end */
#define HEAD sizeof(snap__sring_entry_t)

struct snap__sring {
  _Atomic uint64_t head, tail; /* bytes written, consumed */
  _Atomic uint64_t newest;     /* where the newest entry begins (as head) */
  _Atomic uint64_t lost;
  uint32_t cap;   /* bytes of e[], a multiple of 8 */
  unsigned flags; /* the walk's SNAP_CAPTURE_* */
  /* The sampler's waker, for the main thread's ring (snap__sring_watch;
     NULL: none), the alarm's delay, when the alarm set last goes off and
     when the last tick came (the handler's own: only it reads or writes
     them). */
  snap__waker_t *waker;
  uint64_t alarm_ns, alarm_at, tick_at;
  snap__walk_state_t walk; /* the handler's scratch: not on the stack */
  _Alignas(uintptr_t) unsigned char e[]; /* cap bytes of entries */
};

_Static_assert(HEAD % 8 == 0 && SNAP__SRING_ENTRY_MAX % 8 == 0,
               "entries keep the ring's bytes aligned for pcs");

size_t snap__sring_bytes(uint32_t cap) {
  size_t b = sizeof(snap__sring_t) + (cap & ~7u);
  return (b + 15) & ~(size_t)15;
}

snap__sring_t *snap__sring_init(void *mem, uint32_t cap, unsigned flags) {
  snap__sring_t *r = mem;
  atomic_init(&r->head, 0);
  atomic_init(&r->tail, 0);
  atomic_init(&r->newest, 0);
  atomic_init(&r->lost, 0);
  r->cap = cap & ~7u;
  r->flags = flags;
  r->waker = NULL;
  r->alarm_ns = r->alarm_at = r->tick_at = 0;
  return r;
}

void snap__sring_watch(snap__sring_t *r, snap__waker_t *w, uint64_t alarm_ns) {
  r->waker = w;
  r->alarm_ns = alarm_ns;
}

/* The bytes to skip at position `at` (bytes, as head) before an entry may
   begin: none, or all that is left before the ring's end when the deepest
   entry would not fit there whole. */
static uint32_t skip_at(const snap__sring_t *r, uint64_t at) {
  uint32_t left = r->cap - (uint32_t)(at % r->cap);
  return left < SNAP__SRING_ENTRY_MAX ? left : 0;
}

/* After a tick at now that took the ring from `was` to `fill` bytes
   waiting: the alarm pushed to alarm_ns from now when less than half of
   that would be left at the next tick (expected as far away as this one
   was from the last, unless that was more than alarm_ns: a sleep), so it
   goes off between half of alarm_ns and all of it after the last tick;
   and the sampler posted as the ring passes half full (it would
   otherwise sleep until the ticks stop, and drop those that find it
   full) and while it is full (was == fill: this tick was dropped).
   Why a push is not left to the tick before the alarm: measured on this
   VM (250 Hz ticks, 10 ms alarm), a push made with 2 ms left cost the
   handler 11-14 us, one with 6 ms left 3.6-3.8 us; so pushing at every
   tick costs 2.4-2.7 us a tick, every other tick 6.4. Likely why: with
   less than a tick left the alarm is the CPU's next timer event, and
   moving it reprograms the timer device, a trap to the hypervisor. */
static void keep_waker(snap__sring_t *r, uint64_t now, uint64_t was,
                       uint64_t fill) {
  uint64_t gap = r->tick_at && now > r->tick_at ? now - r->tick_at : 0;
  if (gap > r->alarm_ns)
    gap = 0;
  r->tick_at = now;
  if (r->alarm_at < now + gap + r->alarm_ns / 2) {
    snap__plat_waker_alarm(r->waker, r->alarm_ns);
    r->alarm_at = now + r->alarm_ns;
  }
  if ((was < r->cap / 2 && fill >= r->cap / 2) || was == fill)
    snap__plat_waker_post(r->waker);
}

void snap__sring_tick(const snap__regs_t *regs, void *ctx) {
  snap__sring_t *r = ctx;
  uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
  uint32_t skip = skip_at(r, h);
  if (h - t + skip + SNAP__SRING_ENTRY_MAX > r->cap) {
    atomic_fetch_add_explicit(&r->lost, 1, memory_order_relaxed);
    if (r->waker)
      keep_waker(r, snap__plat_now_ns(), h - t, h - t);
    return;
  }
  if (skip >= HEAD) {
    snap__sring_entry_t *k = (void *)&r->e[h % r->cap];
    k->n = SKIP;
    k->bytes = skip;
  }
  uint64_t at = h + skip;
  snap__sring_entry_t *e = (void *)&r->e[at % r->cap];
  e->t_ns = snap__plat_now_ns();
  e->cpu_ns = snap__plat_self_cpu_ns();
  /* The interrupted pc is exact (frame 0 is where the thread was). */
  e->n = regs ? snap__walk_in(&r->walk, regs, true, r->flags, e->pcs,
                              SNAP__TRACE_DEPTH_SELF, 0)
              : SNAP_ENOSTACK;
  e->bytes =
      (uint32_t)(HEAD + (e->n > 0 ? (size_t)e->n : 0) * sizeof(uintptr_t));
  atomic_store_explicit(&r->newest, at, memory_order_release);
  atomic_store_explicit(&r->head, at + e->bytes, memory_order_release);
  if (r->waker)
    keep_waker(r, e->t_ns, h - t, at + e->bytes - t);
}

/* The entry at the tail, past a skipped end (NULL: none waiting). */
static snap__sring_entry_t *at_tail(snap__sring_t *r) {
  for (;;) {
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    if (t == h)
      return NULL;
    uint32_t left = r->cap - (uint32_t)(t % r->cap);
    snap__sring_entry_t *e = (void *)&r->e[t % r->cap];
    if (left >= HEAD && e->n != SKIP)
      return e;
    /* A skipped end, marked or too short for a mark: the producer
       began its next entry at the ring's start. */
    atomic_store_explicit(&r->tail, t + left, memory_order_release);
  }
}

const snap__sring_entry_t *snap__sring_peek(snap__sring_t *r) {
  return at_tail(r);
}

const snap__sring_entry_t *snap__sring_newest(snap__sring_t *r) {
  /* Entries in [tail, head) are never written by the producer (it writes
     only into the room beyond head that tail leaves free): stable while no
     pop. An entry published after head was read is whole too (its start
     is stored after it, release). */
  uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
  uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
  if (t == h)
    return NULL;
  uint64_t at = atomic_load_explicit(&r->newest, memory_order_acquire);
  return (const snap__sring_entry_t *)(void *)&r->e[at % r->cap];
}

void snap__sring_pop(snap__sring_t *r) {
  snap__sring_entry_t *e = at_tail(r);
  if (!e)
    return;
  uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
  atomic_store_explicit(&r->tail, t + e->bytes, memory_order_release);
}

uint64_t snap__sring_lost(const snap__sring_t *r) {
  return atomic_load_explicit(&r->lost, memory_order_relaxed);
}
