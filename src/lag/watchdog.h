/*
 * watchdog.h — what the watchdog's files share: the watchdog's state
 * (wd_t), and the functions one of them calls in another.
 *
 * The watchdog is split by job: watchdog.c (the thread's loop: which
 * event each wake gives the lag's state machine), wake_accounting.c (how
 * late a wake was and how much of that the process did not run) and
 * watchdog_life.c (snap_lag_start, snap_lag_stop, a forked child).
 * snap_lag_start fills wd_t before the thread starts; from then on only
 * the thread writes it, but for the atomic stop (snap_lag_stop sets it,
 * reads tid, wake and thread, and frees wd_t after the join).
 *
 * Owns: wd_t, wake_reading_t. Must not: be included outside those three
 * files.
 */
#ifndef SNAP_LAG_WATCHDOG_H
#define SNAP_LAG_WATCHDOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "lag/lag.h"

#define HEARTBEAT_NS (1000 * SNAP__MS)
/* Where the watchdog's own running, run-queue wait, sampling waits and
   report-file waits are known, what they leave unexplained is either a
   stop or the watchdog blocked on something else: a page-in. Those are
   short; 100 ms of it is a stop. (A longer stall while the main thread
   also did not run is taken for one: docs/lag.md.) */
#define STOP_NOISE_NS (100 * SNAP__MS)

typedef struct wd {
  snap_lag_config_t cfg;
  snap__lag_store_t store;
  snap__sem_t *wake; /* g_wake */
  snap__plat_thread_t thread;
  _Atomic snap_thread_t tid; /* the watchdog thread, once running */
  _Atomic bool stop;
  snap__ring_t ring;
  uint64_t threshold_ns, hang_ns, interval_ns, tick_ns, slack_ns;
  uint64_t calm_tick_ns; /* the tick while the loop is calm (below) */
  bool calm;             /* the loop was busy < 10 % of the time since the
                            last wake (calm()) */

  snap__stretch_t stretch;     /* the busy stretch being watched */
  uint64_t next_sample_ns;     /* point samples: at most one per interval
                                  while busy, across stretches (a CPU report of
                                  short iterations needs them too) */
  snap__main_sample_t main;    /* the last sample of the main thread */
  snap__lag_machine_t lag;     /* what the stretch is: busy, a lag ... */
  uint64_t next_check_ns;      /* of the ongoing lag */
  snap__lag_reports_t reports; /* its report, and the previous lag's */
  snap__report_src_t src;      /* what reports are made of (the above) */
  snap__cpu_trigger_t cpu;

  /* The last wake and the sleep after it (sleep_until), for the next. */
  uint64_t wake_ns;      /* the last wake */
  uint64_t prev_wake_ns; /* the one before it */
  int64_t ran_ns;        /* own_ran() then (< 0: unknown) */
  int64_t proc_cpu_ns;   /* the process's CPU time then (< 0: unknown) */
  int64_t main_runq_ns;  /* its run-queue wait then (< 0: unknown) */
  snap__plat_self_sched_t sched; /* this thread's own times, kept open */
  uint64_t slept_ns;             /* when the sleep began */
  uint64_t planned_ns;           /* when it is due */
  uint64_t slices_late_ns;       /* its slices' lateness before the last one */
  bool from_park;                /* it ended a park by a post */
  uint32_t park_seq;             /* the loop's sequence when it parked */
  uint32_t last_seq;             /* the loop's sequence at the last wake */
  uint32_t seen_seq; /* the latest stretch looked at (watched or missed) */
} wd_t;

/* The clock and the counters a wake compares, read together. */
typedef struct wake_reading {
  uint64_t now;
  int64_t ran, proc_cpu, main_runq;
} wake_reading_t;

#define SEQ_MASK ((1u << 30) - 1) /* the loop word's sequence is 30 bits */

static inline uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* watchdog.c: the watchdog thread's body (arg: its wd_t). */
void snap__wd_run(void *arg);

/* wake_accounting.c (see there). */
wake_reading_t snap__wd_read_wake(const wd_t *w);
void snap__wd_note_wake(wd_t *w, const wake_reading_t *r);
uint32_t snap__wd_ended_since_seen(const wd_t *w, const snap__loop_view_t *v,
                                   uint32_t *first);
uint64_t snap__wd_woken_late(wd_t *w, const snap__loop_view_t *v,
                             const wake_reading_t *r);
uint64_t snap__wd_stop_within(const wd_t *w, uint64_t late, uint64_t since,
                              uint64_t end);

#endif /* SNAP_LAG_WATCHDOG_H */
