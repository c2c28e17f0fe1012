/*
 * schedule.c — the trace's sampler thread: when each thread is looked at,
 * and the waits between.
 *
 * Owns: the loop (the main thread every main_interval, or as its ticks
 * and the ring's alarm say; the others every other_interval while they
 * run; the queued marks; the window trimmed), the sampler's waker (a
 * post or the alarm ends a wait and brings a look at the main thread),
 * and the flush a writer of a running trace asks for. Must not: sample a
 * thread itself (sampler.c and sampler_timed.c do), or hold the trace's
 * lock across a capture.
 *
 * Why a file of its own: the schedule is a protocol with the ticks'
 * handler (snap__sring_watch) and with writers (snap__trace_flush); the
 * spans do not need to know it.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "capture/capture.h"
#include "platform/platform.h"
#include "trace/sampler_parts.h"
#include "trace/trace.h"

/* How often the sampler looks at a timed main thread (see the loop). */
#define DRAIN_NS (5 * 1000000u)
#define IDLE_DRAIN_NS (10 * 1000000u) /* ... while it is blocked */
/* ... while it ticks: its ring's alarm and half-full post wake the
   sampler sooner; this only bounds how stale the spans and marks get. */
#define TICKING_NS (200 * 1000000u)

/* The queued marks, into the ring. Under the lock. */
static uint32_t label_id(snap__trace_t *tr, const char *label) {
  for (uint32_t i = 0; i < tr->n_labels; i++)
    if (strcmp(tr->labels[i], label) == 0)
      return i + 1;
  if (tr->n_labels == SNAP__TRACE_LABELS)
    return SNAP__TRACE_LABELS; /* the last one stands for the rest */
  if (tr->n_labels == SNAP__TRACE_LABELS - 1)
    strcpy(tr->labels[tr->n_labels], "(more labels)");
  else
    strcpy(tr->labels[tr->n_labels], label);
  return ++tr->n_labels;
}

/* Returns how many there were. */
static int drain_marks(snap__trace_t *tr) {
  snap__trace_mark_t *m;
  int n = 0;
  for (; (m = snap__trace_mark_peek(tr)); n++) {
    uint32_t idx = snap__trace_thread_index(tr, m->tid);
    if (idx != SNAP__TRACE_NONE) {
      snap__trace_sample_t s = {
          .t_us = snap__trace_us_of(tr, m->t_ns),
          .stack = snap__trace_add_stack(tr, m->pcs, m->n, false),
          .cpu_ns = -1,
          .label = label_id(tr, m->label)};
      /* The thread took it of itself: a sample that ran on it. */
      snap_wait_t none = snap__trace_ran_wait();
      snap__state_facts_t f = snap__trace_facts_of_capture(&none, false);
      snap__trace_judged(&s, &f);
      snap__trace_record(tr, &tr->thr[idx], &s);
    }
    snap__trace_mark_done(tr, m);
  }
  return n;
}

/* The other threads: each one that ran since the last look is sampled. */
static void sample_others(snap__trace_t *tr, snap__lock_t *lock,
                          snap_thread_t self) {
  snap_thread_t tids[SNAP__TRACE_THREADS];
  /* The image table the timers' walks read (a library loaded since). */
  snap__capture_prepare();
  int n = snap__plat_thread_list_kept(&tr->lister, tids, SNAP__TRACE_THREADS);
  if (n > SNAP__TRACE_THREADS)
    n = SNAP__TRACE_THREADS;
  for (int i = 0; i < n; i++) {
    /* The main thread has its own schedule; ours are not the app's. */
    if (tids[i] == self || tids[i] == snap__plat_thread_main() ||
        snap__plat_thread_is_ours(tids[i]))
      continue;
    snap__plat_lock_lock(lock);
    uint32_t idx = snap__trace_thread_index(tr, tids[i]);
    snap__plat_lock_unlock(lock);
    if (idx != SNAP__TRACE_NONE) {
      tr->thr[idx].listed = true;
      snap__trace_sample_any(tr, lock, idx, true);
    }
  }
  /* A timed thread no longer listed is gone: its timer goes with it. */
  for (uint32_t i = 0; i < tr->n_thr; i++) {
    snap__trace_thr_t *th = &tr->thr[i];
    if (th->timed && !th->is_main && !th->gone && !th->listed) {
      snap__trace_disarm(tr, lock, th);
      snap__plat_lock_lock(lock);
      snap__trace_close_span(tr, th);
      th->gone = true;
      snap__plat_lock_unlock(lock);
    }
    th->listed = false;
  }
}

void snap__trace_sampler_run(snap__trace_t *tr, snap__lock_t *lock,
                             _Atomic bool *stop) {
  snap_thread_t self = snap__plat_thread_self();
  snap__capture_prepare(); /* for the timers' first walks */
  uint64_t main_ns = (uint64_t)tr->cfg.main_interval_us * 1000u;
  uint64_t other_ns = (uint64_t)tr->cfg.other_interval_us * 1000u;
  uint64_t window_us = (uint64_t)tr->cfg.window_seconds * 1000000u;
  snap__plat_lock_lock(lock);
  uint32_t main_idx = snap__trace_thread_index(tr, snap__plat_thread_main());
  snap__plat_lock_unlock(lock);
  uint64_t next_main = snap__plat_now_ns(), next_other = next_main;
  while (!atomic_load(stop)) {
    uint64_t asked = atomic_load(&tr->flush_asked);
    uint64_t now = snap__plat_now_ns();
    bool looked = now >= next_main;
    if (looked) {
      if (main_idx != SNAP__TRACE_NONE && !tr->thr[main_idx].gone)
        snap__trace_sample_any(tr, lock, main_idx, false);
      /* A timed main thread's ticks carry their own times and wait in its
         ring: the sampler need not wake for them (a wake costs it 40-60
         us of CPU on this VM, more than the tick it drains). While it
         runs on (its last looks found it never slept: note_steady,
         sampler_timed.c), the ring's alarm (pushed by each tick,
         snap__sring_watch) wakes the sampler 5-10 ms after the last one:
         the thread slept, or gets no CPU, and the look dates it (by its
         CPU time) and reads where it sleeps, as a look every 5-10 ms did.
         The ring's half-full post and a writer's flush wake it too, a
         burst of marks brings its next look closer (below); otherwise it
         drains every TICKING_NS. What it can miss, as looks 10 ms apart
         did: a sleep shorter than the alarm that starts after a long run,
         whose gap reads as a wait for a CPU; the first sleep seen makes
         the looks DRAIN_NS again. Blocked: its wake shows by its own
         tick, dated by itself; the look only nudges it sooner on a busy
         machine. */
      uint64_t step = main_ns;
      if (main_idx != SNAP__TRACE_NONE && tr->thr[main_idx].timed) {
        const snap__trace_thr_t *m = &tr->thr[main_idx];
        uint64_t d = m->last_state == SNAP__STATE_BLOCKED     ? IDLE_DRAIN_NS
                     : m->timed->steady && !m->timed->starved ? TICKING_NS
                                                              : DRAIN_NS;
        step = main_ns < d ? d : main_ns;
      }
      next_main += step;
      now = snap__plat_now_ns();
      if (next_main <= now) { /* late by a whole look or more */
        /* Counted in main-thread periods (snap_trace_stats), whatever
           the look's step. */
        atomic_fetch_add_explicit(&tr->missed_ticks,
                                  (now - next_main) / main_ns + step / main_ns,
                                  memory_order_relaxed);
        next_main = now + step;
      }
    }
    if (other_ns && now >= next_other) {
      sample_others(tr, lock, self);
      next_other += other_ns;
      now = snap__plat_now_ns();
      if (next_other <= now)
        next_other = now + other_ns;
    }
    snap__plat_lock_lock(lock);
    /* Marks in a burst: the queue (64) must not wait TICKING_NS
       (snap_trace_mark makes no system call to wake us). */
    if (drain_marks(tr) >= SNAP__TRACE_MARKS / 4 && next_main > now + DRAIN_NS)
      next_main = now + DRAIN_NS;
    uint64_t now_us = snap__trace_us_of(tr, now);
    snap__span_ring_trim(&tr->ring, now_us > window_us ? now_us - window_us : 0,
                         tr->ring.cap);
    snap__plat_lock_unlock(lock);
    if (looked && atomic_load(&tr->flush_done) != asked) {
      atomic_store(&tr->flush_done, asked);
      snap__plat_sem_post(tr->flushed);
    }
    uint64_t next = other_ns && next_other < next_main ? next_other : next_main;
    /* Posted, or the alarm went off: the main thread is looked at now. */
    if (snap__plat_waker_wait(tr->wake, next) == SNAP_OK)
      next_main = snap__plat_now_ns();
  }
  snap__plat_thread_lister_close(&tr->lister);
  /* The timers first: once stopped, no handler writes a ring. */
  for (uint32_t i = 0; i < tr->n_thr; i++)
    snap__trace_disarm(tr, lock, &tr->thr[i]);
  snap__plat_lock_lock(lock);
  drain_marks(tr);
  for (uint32_t i = 0; i < tr->n_thr; i++)
    snap__trace_close_span(tr, &tr->thr[i]);
  tr->sampler_cpu_ns = snap__plat_thread_cpu_ns(self);
  snap__plat_lock_unlock(lock);
}

bool snap__trace_flush(snap__trace_t *tr, uint64_t timeout_ns) {
  /* Passes asked are counted: a pass that began after this ask drained
     every tick taken before it. */
  uint64_t ask = atomic_fetch_add(&tr->flush_asked, 1) + 1;
  snap__plat_waker_post(tr->wake);
  uint64_t end = snap__plat_now_ns() + timeout_ns;
  while (atomic_load(&tr->flush_done) < ask) {
    uint64_t now = snap__plat_now_ns();
    if (now >= end)
      return false;
    /* Posted once a pass: each waiting writer looks again within 1 ms. */
    uint64_t until = now + 1000000u < end ? now + 1000000u : end;
    (void)snap__plat_sem_timedwait(tr->flushed, until);
  }
  return true;
}
