/*
 * runloop_nesting.h — what one CFRunLoop observer callback means for the
 * lag watchdog, with nested runs counted: a pure state machine (no CF type,
 * no Apple header) so it is built and tested on Linux.
 *
 * runloop.c feeds it every activity its observers see on one run loop and
 * makes the call it answers (snap_lag_loop_busy / snap_lag_loop_idle). The
 * rules, and why, are in runloop_nesting.c.
 */
#ifndef SNAP_PLATFORM_DARWIN_RUNLOOP_NESTING_H
#define SNAP_PLATFORM_DARWIN_RUNLOOP_NESTING_H

#include <stdbool.h>

/* CFRunLoopActivity's values (<CoreFoundation/CFRunLoop.h>), spelled out so
   this header needs no Apple header; runloop.c checks them against CF's. */
enum snap__rl_activity {
  SNAP__RL_ENTRY = 1u << 0,
  SNAP__RL_BEFORE_TIMERS = 1u << 1,
  SNAP__RL_BEFORE_SOURCES = 1u << 2,
  SNAP__RL_BEFORE_WAITING = 1u << 5,
  SNAP__RL_AFTER_WAITING = 1u << 6,
  SNAP__RL_EXIT = 1u << 7
};

enum snap__rl_verdict {
  SNAP__RL_NOTHING = 0, /* keep the state the watchdog has */
  SNAP__RL_BUSY = 1,    /* snap_lag_loop_busy: a busy stretch starts now */
  SNAP__RL_IDLE = 2     /* snap_lag_loop_idle: the thread is about to sleep
                           or has left its outermost run */
};

typedef struct snap__rl_nesting {
  unsigned depth; /* observed runs active on the loop's thread */
  bool busy;      /* the last verdict given was BUSY */
} snap__rl_nesting_t;

/* Starts the count. depth: runs already active when the observers were
   added (their Entry was never seen): 1 if the loop is running then, else
   0. Observers are called on the run loop's own thread only, one at a time,
   so the state needs no atomics. */
void snap__rl_nesting_init(snap__rl_nesting_t *n, unsigned depth, bool busy);

/* One observer callback of one activity (an unknown value: NOTHING). */
enum snap__rl_verdict snap__rl_nesting_step(snap__rl_nesting_t *n,
                                            unsigned activity);

#endif /* SNAP_PLATFORM_DARWIN_RUNLOOP_NESTING_H */
