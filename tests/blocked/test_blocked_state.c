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

  /* 3. No sample: the OS's waiting state, in the call it names. */
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
  /* 4a. The interval decides: the compute lag on a busy machine.
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

  /* 4b. The instant: the clock moved across the read: running. */
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

  /* 4c. Only a sample that found no wait (the signal ran on it). */
  snap_wait_t nothing = wait_of(SNAP_WAIT_NONE);
  f = none(k_linux);
  f.wait = &nothing;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNING);
  /* ... which the interval still overrules: the trace's main thread. */
  f.cpu0_ns = 0, f.cpu1_ns = 1000000, f.runq0_ns = 0, f.runq1_ns = 3000000;
  CHECK_EQ(state_of(&f), SNAP__STATE_RUNNABLE);
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
  test_unknown();
  test_samples();
  test_names();
  return check_result("test_blocked_state");
}
