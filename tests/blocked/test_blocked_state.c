/*
 * test_blocked_state.c — src/blocked/'s decision table (thread_state.c,
 * issue 25 "one thread-state module"): every rule, with Linux's facts and
 * Apple's, from synthetic facts (no thread, no clock: the table is pure),
 * and the state of a stretch of samples that the trace's slices and the
 * lag report count by.
 *
 * The cases the four old deciders got wrong against each other are here
 * by name: a compute stretch whose one reading found the thread on a run
 * queue (the watchdog, just woken, held its CPU) is running over the
 * interval; a short "other" call a signal interrupted is no wait on Linux
 * and is one on Apple, where the sample keeps the thread in its call.
 *
 * The trace's sampler decided its samples' states itself until it asked
 * this table too (rule 3, a thread that did not run since its previous
 * sample, and rule 5a fed by its timer's ticks): its old cases
 * (test_trace_state, issue 23's Apple facts) are here, each as the
 * table's answer.
 */
#include <string.h>

#include "blocked/thread_state.h"
#include "check.h"

static const snap__plat_trace_facts_t k_linux = {.cpu_time_exact = true,
                                                 .sample_keeps_call = false};
static const snap__plat_trace_facts_t k_apple = {.cpu_time_exact = false,
                                                 .sample_keeps_call = true};

/* Facts with nothing known but the platform's. */
static snap__state_facts_t none(snap__plat_trace_facts_t plat) {
  return (snap__state_facts_t){.cpu0_ns = -1,
                               .cpu1_ns = -1,
                               .runq0_ns = -1,
                               .runq1_ns = -1,
                               .plat = plat};
}

static snap__plat_sched_t os_said(unsigned run, unsigned call, int64_t cpu0,
                                  int64_t cpu1) {
  snap__plat_sched_t s = snap__plat_sched_unknown();
  s.run = (uint8_t)run;
  s.call_kind = (uint8_t)call;
  s.cpu_before_ns = cpu0;
  s.cpu_ns = cpu1;
  return s;
}

static snap_wait_t wait_of(unsigned kind) {
  snap_wait_t w = {.size = sizeof w};
  snap__plat_wait_none(&w);
  w.kind = kind;
  return w;
}

static unsigned state_of(const snap__state_facts_t *f) {
  return snap__state_judge(f).state;
}

static void test_blocked(void) {
  /* 1. Stopped: blocked, whatever a sample says. */
  snap__plat_sched_t stopped = os_said(SNAP__RUN_STOPPED, 0, 5, 5);
  snap__state_facts_t f = none(k_linux);
  f.os = &stopped;
  snap__thread_state_t s = snap__state_judge(&f);
  CHECK(s.state == SNAP__STATE_BLOCKED && s.kind == SNAP_WAIT_OTHER,
        "stopped: %u/%u", s.state, s.kind);

  /* 2. A sample found it waiting on a mutex: kind, address and owner. */
  snap_wait_t mu = wait_of(SNAP_WAIT_MUTEX);
  mu.address = 0x1000;
  mu.owner_state = SNAP_OWNER_KNOWN;
  mu.owner = 42;
  f = none(k_linux);
  f.wait = &mu;
  s = snap__state_judge(&f);
  CHECK(s.state == SNAP__STATE_BLOCKED && s.kind == SNAP_WAIT_MUTEX &&
            s.address == 0x1000 && s.owner_state == SNAP_OWNER_KNOWN &&
            s.owner == 42,
        "mutex: %u/%u %#lx owner %u:%lu", s.state, s.kind,
        (unsigned long)s.address, s.owner_state, (unsigned long)s.owner);
  /* ... and its owner is unknown when the wait says so. */
  mu.owner_state = SNAP_OWNER_UNKNOWN;
  s = snap__state_judge(&f);
  CHECK(s.owner_state == SNAP_OWNER_UNKNOWN && s.owner == 0, "owner unknown");
  /* A sleep, a poll, I/O: each its kind, from a signal or the OS. */
  const unsigned kinds[] = {SNAP_WAIT_SLEEP, SNAP_WAIT_POLL, SNAP_WAIT_IO,
                            SNAP_WAIT_CONDVAR, SNAP_WAIT_FUTEX};
  for (unsigned i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    snap_wait_t w = wait_of(kinds[i]);
    f = none(k_linux);
    f.wait = &w;
    s = snap__state_judge(&f);
    CHECK(s.state == SNAP__STATE_BLOCKED && s.kind == kinds[i], "kind %u",
          kinds[i]);
  }

  /* A call of kind other: a wait when the OS said so, or where the sample
     keeps the thread in its call (Apple: a mach_msg idle wait); a short
     call a signal interrupted on Linux (clock_gettime under qemu): not. */
  snap_wait_t other = wait_of(SNAP_WAIT_OTHER);
  f = none(k_linux);
  f.wait = &other;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
  f.wait_from_os = true;
  CHECK_EQ(state_of(&f), SNAP__STATE_BLOCKED);
  f = none(k_apple);
  f.wait = &other;
  CHECK_EQ(state_of(&f), SNAP__STATE_BLOCKED);

  /* 4. No sample: the OS's waiting state, in the call it names. */
  snap__plat_sched_t asleep = os_said(SNAP__RUN_WAITING, SNAP_WAIT_SLEEP, 7, 7);
  f = none(k_linux);
  f.os = &asleep;
  s = snap__state_judge(&f);
  CHECK(s.state == SNAP__STATE_BLOCKED && s.kind == SNAP_WAIT_SLEEP &&
            s.owner_state == SNAP_OWNER_NONE,
        "asleep: %u/%u", s.state, s.kind);
  asleep.call_kind = SNAP_WAIT_NONE; /* it names no call */
  s = snap__state_judge(&f);
  CHECK(s.state == SNAP__STATE_BLOCKED && s.kind == SNAP_WAIT_OTHER,
        "asleep, no call: %u/%u", s.state, s.kind);
  /* A sample taken after the reading found it running again: the sample
     is the later fact. */
  snap_wait_t nothing = wait_of(SNAP_WAIT_NONE);
  f.wait = &nothing;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
}

static void test_running_or_runnable(void) {
  /* 5a. The interval decides: the compute lag on a busy machine.
     Its one reading came when the watchdog, just woken, held its CPU: on
     a run queue, the clock unmoved across the read. Over the interval it
     ran 90 ms and waited 30: running. */
  snap__plat_sched_t queued = os_said(SNAP__RUN_READY, 0, 100, 100);
  snap__state_facts_t f = none(k_linux);
  f.os = &queued;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNABLE); /* the instant alone */
  f.cpu0_ns = 0;
  f.cpu1_ns = 90000000;
  f.runq0_ns = 0;
  f.runq1_ns = 30000000;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
  /* Starved: waited more than it ran. */
  f.runq1_ns = 200000000;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNABLE);
  /* A tie is running. */
  f.runq1_ns = 90000000;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
  /* A counter that went backwards (another thread behind the id): the
     interval is unknown, the instant decides. */
  f.runq0_ns = 500000000;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNABLE);

  /* 5b. The instant: the clock moved across the read: running. */
  snap__plat_sched_t on_cpu = os_said(SNAP__RUN_READY, 0, 100, 150);
  f = none(k_linux);
  f.os = &on_cpu;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
  /* Apple's clock grows only at kernel entries: unmoved says nothing. */
  f = none(k_apple);
  f.os = &queued;
  CHECK_EQ(state_of(&f), SNAP__STATE_READY);
  f.os = &on_cpu;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
  /* No clock at all: ready. */
  snap__plat_sched_t no_clock = os_said(SNAP__RUN_READY, 0, -1, -1);
  f = none(k_linux);
  f.os = &no_clock;
  CHECK_EQ(state_of(&f), SNAP__STATE_READY);

  /* 5c. Only a sample that found no wait (the signal ran on it). */
  snap_wait_t nothing = wait_of(SNAP_WAIT_NONE);
  f = none(k_linux);
  f.wait = &nothing;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
  /* ... which the interval still overrules: the trace's main thread. */
  f.cpu0_ns = 0, f.cpu1_ns = 1000000, f.runq0_ns = 0, f.runq1_ns = 3000000;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNABLE);

  /* 5a from a thread's own CPU-time ticks (the trace): two ticks 10 ms
     apart with 4 ms of CPU between them, no block between: the 6 ms the
     CPU time does not explain it waited for a CPU, more than it ran. */
  f = none(k_linux);
  f.wait = &nothing;
  f.cpu0_ns = 1000000, f.cpu1_ns = 5000000;
  f.runq0_ns = 0, f.runq1_ns = 10000000 - 4000000;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNABLE);
  f.runq1_ns = 7000000 - 4000000; /* 7 ms apart: it ran more */
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
  f.runq1_ns = 3000000 - 4000000; /* clocks a hair apart: no wait known */
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
}

/* 3. The trace follows a thread from sample to sample: one whose CPU time
   did not move since the reading before its previous sample did not run
   (an exact clock), and is where that sample found it, without a new
   sample. Each row fails without the rule (the answer would be rule 4's,
   5's or unknown). */
static void test_did_not_run(void) {
  snap__thread_state_t was_mutex = {.state = SNAP__STATE_BLOCKED,
                                    .kind = SNAP_WAIT_MUTEX,
                                    .owner_state = SNAP_OWNER_KNOWN,
                                    .address = 0x2000,
                                    .owner = 7};
  snap__thread_state_t was_running = {.state = SNAP__STATE_RUNNING,
                                      .kind = SNAP_WAIT_NONE,
                                      .owner_state = SNAP_OWNER_NONE};
  snap__plat_sched_t unread = snap__plat_sched_unknown();
  /* Linux: blocked on a mutex, CPU time unmoved, run state not read (the
     trace does not read it for a blocked thread): still on that mutex. */
  snap__state_facts_t f = none(k_linux);
  f.cpu0_ns = f.cpu1_ns = 5000;
  f.prev = &was_mutex;
  f.os = &unread;
  CHECK(snap__state_did_not_run(&f), "linux: unmoved, blocked before");
  snap__thread_state_t s = snap__state_judge(&f);
  CHECK(s.state == SNAP__STATE_BLOCKED && s.kind == SNAP_WAIT_MUTEX &&
            s.address == 0x2000 && s.owner_state == SNAP_OWNER_KNOWN &&
            s.owner == 7,
        "still on the mutex: %u/%u", s.state, s.kind);
  /* Woken (or preempted) and waiting for a CPU: runnable, although the
     OS's one reading has no clock across it (rule 5 would say ready) and
     it was blocked before. */
  snap__plat_sched_t ready = os_said(SNAP__RUN_READY, 0, -1, -1);
  f.os = &ready;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNABLE);
  /* ... and with the interval's run-queue wait unmoved too (a runnable
     thread's wait is charged when it gets a CPU): rule 5a's tie would
     say running. */
  f.runq0_ns = f.runq1_ns = 100;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNABLE);
  f.runq0_ns = f.runq1_ns = -1;
  /* Running at its previous sample, now neither running nor on a run
     queue, and it did not run: it went to sleep between the reading and
     that sample; on what, only a look can say (the OS's call when it
     names one, other otherwise). */
  f.prev = &was_running;
  f.os = &unread;
  s = snap__state_judge(&f);
  CHECK(s.state == SNAP__STATE_BLOCKED && s.kind == SNAP_WAIT_OTHER,
        "asleep after running: %u/%u", s.state, s.kind);
  snap__plat_sched_t asleep = os_said(SNAP__RUN_WAITING, SNAP_WAIT_POLL, 5, 5);
  f.os = &asleep;
  s = snap__state_judge(&f);
  CHECK(s.state == SNAP__STATE_BLOCKED && s.kind == SNAP_WAIT_POLL,
        "asleep in poll after running: %u/%u", s.state, s.kind);
  /* A previous blocked state outranks the OS's call: the sample decoded
     more (address, owner) and the thread has not moved since. */
  f.prev = &was_mutex;
  CHECK_EQ(snap__state_judge(&f).kind, SNAP_WAIT_MUTEX);

  /* Not "did not run": its CPU time moved, went backwards (another thread
     behind the id), or is unknown; a first sample (no prev); a sample
     taken in the interval (the later fact). */
  f = none(k_linux);
  f.prev = &was_mutex;
  f.os = &unread;
  f.cpu0_ns = 5000, f.cpu1_ns = 6000;
  CHECK(!snap__state_did_not_run(&f), "linux: moved");
  CHECK_EQ(state_of(&f), SNAP__STATE_UNKNOWN); /* a sample must say */
  f.cpu0_ns = 6000, f.cpu1_ns = 5000;
  CHECK(!snap__state_did_not_run(&f), "linux: backwards");
  f.cpu0_ns = -1, f.cpu1_ns = 5000;
  CHECK(!snap__state_did_not_run(&f), "linux: first reading");
  f.cpu0_ns = f.cpu1_ns = 5000;
  f.prev = NULL;
  CHECK(!snap__state_did_not_run(&f), "linux: first sample");
  snap_wait_t nothing = wait_of(SNAP_WAIT_NONE);
  f.prev = &was_mutex;
  f.wait = &nothing;
  CHECK(!snap__state_did_not_run(&f), "linux: sampled since");
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
  /* Without a sampler that follows it (the watchdog's points: no prev),
     an unmoved clock is rule 4's and 5's to read, as before: asleep in
     the call the OS names; ready, and the interval's tie is running. */
  f = none(k_linux);
  f.cpu0_ns = f.cpu1_ns = 5000;
  snap__plat_sched_t asleep_sleep =
      os_said(SNAP__RUN_WAITING, SNAP_WAIT_SLEEP, 5, 5);
  f.os = &asleep_sleep;
  CHECK_EQ(snap__state_judge(&f).kind, SNAP_WAIT_SLEEP);
  f.os = &ready;
  f.runq0_ns = f.runq1_ns = 100;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);

  /* Apple (issue 23): CPU time is charged only at kernel entries, so a
     main thread that woke and computes without system calls shows the
     CPU time it had while its run state is TH_STATE_RUNNING: it may have
     run (the trace captures it again), and is not runnable. */
  f = none(k_apple);
  f.cpu0_ns = f.cpu1_ns = 5000;
  f.prev = &was_mutex;
  f.os = &ready;
  CHECK(!snap__state_did_not_run(&f), "apple: ready with unmoved CPU time");
  CHECK_EQ(state_of(&f), SNAP__STATE_READY);
  /* Waiting, or its run state unknown, with unmoved CPU time: it did not
     run. */
  f.os = &unread;
  CHECK(snap__state_did_not_run(&f), "apple: not ready, unmoved");
  CHECK_EQ(snap__state_judge(&f).kind, SNAP_WAIT_MUTEX);
  f.os = NULL;
  CHECK(snap__state_did_not_run(&f), "apple: run state not read");
  f.cpu1_ns = 6000;
  CHECK(!snap__state_did_not_run(&f), "apple: moved");
  f.prev = NULL;
  f.cpu1_ns = 5000;
  CHECK(!snap__state_did_not_run(&f), "apple: first sample");
}

/* Rule 2 from the trace's captures (issue 23's test_trace_state): a
   suspended thread in mach_msg (decoded other, no OS flag) or poll is
   blocked on Apple; one that left its call is running; on Linux no call
   found is running even where the OS flagged the thread blocked (the
   walk came after it woke), and a mutex wait is blocked. */
static void test_capture_waits(void) {
  snap_wait_t poll = wait_of(SNAP_WAIT_POLL);
  snap_wait_t nothing = wait_of(SNAP_WAIT_NONE);
  snap_wait_t mutex = wait_of(SNAP_WAIT_MUTEX);
  snap__state_facts_t f = none(k_apple);
  f.wait = &poll;
  snap__thread_state_t s = snap__state_judge(&f);
  CHECK(s.state == SNAP__STATE_BLOCKED && s.kind == SNAP_WAIT_POLL,
        "apple poll: %u/%u", s.state, s.kind);
  f.wait = &nothing;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
  f = none(k_linux);
  f.wait = &nothing;
  f.wait_from_os = true;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
  f.wait = &mutex;
  f.wait_from_os = false;
  CHECK_EQ(state_of(&f), SNAP__STATE_BLOCKED);
}

static void test_unknown(void) {
  snap__state_facts_t f = none(k_linux);
  snap__thread_state_t s = snap__state_judge(&f);
  CHECK(s.state == SNAP__STATE_UNKNOWN && s.kind == SNAP_WAIT_NONE &&
            s.owner_state == SNAP_OWNER_NONE,
        "nothing known");
  snap__plat_sched_t unknown = snap__plat_sched_unknown();
  f.os = &unknown;
  CHECK_EQ(state_of(&f), SNAP__STATE_UNKNOWN);
  /* An interval without a reading or a sample does not say it ran. */
  f.cpu0_ns = 0, f.cpu1_ns = 10, f.runq0_ns = 0, f.runq1_ns = 0;
  CHECK_EQ(state_of(&f), SNAP__STATE_UNKNOWN);
}

static void test_samples(void) {
  uint32_t by[SNAP__STATE_COUNT] = {0};
  uint32_t waits[SNAP_WAIT_KIND_COUNT] = {0};
  CHECK_EQ(snap__state_of_samples(by, waits).state, SNAP__STATE_UNKNOWN);
  by[SNAP__STATE_UNKNOWN] = 10; /* unknown samples do not vote */
  CHECK_EQ(snap__state_of_samples(by, waits).state, SNAP__STATE_UNKNOWN);
  by[SNAP__STATE_BLOCKED] = 3;
  by[SNAP__STATE_RUNNING] = 2;
  waits[SNAP_WAIT_MUTEX] = 1;
  waits[SNAP_WAIT_IO] = 2;
  snap__thread_state_t s = snap__state_of_samples(by, waits);
  CHECK(s.state == SNAP__STATE_BLOCKED && s.kind == SNAP_WAIT_IO,
        "3 of 5 blocked, mostly io: %u/%u", s.state, s.kind);
  s = snap__state_of_samples(by, NULL);
  CHECK(s.state == SNAP__STATE_BLOCKED && s.kind == SNAP_WAIT_OTHER,
        "no kinds: other");
  by[SNAP__STATE_RUNNING] = 3; /* a tie is not most */
  CHECK_EQ(snap__state_of_samples(by, waits).state, SNAP__STATE_RUNNING);
  by[SNAP__STATE_BLOCKED] = 0;
  by[SNAP__STATE_RUNNABLE] = 4;
  CHECK_EQ(snap__state_of_samples(by, waits).state, SNAP__STATE_RUNNABLE);
  memset(by, 0, sizeof by);
  by[SNAP__STATE_READY] = 5; /* Apple: running or runnable, not told */
  by[SNAP__STATE_RUNNING] = 1;
  CHECK_EQ(snap__state_of_samples(by, waits).state, SNAP__STATE_READY);
}

static void test_names(void) {
  static const char *const names[SNAP__STATE_COUNT] = {
      "unknown", "running", "runnable", "running_or_runnable", "blocked"};
  for (unsigned i = 0; i < SNAP__STATE_COUNT; i++)
    CHECK(snap__state_name(i) && !strcmp(snap__state_name(i), names[i]),
          "state %u: %s", i, snap__state_name(i));
  CHECK(snap__state_name(SNAP__STATE_COUNT) == NULL, "out of range");
}

int main(void) {
  test_blocked();
  test_running_or_runnable();
  test_did_not_run();
  test_capture_waits();
  test_unknown();
  test_samples();
  test_names();
  return check_result("test_blocked_state");
}
