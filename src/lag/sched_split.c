/*
 * sched_split.c — where the main thread's time went: the split of wall
 * time into CPU, run-queue wait and the rest, and the samples counted by
 * scheduler state, for a report's main_thread and costliest stack.
 *
 * Owns: the arithmetic between two readings of snap__plat_thread_sched and
 * the counts of samples by state. Must not: read anything itself (the
 * watchdog and the ring hand readings in), decide what a lag is, or what
 * state a sample was in (src/blocked/ does: the counts are of its
 * answers).
 *
 * The split of an interval of wall time W between two readings:
 *   cpu      = the CPU clock's growth;
 *   runnable = the run-queue wait's growth (Linux schedstat; the kernel
 *              adds a wait when it ends, so a wait still in progress at
 *              the second reading is not in it yet);
 *   blocked  = W - cpu - runnable, at least 0: waiting for an event (a
 *              lock, I/O, a sleep), plus any run-queue wait in progress.
 * A figure some interval lacks (the OS does not say, a counter went
 * backwards: another thread behind the id) is -1 for the whole sum, never
 * a partial total that would read as a small one.
 *
 * A lag's own split (snap__split_stretch) covers exactly its stretch,
 * [start, end]: the readings are the main thread's own at the loop's edges
 * (observer.c), never the watchdog's, which on a busy machine runs long
 * after the stretch ended (the idle time after it read as "blocked").
 */
#include "lag/lag.h"

void snap__split_init(snap__split_t *s) { *s = (snap__split_t){0}; }

/* b - a, or -1 when either is unknown or it went backwards. */
static int64_t delta(int64_t a, int64_t b) {
  return a < 0 || b < 0 || b < a ? -1 : b - a;
}

/* *sum += d; unknown stays unknown. */
static void add(int64_t *sum, int64_t d) {
  *sum = *sum < 0 || d < 0 ? -1 : *sum + d;
}

void snap__split_add(snap__split_t *s, const snap__plat_sched_t *from,
                     const snap__plat_sched_t *to, uint64_t wall_ns) {
  int64_t wall = (int64_t)wall_ns;
  int64_t cpu = delta(from->cpu_ns, to->cpu_ns);
  int64_t runq = delta(from->runq_ns, to->runq_ns);
  int64_t blocked = -1;
  if (cpu >= 0 && runq >= 0)
    blocked = wall > cpu + runq ? wall - cpu - runq : 0;
  s->wall_ns += wall;
  add(&s->cpu_ns, cpu);
  add(&s->runnable_ns, runq);
  add(&s->blocked_ns, blocked);
  add(&s->voluntary, delta(from->voluntary, to->voluntary));
  add(&s->involuntary, delta(from->involuntary, to->involuntary));
  add(&s->major_faults, delta(from->major_faults, to->major_faults));
}

void snap__split_stretch(snap__split_t *s, const snap__edge_t *from,
                         const snap__edge_t *to, uint64_t start_ns,
                         uint64_t end_ns) {
  int64_t wall = end_ns > start_ns ? (int64_t)(end_ns - start_ns) : 0;
  int64_t cpu = delta(from->cpu_ns, to->cpu_ns);
  int64_t runq = delta(from->runq_ns, to->runq_ns);
  s->wall_ns = wall;
  s->cpu_ns = s->runnable_ns = s->blocked_ns = -1;
  if (cpu < 0)
    return;
  s->cpu_ns = cpu < wall ? cpu : wall;
  if (runq < 0)
    return;
  s->runnable_ns = runq < wall - s->cpu_ns ? runq : wall - s->cpu_ns;
  s->blocked_ns = wall - s->cpu_ns - s->runnable_ns;
}

void snap__split_count(snap__split_t *s, const snap__thread_state_t *at) {
  unsigned st = at->state < SNAP__STATE_COUNT ? at->state : SNAP__STATE_UNKNOWN;
  s->states[st]++;
  if (st == SNAP__STATE_BLOCKED)
    s->waits[at->kind < SNAP_WAIT_KIND_COUNT ? at->kind : SNAP_WAIT_OTHER]++;
}
