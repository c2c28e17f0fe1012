/*
 * runloop_nesting.c — busy or idle from CFRunLoop observer activities, with
 * nested runs counted.
 *
 * What CFRunLoop emits (CF-Lite, CFRunLoop.c; docs/apple.md "Run loop
 * nesting"): CFRunLoopRunSpecific calls the Entry observers, then
 * __CFRunLoopRun, then the Exit observers, of the mode it runs. Each
 * iteration of __CFRunLoopRun: BeforeTimers, BeforeSources, blocks and
 * sources0, then — unless it polls (a source0 was handled, or the timeout
 * is 0) or a main-queue message is already waiting — BeforeWaiting, sleep,
 * AfterWaiting; then the timer, port or main-queue work that woke it. A
 * handler called from any of these may run the loop again (a modal panel,
 * a synchronous wait spinning CFRunLoopRunInMode): the nested run's Entry
 * ... Exit happens inside the outer handler, which goes on working after
 * the nested Exit.
 *
 * The rules:
 *  - Entry: depth + 1. Busy if we were idle (an outermost run starts);
 *    inside a handler the stretch already running goes on.
 *  - BeforeSources, AfterWaiting: busy (the stretch restarts: input is
 *    being handled again), at any depth.
 *  - BeforeWaiting: idle, at any depth. A nested run that sleeps waits for
 *    events exactly as the outermost does, and handles them when they come
 *    (a modal alert waiting for a tap is not a hang).
 *  - Exit: depth - 1. Back inside an outer run (depth still > 0), the
 *    handler that started the nested run carries on: busy, never idle.
 *    That is the point of counting: with Exit -> idle, the outer handler's
 *    work after a nested run returned was invisible. If the nested run's
 *    last act left us idle (no path in CF does: every sleep ends with
 *    AfterWaiting before the run can return), busy restarts here; else the
 *    stretch running since the nested run's last wake goes on, because the
 *    thread has not slept since. Leaving the outermost run (depth 0, or an
 *    Exit whose Entry we never saw) is idle: the thread leaves the loop.
 *  - BeforeTimers and anything else: nothing.
 * Depth is a count of runs whose Entry we saw, plus the runs already going
 * when the observers were added (the caller says how many; it can know
 * only whether the loop is running, so it says 1). A run in a mode we do
 * not observe emits nothing and is not counted: its handlers' time is part
 * of the stretch around it.
 *
 * Must not: name a CF type or an Apple header (tested on Linux), allocate,
 * lock or make a call (it runs on every iteration of the app's main loop).
 */
#include "platform/darwin/runloop_nesting.h"

void snap__rl_nesting_init(snap__rl_nesting_t *n, unsigned depth, bool busy) {
  n->depth = depth;
  n->busy = busy;
}

static enum snap__rl_verdict say(snap__rl_nesting_t *n, bool busy) {
  n->busy = busy;
  return busy ? SNAP__RL_BUSY : SNAP__RL_IDLE;
}

enum snap__rl_verdict snap__rl_nesting_step(snap__rl_nesting_t *n,
                                            unsigned activity) {
  switch (activity) {
  case SNAP__RL_ENTRY:
    n->depth++;
    return n->busy ? SNAP__RL_NOTHING : say(n, true);
  case SNAP__RL_BEFORE_SOURCES:
  case SNAP__RL_AFTER_WAITING: return say(n, true);
  case SNAP__RL_BEFORE_WAITING: return say(n, false);
  case SNAP__RL_EXIT:
    if (n->depth > 0)
      n->depth--;
    if (n->depth == 0)
      return say(n, false);
    return n->busy ? SNAP__RL_NOTHING : say(n, true);
  default: return SNAP__RL_NOTHING;
  }
}
