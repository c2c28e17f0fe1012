/*
 * lag.h — what the lag watchdog's files share: the loop observer's state,
 * where the main thread's time went (sched_split.c), the point-stack
 * ring, annealing, the lag's state machine, classification, the report's
 * content and the report directory, and the pieces of the watchdog thread
 * (configuration, the watched stretch, sampling the main thread, the
 * thread dump, report assembly, the CPU trigger).
 *
 * Owns: the internal interfaces of src/lag/ only. Must not: name an OS API
 * (everything OS-specific goes through src/platform/platform.h).
 */
#ifndef SNAP_LAG_H
#define SNAP_LAG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blocked/thread_state.h"
#include "platform/platform.h"
#include "platform/process.h"
#include "platform/thread_facts.h"
#include "stacksnap.h"

#define SNAP__MS ((uint64_t)1000000) /* nanoseconds */

/* ---- Loop observer (observer.c) ------------------------------------------ */

/* The loop's state word: (sequence << 2) | BUSY | PARKED. The main thread
   bumps the sequence at each busy call, so the watchdog tells one busy
   stretch from the next; the watchdog sets PARKED before it sleeps with
   no deadline, and the busy call that clears it posts the semaphore. */
#define SNAP__LOOP_BUSY 1u
#define SNAP__LOOP_PARKED 2u

typedef struct snap__loop_view {
  uint32_t seq;
  bool busy;
  uint64_t busy_since_ns; /* valid when busy */
  uint64_t idle_since_ns; /* valid when !busy and seq > 0 */
} snap__loop_view_t;

/* Turns the busy/idle calls on (with a fresh state) or off. long_ns: the
   stretches whose both edge readings are kept (the lag threshold). */
void snap__loop_activate(snap__sem_t *wake, uint64_t long_ns);
void snap__loop_deactivate(void);
/* In a forked child: the main thread's kept file is the parent's. */
void snap__loop_forget_in_child(void);
/* A consistent reading of the state. */
snap__loop_view_t snap__loop_read(void);
/* The watchdog watches stretch `seq`: the idle call that ends it records
   its length, however many stretches follow before the watchdog looks. */
void snap__loop_watch(uint32_t seq);
/* When the busy stretch `seq` began and how long it lasted, once it has
   ended, if it was watched (snap__loop_watch before it ended) or is among
   the last 16 to end: true, or false (unknown). Lets the watchdog end a
   lag when it ended, not when it saw the next stretch, and find lags that
   began and ended while it waited for a CPU. */
bool snap__loop_ended(uint32_t seq, uint64_t *since, uint64_t *len);
/* Sets PARKED if the loop is still idle at `seq`; true when set (the caller
   may then sleep until posted). */
bool snap__loop_park(uint32_t seq);
/* The main thread's own reading at a loop edge (observer.c). */
typedef struct snap__edge {
  uint64_t t_ns;   /* when (monotonic) */
  int64_t cpu_ns;  /* its CPU time then (-1 unknown) */
  int64_t runq_ns; /* its run-queue wait then (-1 unknown) */
} snap__edge_t;
/* The reading that serves stretch seq's start: the latest taken at or
   before it (at most 4 ms before). False when none is known. */
bool snap__loop_start_edge(uint32_t seq, snap__edge_t *out);
/* The start and end readings of the ended stretch seq, if it lasted the
   lag threshold and is among the last 16 such. */
bool snap__loop_stretch_edges(uint32_t seq, snap__edge_t *from,
                              snap__edge_t *to);
void snap__loop_unpark(void);

/* ---- Where the time went (sched_split.c) --------------------------------- */

/* The main thread's time over some intervals, split by what it did, and
   its point samples counted by scheduler state. Every figure is -1 when
   unknown (the OS does not say, or some interval lacks it). */
typedef struct snap__split {
  int64_t wall_ns;                /* the intervals' total */
  int64_t cpu_ns;                 /* on a CPU */
  int64_t runnable_ns;            /* runnable, waiting for a CPU (starved) */
  int64_t blocked_ns;             /* the rest: waiting for an event */
  int64_t voluntary, involuntary; /* context switches */
  int64_t major_faults;
  uint32_t states[SNAP__STATE_COUNT];   /* samples per state */
  uint32_t waits[SNAP_WAIT_KIND_COUNT]; /* blocked samples per kind */
} snap__split_t;

/* Nothing yet: wall 0, the rest 0 (a sum of no intervals). */
void snap__split_init(snap__split_t *s);
/* The split of the stretch [start_ns, end_ns] from readings taken at
   from (at or before start) and to (at end): CPU and run-queue wait are
   their growth, capped at the stretch (the readings' extra time before
   the start is at most the observer's EDGE_READ_NS); blocked the rest.
   Counts of switches and faults are left as they are. */
void snap__split_stretch(snap__split_t *s, const snap__edge_t *from,
                         const snap__edge_t *to, uint64_t start_ns,
                         uint64_t end_ns);
/* Adds the interval between two readings of the main thread, wall_ns
   apart. */
void snap__split_add(snap__split_t *s, const snap__plat_sched_t *from,
                     const snap__plat_sched_t *to, uint64_t wall_ns);
/* Counts one sample's state (src/blocked/'s answer for it). */
void snap__split_count(snap__split_t *s, const snap__thread_state_t *at);

/* ---- Point-stack ring (ring.c) ------------------------------------------- */

#define SNAP__RING_DEPTH 128

typedef struct snap__point {
  uint32_t seq;               /* busy stretch it was taken in */
  uint64_t t_ns;              /* when */
  int64_t cpu_ns;             /* main thread's CPU time then (-1 unknown) */
  snap__plat_sched_t sched;   /* its counters just before the sample (a
                                 sampled thread reads running) */
  snap__thread_state_t state; /* what it did since the stretch's previous
                                 point (snap__state_judge) */
  int n;                      /* pcs */
  uintptr_t pcs[SNAP__RING_DEPTH];
} snap__point_t;

typedef struct snap__ring {
  snap__point_t *slots;
  unsigned size;
  uint64_t written; /* total ever written; the newest is written - 1 */
} snap__ring_t;

int snap__ring_init(snap__ring_t *r, unsigned size);
void snap__ring_free(snap__ring_t *r);
/* The slot the next point goes into; commit it after filling. */
snap__point_t *snap__ring_next(snap__ring_t *r);
void snap__ring_commit(snap__ring_t *r);

/* The costliest stack among the points taken at or after since_ns (and,
   when seq != 0, in busy stretch seq): the innermost function seen most
   often, ties to the most recent. */
typedef struct snap__costliest {
  unsigned hits, samples;
  int64_t cpu_ns, wall_ns;   /* main-thread CPU over the winning points */
  snap__split_t split;       /* the same intervals split, and the winning
                                points counted by state */
  snap__split_t all;         /* every point considered, counted by state
                                (its times are unused) */
  const snap_stack_t *stack; /* the newest winning point, named; NULL if none */
} snap__costliest_t;
void snap__ring_costliest(const snap__ring_t *r, uint32_t seq,
                          uint64_t since_ns, snap__costliest_t *out);
/* The oldest point of busy stretch seq taken in [since_ns, before_ns)
   whose main-thread CPU time already reads cpu_ns (the CPU time at a
   later reading): its time (the thread did not run after it), or 0 when
   there is none. */
uint64_t snap__ring_still_since(const snap__ring_t *r, uint32_t seq,
                                uint64_t since_ns, uint64_t before_ns,
                                int64_t cpu_ns);

/* ---- Annealing (annealing.c) --------------------------------------------- */

/* The function a frame is in: its start when named, else the pc itself.
   The key by which samples and lags count as "the same". */
static inline uintptr_t snap__frame_function(const snap_frame_t *f) {
  return f->symbol_addr ? f->symbol_addr : f->pc;
}

/* True when two named stacks are the same call path: the same app
   functions in the same order (the pcs inside a function may differ, and
   system frames between or below them do not count); stacks with no app
   frame compare all their functions. */
bool snap__same_path(const snap_stack_t *a, const snap_stack_t *b);
/* What a lag is known by: its main stack, else the costliest point stack
   of its stretch, else NULL (nothing: it matches no lag). */
const snap_stack_t *snap__lag_identity(const snap_stack_t *main,
                                       const snap_stack_t *costliest);

/* Fibonacci back-off of the re-checks of one ongoing lag. */
typedef struct snap__backoff {
  uint64_t a, b; /* the next two steps, in units */
} snap__backoff_t;
void snap__backoff_reset(snap__backoff_t *f);
/* The next step (1, 1, 2, 3, 5, 8, ... units), capped at 10 000 units. */
uint64_t snap__backoff_next(snap__backoff_t *f);

/* ---- The lag's state machine (lag_state.c) ------------------------------- */

/* What the watched busy stretch is, as far as reports go. Pure: no clock,
   no thread, no I/O; the watchdog feeds it events and performs the actions
   it answers (see lag_state.c for the transitions). */
typedef enum snap__lag_state {
  SNAP__LAG_IDLE,           /* no stretch watched (or it ended) */
  SNAP__LAG_BUSY,           /* busy, not yet threshold_ms */
  SNAP__LAG_IGNORED,        /* past the threshold while traced: no lag */
  SNAP__LAG_ANNEALED,       /* a lag on the previous lag's path: counted
                               there (repeats), no file of its own */
  SNAP__LAG_UNWRITTEN,      /* a lag with no file (yet): daily cap, failed
                               write, or it left the annealed path */
  SNAP__LAG_REPORTED,       /* a lag whose file is in place */
  SNAP__LAG_HANG_UNWRITTEN, /* a hang (busy past hang_ms) with no file */
  SNAP__LAG_HANG_REPORTED,  /* a hang whose file is in place */
} snap__lag_state_t;

typedef enum snap__lag_event {
  SNAP__LAG_EV_BEGIN,     /* a new busy stretch is seen */
  SNAP__LAG_EV_THRESHOLD, /* it has been busy for threshold_ms */
  SNAP__LAG_EV_RECHECK,   /* an ongoing lag's re-check is due */
  SNAP__LAG_EV_HEARTBEAT, /* its file's duration is a heartbeat old */
  SNAP__LAG_EV_WRITTEN,   /* the answer to a SNAP__LAG_DO_WRITE_NEW */
  SNAP__LAG_EV_END,       /* the stretch ended (idle, or the next began) */
  SNAP__LAG_EV_STOP,      /* the watchdog stops (the stretch ends now) */
} snap__lag_event_t;

/* What the watchdog observed, for the events that need it. */
typedef struct snap__lag_facts {
  bool traced;       /* THRESHOLD: reports are muted (a debugger traces) */
  bool hang;         /* THRESHOLD, RECHECK: busy for hang_ms already */
  bool same_as_prev; /* THRESHOLD: the main stack is on the path of the
                        last lag that wrote a report */
  bool moved;        /* RECHECK: the main stack left the report's path */
  bool ok;           /* WRITTEN: the new file is in place */
} snap__lag_facts_t;

/* Actions, performed in this order: on the reports by report.c
   (snap__lag_reports_apply), SCHEDULE by watchdog.c. One exception: with
   DUMP, a WRITE_NEW is performed first and the file rewritten after the
   dump (the report exists on time). New actions or events go here and in
   lag_state.c's one function. */
enum {
  SNAP__LAG_DO_OPEN = 1u << 0,      /* a new report: kind, start, main stack */
  SNAP__LAG_DO_HANG = 1u << 1,      /* the report's kind becomes "hang" */
  SNAP__LAG_DO_REFRESH = 1u << 2,   /* duration, CPU, costliest stack, class */
  SNAP__LAG_DO_DUMP = 1u << 3,      /* (re)sample every thread into it */
  SNAP__LAG_DO_WRITE_NEW = 1u << 4, /* write a new file; answer WRITTEN */
  SNAP__LAG_DO_WRITE_UPDATE = 1u << 5, /* rewrite its file */
  SNAP__LAG_DO_WRITE_FINAL = 1u << 6,  /* rewrite it with ongoing false */
  /* the previous lag's repeats grow (its file rewritten) */
  SNAP__LAG_DO_REPEAT = 1u << 7,
  SNAP__LAG_DO_KEEP = 1u << 8,      /* the report becomes the previous lag */
  SNAP__LAG_DO_DISCARD = 1u << 9,   /* drop the report */
  SNAP__LAG_DO_SCHEDULE = 1u << 10, /* next re-check in check_in thresholds */
};

typedef struct snap__lag_machine {
  snap__lag_state_t state;
  snap__backoff_t backoff; /* re-check spacing of the ongoing lag */
} snap__lag_machine_t;

typedef struct snap__lag_step {
  unsigned actions;  /* SNAP__LAG_DO_* */
  uint64_t check_in; /* with DO_SCHEDULE: thresholds until the re-check */
} snap__lag_step_t;

/* The one transition function: moves m by event ev (with the facts it
   needs) and says what to do. Every (state, event) pair has an answer; an
   event that does not apply to the state changes nothing. */
snap__lag_step_t snap__lag_transition(snap__lag_machine_t *m,
                                      snap__lag_event_t ev,
                                      snap__lag_facts_t facts);

/* A lag or a hang is going on (it ends with END or STOP). */
static inline bool snap__lag_state_ongoing(snap__lag_state_t s) {
  return s >= SNAP__LAG_ANNEALED;
}
static inline bool snap__lag_state_is_hang(snap__lag_state_t s) {
  return s == SNAP__LAG_HANG_UNWRITTEN || s == SNAP__LAG_HANG_REPORTED;
}

/* ---- Classification (classify.c) ----------------------------------------- */

/* l1/l2: the innermost 2 / 4 app frames, "func|caller|...". */
void snap__classify(const snap_stack_t *s, int frames, char *out, size_t size);

/* ---- Report content (report_json.c) ------------------------------------- */

/* What a report is about. An enum everywhere in the watchdog; only the JSON
   writer (and the file names it shares with the store) turn it into text. */
typedef enum snap__lag_kind {
  SNAP__KIND_LAG,         /* busy past threshold_ms */
  SNAP__KIND_HANG,        /* busy past hang_ms */
  SNAP__KIND_CPU,         /* the main thread hot over the CPU window */
  SNAP__KIND_HANG_KILLED, /* left ongoing by a process that died */
  SNAP__KIND_COUNT
} snap__lag_kind_t;

/* "lag" "hang" "cpu" "hang_killed"; NULL for a value out of range. */
const char *snap__lag_kind_name(snap__lag_kind_t kind);

/* Why a wait's owner is SNAP_OWNER_UNKNOWN (docs/lag.md, "owner_unknown"). */
typedef enum snap__owner_why {
  SNAP__OWNER_WHY_NONE,     /* the owner is known, or the kind has none */
  SNAP__OWNER_WHY_NOT_LIVE, /* the lock's memory named no live thread of
                               this process other than the waiter */
  SNAP__OWNER_WHY_LATER,    /* it named a thread that began after the wait
                               began (or, where that is not known, after
                               the stall began): an exited owner's reused
                               id, never the holder */
} snap__owner_why_t;

typedef struct snap__lag_thread {
  snap_thread_t tid;
  char name[32];
  bool main;
  snap__thread_state_t state; /* what it did (snap__state_judge): from the
                                 OS's run state read before any thread
                                 was sampled, and its sample's wait */
  int error;                  /* SNAP_OK, or why there are no frames */
  snap_wait_t wait;           /* what it waited for when sampled (kind
                                 SNAP_WAIT_NONE: nothing, or unsampled) */
  uint8_t owner_why;          /* snap__owner_why_t */
  const snap_stack_t *stack;  /* owned; NULL on error */
} snap__lag_thread_t;

/* ---- Wait chains and deadlocks (wait_chain.c) ---------------------------- */

#define SNAP__CHAIN_MAX 64 /* threads kept of one chain or cycle */

/* A path through the "waits for a lock owned by" relation, as indices
   into a report's thread list. */
typedef struct snap__wait_chain {
  int n;          /* threads in at[] */
  bool truncated; /* longer than SNAP__CHAIN_MAX: at[] is its head */
  int at[SNAP__CHAIN_MAX];
} snap__wait_chain_t;

/* From the thread list ts[0..n) (each with its decoded wait), the chain
   from ts[from] (from < 0: none): ts[from], the owner of the lock it
   waits on, that owner's owner, ... up to a thread that waits on nothing
   with a known owner among ts, or to a thread already in the chain. And
   the deadlock: the cycle that chain closes (from its first thread
   reached), else the first cycle met walking from each other thread in
   list order, else none (n 0). Pure. SNAP_OK, or SNAP_ENOMEM (both
   empty). */
int snap__wait_analyze(const snap__lag_thread_t *ts, int n, int from,
                       snap__wait_chain_t *chain, snap__wait_chain_t *cycle);

/* Whether the owner t's wait names can hold that lock, judged by when the
   owner began: a thread that began after the wait began cannot have held
   the lock since before it. wait_from_ns: an instant at or before which
   the wait began (0: unknown); look_rc and owner: one look at the owner
   (snap__plat_thread_look) taken no earlier than the wait's decode. A
   known owner that fails is made unknown (owner 0, no name), and
   t->owner_why says why an unknown owner is unknown. Pure. */
void snap__wait_judge_owner(snap__lag_thread_t *t, uint64_t wait_from_ns,
                            int look_rc, const snap__plat_thread_look_t *owner);

typedef struct snap__lag_report {
  snap__lag_kind_t kind;
  bool ongoing;
  int64_t start_unix_ms, updated_unix_ms;
  /* While ongoing: the next rewrite is due by then (a process killed
     meanwhile never makes it: its hang_killed report's upper bound). */
  int64_t next_write_by_unix_ms;
  uint64_t duration_ms;
  unsigned threshold_ms;
  unsigned repeats;
  snap_thread_t main_tid;
  int64_t main_cpu_ms, main_wall_ms;
  snap__split_t main_split; /* over the stretch; samples: its points */
  bool seen_late; /* the watchdog first saw the stretch once it had ended */
  unsigned dropped_before;        /* lags the daily cap dropped since the last
                                     report this watchdog wrote */
  const snap_stack_t *main_stack; /* owned; NULL when never sampled */
  int main_error;                 /* why main_stack is NULL */
  snap__costliest_t costliest;    /* its stack owned */
  char l1[512], l2[1024];
  unsigned cpu_percent, cpu_window_ms; /* kind "cpu" */
  int threads_total;
  int nthreads;
  snap__lag_thread_t *threads; /* owned */
  /* Set with threads (thread_dump.c): main's wait chain (empty when main
     waits on nothing) and the deadlock (empty when none), as indices
     into threads. */
  snap__wait_chain_t main_chain, deadlock;
  /* The sampling trace written beside it (report.c), "" when none ran. */
  char trace[1100];
} snap__lag_report_t;

/* Releases what the report owns and zeroes it. */
void snap__lag_report_clear(snap__lag_report_t *r);
/* The report as JSON (docs/lag.md), malloc'ed; NULL when out of memory.
   The text starts with the fixed prefix snap__lag_json_prefix writes, so a
   later start can find an ongoing report without a JSON parser. */
char *snap__lag_report_json(const snap__lag_report_t *r, size_t *len);
/* The schema version reports are written in (docs/lag.md): 2 added the
   images and each frame's image_offset / symbol_offset. */
#define SNAP__LAG_SCHEMA 2
/* Writes the prefix `{"schema":"stacksnap.lag/V","kind":"K","ongoing":B`
   of schema version V (a later start recovers reports of every version). */
int snap__lag_json_prefix(char *buf, size_t size, unsigned schema,
                          snap__lag_kind_t kind, bool ongoing);
/* For the hang_killed report made of an ongoing report's text (NUL
   terminated): `,"killed_after_unix_ms":A,"killed_by_unix_ms":B` into buf,
   A its last write, B the rewrite that was due and never came (left out
   when the text does not say). Returns the length written (0: none). */
int snap__lag_killed_bounds(const char *text, char *buf, size_t size);

/* ---- Report directory (report_store.c) ----------------------------------- */

typedef struct snap__lag_store {
  char dir[1024];
  unsigned retention_days, max_per_day;
  unsigned mode; /* of the files written (the config's file_mode) */
  void (*on_report)(const char *path, void *ctx);
  void (*on_report_write)(const char *path, bool final, void *ctx);
  void *ctx;
  unsigned dropped;   /* new reports refused by the daily cap */
  int64_t pid;        /* this process, as its reports name it ... */
  char pid_start[64]; /* ... and its start token ("" unknown); set by open */
} snap__lag_store_t;

/* Creates the directory, removes temporary files, applies retention, turns
   ongoing reports whose process is gone into hang_killed ones and
   finishes (ongoing false) this process's own; a live process's are left
   alone. SNAP_OK, SNAP_EIO. */
int snap__lag_store_open(snap__lag_store_t *st);
/* Writes a new report (file name from start and kind into name[64]).
   final: no rewrite will follow (the callbacks are told). SNAP_OK;
   SNAP_EBUSY when today's cap is reached (nothing written); SNAP_EIO. */
int snap__lag_store_add(snap__lag_store_t *st, int64_t start_unix_ms,
                        snap__lag_kind_t kind, const char *json, size_t n,
                        bool final, char name[64]);
/* Rewrites the report `name` (a new name when kind changed: the old file
   is removed after the new one is in place). SNAP_OK or SNAP_EIO. */
int snap__lag_store_update(snap__lag_store_t *st, char name[64],
                           int64_t start_unix_ms, snap__lag_kind_t kind,
                           const char *json, size_t n, bool final);

/* ---- Configuration (config.c) -------------------------------------------- */

/* SNAP_OK when every value of c is in its documented range (stacksnap.h),
   else SNAP_EINVAL. */
int snap__lag_config_check(const snap_lag_config_t *c);
/* Reads the caller's config (only the fields its size covers; defaults for
   the rest) into *out, this library's layout, and checks it. SNAP_OK, or
   SNAP_EINVAL (NULL, a size this library does not know, a bad value). */
int snap__lag_config_read(const snap_lag_config_t *in, snap_lag_config_t *out);

/* ---- The watched busy stretch (watchdog.c keeps it) ---------------------- */

typedef struct snap__stretch {
  uint32_t seq;       /* the loop's sequence number of the stretch */
  uint64_t since_ns;  /* when it began */
  uint64_t stolen_ns; /* time the whole process did not run, since then */
  uint64_t seen_ns;   /* when the watchdog first saw it ... */
  int64_t seen_cpu;   /* ... and the main thread's CPU time then */
  int64_t seen_runq;  /* ... and its run-queue wait (< 0: unknown) */
  /* The main thread's counters at the stretch's first point sample (when
     have_first): the base of its context switches and faults, which cost
     more reads than every stretch the watchdog sees should pay. */
  bool have_first;
  snap__plat_sched_t first;
  /* Set once the watchdog knows the stretch ended (its report's split
     then covers [since_ns, end_ns], from the observer's edge readings). */
  bool ended;
  uint64_t end_ns;
} snap__stretch_t;

/* Busy time at `now` (stolen time does not count). */
static inline uint64_t snap__stretch_busy_ns(const snap__stretch_t *s,
                                             uint64_t now) {
  uint64_t age = now > s->since_ns ? now - s->since_ns : 0;
  return age > s->stolen_ns ? age - s->stolen_ns : 0;
}
/* When the stretch will have been busy for d. */
static inline uint64_t snap__stretch_busy_until(const snap__stretch_t *s,
                                                uint64_t d) {
  return s->since_ns + s->stolen_ns + d;
}

/* What the watchdog knows at a wake about the time since its last one:
   it worked (`work`), then slept, and woke `late` past the sleep's plan. */
typedef struct snap__wake_facts {
  uint64_t window;   /* wall time since the last wake */
  uint64_t work;     /* of it, from the last wake to the sleep */
  uint64_t late;     /* of it, past the sleep's plan (0: on time) */
  int64_t ran;       /* the watchdog's own time on a CPU, waiting for one
                        and waiting on samples, over the window; < 0 when the
                        OS does not say (Apple) */
  int64_t proc_ran;  /* the CPU time of all the process's threads over the
                        window; < 0 unknown */
  int64_t main_runq; /* the main thread's run-queue wait over the window;
                        < 0 unknown */
} snap__wake_facts_t;

/* Of the window, the time the whole process did not run (SIGSTOP, a
   debugger, a suspended VM): the part of the work and the lateness that
   the watchdog's own running, run-queue wait and sampling waits do not
   explain, and that no thread of the process spent on a CPU (a process
   that was stopped ran no thread) and the main thread did not spend
   waiting on a run queue (a stopped process's threads are on none): a
   main thread blocked while another thread computes is a process that
   runs (test_lag_starved's real-time worker), which the main thread's
   CPU time alone took for a stop. Starved is not stopped: a watchdog waiting
   for a CPU on a busy machine wakes late while the app runs (or waits) on, and
   that is lag time, never discounted. Where the OS does not say (ran < 0) only
   the lateness counts, as the old rule did. A remainder within the slack is
   noise (timers, a page-in), not a stop. */
static inline uint64_t snap__stolen_ns(const snap__wake_facts_t *f,
                                       uint64_t slack) {
  uint64_t unexplained = f->late;
  if (f->ran >= 0) {
    uint64_t off = f->late + f->work;
    unexplained = off > (uint64_t)f->ran ? off - (uint64_t)f->ran : 0;
  }
  if (f->proc_ran >= 0) {
    uint64_t ran =
        (uint64_t)f->proc_ran + (f->main_runq > 0 ? (uint64_t)f->main_runq : 0);
    uint64_t idle = f->window > ran ? f->window - ran : 0;
    if (unexplained > idle)
      unexplained = idle;
  }
  return unexplained > slack ? unexplained : 0;
}

/* ---- Sampling the main thread (main_sample.c) ---------------------------- */

#define SNAP__DUMP_DEPTH 256 /* frames kept of each thread in a report */

typedef struct snap__main_sample {
  snap_thread_t tid;          /* the main thread */
  uint64_t since_ns;          /* in: the watched stretch's start (a running
                                 trace's sample older than this is not the
                                 stretch's) */
  bool from_trace;            /* the last sample was the trace's */
  snap__thread_state_t state; /* what it did at the last sample: the OS's
                                 reading just before it and its wait */
  uint64_t t_ns;              /* when the last sample was taken ... */
  int64_t cpu_ns;   /* ... and the main thread's CPU time just before it
                       (-1 unknown) */
  int n;            /* the last sample's pcs, or why there are none (< 0) */
  int error;        /* SNAP_OK, or why the last sample has no named stack */
  snap_wait_t wait; /* what the last sample waited for (kind NONE when
                       nothing, or the sample failed), its owner named
                       then */
  snap__loop_view_t loop; /* the loop's state once the capture returned */
  int owner_rc;           /* a known owner looked at right after the sample: */
  snap__plat_thread_look_t owner; /* SNAP_OK and what was seen, or why not */
  uintptr_t pcs[SNAP__DUMP_DEPTH];
} snap__main_sample_t;

/* The flags every cross-thread capture of the watchdog uses. */
unsigned snap__lag_capture_flags(void);
/* Names pcs taken from a stopped thread (pcs[0] exact). */
const snap_stack_t *snap__lag_name(const uintptr_t *pcs, int n);
/* Samples the main thread into m and names the stack (once it runs
   again); NULL when it could not be sampled or named (m->error says why). */
const snap_stack_t *snap__main_sample(snap__main_sample_t *m);
/* A point sample of the main thread into the ring, for stretch st (whose
   first point's counters it records). */
void snap__main_point(snap_thread_t main, snap__ring_t *ring,
                      snap__stretch_t *st, uint64_t now, uint64_t interval_ns);

/* ---- The thread dump (thread_dump.c) ------------------------------------- */

/* Instants at or before which the waits of a dump began, for judging
   their owners (snap__wait_judge_owner; 0: unknown). */
typedef struct snap__wait_since {
  uint64_t main_ns;   /* the main thread's: the first reading after which
                         it did not run before its sample, else the sample
                         (report.c); 0: unknown */
  uint64_t others_ns; /* the stall's start (no bound on the others' waits) */
} snap__wait_since_t;

/* Every thread of the process but `self` (the watchdog) into r->threads:
   the main thread first (as *main last sampled it), then the threads of
   its wait chain (each the owner of the lock the previous one waits on,
   sampled whatever the budget, listed or not), then running ones, then
   the rest, at most max; with each thread's wait, and r's main chain and
   deadlock; an owner named only where it can be the owner
   (since). Sampling stops after budget_ns (the rest
   are listed with SNAP_ETIMEDOUT); a thread that blocks the sampling
   signal is listed with SNAP_EBLOCKED, unsampled. Out of memory: r gets
   no thread list. */
void snap__thread_dump(snap__lag_report_t *r, const snap__main_sample_t *main,
                       snap_thread_t self, unsigned max, uint64_t budget_ns,
                       const snap__wait_since_t *since);
/* Releases r's threads. */
void snap__thread_dump_drop(snap__lag_report_t *r);

/* ---- Report assembly (report.c) ------------------------------------------ */

/* What a report is made of, as the watchdog keeps it. */
typedef struct snap__report_src {
  snap__lag_store_t *store;
  const snap__ring_t *ring;
  const snap__stretch_t *stretch;
  snap__main_sample_t *main;
  snap_thread_t self; /* the watchdog thread: never in a dump */
  unsigned threshold_ms, max_threads;
  uint64_t dump_budget_ns;    /* the whole-process dump's */
  uint64_t rewrite_within_ns; /* an ongoing report's next rewrite is due
                                 at most this long after its refresh */
  bool report_when_traced;
} snap__report_src_t;

/* The ongoing lag's report, and the last one written (annealing compares
   with it and counts its repeats into its file). */
typedef struct snap__lag_reports {
  snap__lag_report_t cur;
  char cur_name[64];
  uint64_t written_ns; /* last write of cur's file */
  bool have_prev;
  snap__lag_report_t prev;
  char prev_name[64];
  /* prev's file lacks its latest content: its final write or a repeats
     rewrite failed (a full disk). snap__lag_reports_retry writes it again,
     backing off, until it lands. */
  bool prev_unsaved;
  bool prev_final_told; /* prev's final write landed (callbacks told) */
  uint64_t retry_ns, retry_gap_ns; /* the next retry; the gap after it */
  /* The daily cap (report.c, "count_dropped"): lags it dropped since the
     last new report, whether cur was counted, and today's count (UTC day
     starting at dropped_day) in "<dropped_day>-dropped.json". */
  unsigned dropped;
  bool cur_dropped;
  int64_t dropped_day;
  unsigned dropped_today;
} snap__lag_reports_t;

/* Reports are muted while a debugger traces the process (unless
   report_when_traced): a process stopped at a breakpoint is not lagging. */
bool snap__reports_muted(const snap__report_src_t *src);
/* Performs the state machine's actions on the lag's reports, in the order
   lag.h lists them. kind: of the lag's state after the transition; main:
   the stack just sampled, or NULL (owned from here); busy_ns: the
   stretch's busy time for the figures. Returns the outcome of a
   SNAP__LAG_DO_WRITE_NEW (SNAP_OK when none). */
int snap__lag_reports_apply(snap__lag_reports_t *reps,
                            const snap__report_src_t *src, unsigned actions,
                            snap__lag_kind_t kind, const snap_stack_t *main,
                            uint64_t busy_ns);
/* Writes the previous lag's report again if its last write failed and a
   retry is due at now (or at once: `force`, for the stop). Returns when
   the next retry is due, UINT64_MAX when none is: the watchdog wakes for
   it (a parked watchdog too). The final callbacks fire when the final
   write lands, once. */
uint64_t snap__lag_reports_retry(snap__lag_reports_t *reps,
                                 const snap__report_src_t *src, uint64_t now,
                                 bool force);
void snap__lag_reports_clear(snap__lag_reports_t *reps);

/* ---- The CPU trigger (cpu_trigger.c) ------------------------------------- */

typedef struct snap__cpu_trigger {
  unsigned percent; /* 0: off */
  uint64_t window_ns;
  uint64_t t0;      /* window start, moved by time the process was stopped */
  uint64_t ring_t0; /* window start as it was: the ring's points since */
  int64_t cpu0;     /* the main thread's CPU time at t0 (-1 unknown) */
  bool hot;         /* the last window was hot (reported already) */
} snap__cpu_trigger_t;

/* A hot window: what its "cpu" report says. */
typedef struct snap__cpu_episode {
  unsigned percent;
  uint64_t wall_ns;
  int64_t cpu_ns;
  uint64_t ring_since_ns;
} snap__cpu_episode_t;

void snap__cpu_trigger_start(snap__cpu_trigger_t *t, unsigned percent,
                             uint64_t window_ns, uint64_t now, int64_t cpu);
/* When the current window ends (UINT64_MAX when off). */
uint64_t snap__cpu_trigger_due(const snap__cpu_trigger_t *t);
/* The process did not run for `late`: the window does not count it. */
void snap__cpu_trigger_discount(snap__cpu_trigger_t *t, uint64_t late);
/* Closes the window at now (main-thread CPU time cpu) and opens the next.
   True when it begins a hot episode: *e is then its report's content. */
bool snap__cpu_trigger_close(snap__cpu_trigger_t *t, uint64_t now, int64_t cpu,
                             snap__cpu_episode_t *e);
/* Writes the "cpu" report of episode e. */
void snap__report_cpu(const snap__report_src_t *src,
                      const snap__cpu_episode_t *e);

#endif /* SNAP_LAG_H */
