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
 * sampler reads. `head` counts entries written, `tail` entries consumed;
 * the producer fills entry head % cap only while head - tail < cap and
 * publishes it with a release store of head; the consumer reads entries
 * below head (acquire) and gives each back with a release store of tail.
 * A full ring drops the new sample and counts it (lost): the sampler was
 * held back longer than the ring covers.
 *
 * The main thread's ring wakes the sampler (snap__sring_watch): the
 * sampler sleeps while the ticks come (schedule.c), and the
 * handler pushes the waker's alarm later, so it goes off once they stop.
 */
#include <string.h>

#include "capture/walk.h"
#include "trace/trace.h"

struct snap__sring {
  _Atomic uint64_t head, tail;
  _Atomic uint64_t lost;
  uint32_t cap;
  unsigned flags; /* the walk's SNAP_CAPTURE_* */
  /* The sampler's waker, for the main thread's ring (snap__sring_watch;
     NULL: none), the alarm's delay, when the alarm set last goes off and
     when the last tick came (the handler's own: only it reads or writes
     them). */
  snap__waker_t *waker;
  uint64_t alarm_ns, alarm_at, tick_at;
  snap__walk_state_t walk; /* the handler's scratch: not on the stack */
  snap__sring_entry_t e[]; /* cap entries */
};

size_t snap__sring_bytes(uint32_t cap) {
  size_t b = sizeof(snap__sring_t) + (size_t)cap * sizeof(snap__sring_entry_t);
  return (b + 15) & ~(size_t)15;
}

snap__sring_t *snap__sring_init(void *mem, uint32_t cap, unsigned flags) {
  snap__sring_t *r = mem;
  atomic_init(&r->head, 0);
  atomic_init(&r->tail, 0);
  atomic_init(&r->lost, 0);
  r->cap = cap;
  r->flags = flags;
  r->waker = NULL;
  r->alarm_ns = r->alarm_at = r->tick_at = 0;
  return r;
}

void snap__sring_watch(snap__sring_t *r, snap__waker_t *w, uint64_t alarm_ns) {
  r->waker = w;
  r->alarm_ns = alarm_ns;
}

/* After a tick at now with `fill` entries waiting: the alarm pushed to
   alarm_ns from now when less than half of that would be left at the next
   tick (expected as far away as this one was from the last, unless that
   was more than alarm_ns: a sleep), so it goes off between half of
   alarm_ns and all of it after the last tick; and the sampler posted as
   the ring becomes half full (it would otherwise sleep until the ticks
   stop, and drop those that find it full) and while it is full. Fill
   grows by one a tick, so it meets cap / 2 on its way up.
   Why a push is not left to the tick before the alarm: measured on this
   VM (250 Hz ticks, 10 ms alarm), a push made with 2 ms left cost the
   handler 11-14 us, one with 6 ms left 3.6-3.8 us; so pushing at every
   tick costs 2.4-2.7 us a tick, every other tick 6.4. Likely why: with
   less than a tick left the alarm is the CPU's next timer event, and
   moving it reprograms the timer device, a trap to the hypervisor. */
static void keep_waker(snap__sring_t *r, uint64_t now, uint64_t fill) {
  uint64_t gap = r->tick_at && now > r->tick_at ? now - r->tick_at : 0;
  if (gap > r->alarm_ns)
    gap = 0;
  r->tick_at = now;
  if (r->alarm_at < now + gap + r->alarm_ns / 2) {
    snap__plat_waker_alarm(r->waker, r->alarm_ns);
    r->alarm_at = now + r->alarm_ns;
  }
  if (fill == r->cap / 2 || fill >= r->cap)
    snap__plat_waker_post(r->waker);
}

void snap__sring_tick(const snap__regs_t *regs, void *ctx) {
  snap__sring_t *r = ctx;
  uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
  if (h - t >= r->cap) {
    atomic_fetch_add_explicit(&r->lost, 1, memory_order_relaxed);
    if (r->waker)
      keep_waker(r, snap__plat_now_ns(), h - t);
    return;
  }
  snap__sring_entry_t *e = &r->e[h % r->cap];
  e->t_ns = snap__plat_now_ns();
  e->cpu_ns = snap__plat_self_cpu_ns();
  /* The interrupted pc is exact (frame 0 is where the thread was). */
  e->n = regs ? snap__walk_in(&r->walk, regs, true, r->flags, e->pcs,
                              SNAP__TRACE_DEPTH, 0)
              : SNAP_ENOSTACK;
  atomic_store_explicit(&r->head, h + 1, memory_order_release);
  if (r->waker)
    keep_waker(r, e->t_ns, h + 1 - t);
}

const snap__sring_entry_t *snap__sring_peek(snap__sring_t *r) {
  uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
  uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
  return t == h ? NULL : &r->e[t % r->cap];
}

const snap__sring_entry_t *snap__sring_newest(snap__sring_t *r) {
  /* Entries in [tail, head) are never written by the producer (it writes
     entry head only while head - tail < cap): stable while no pop. */
  uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
  uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
  return t == h ? NULL : &r->e[(h - 1) % r->cap];
}

void snap__sring_pop(snap__sring_t *r) {
  uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
  atomic_store_explicit(&r->tail, t + 1, memory_order_release);
}

uint64_t snap__sring_lost(const snap__sring_t *r) {
  return atomic_load_explicit(&r->lost, memory_order_relaxed);
}
