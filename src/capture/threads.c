/*
 * threads.c — the public thread functions: thin, checked forwards to the
 * platform, which owns what a thread id means.
 */
#include "platform/platform.h"

snap_thread_t snap_thread_self(void) { return snap__plat_thread_self(); }

snap_thread_t snap_thread_main(void) { return snap__plat_thread_main(); }

int snap_thread_list(snap_thread_t *out, int max) {
  if (max < 0 || (max > 0 && !out))
    return SNAP_EINVAL;
  return snap__plat_thread_list(out, max);
}

int snap_thread_is_running(snap_thread_t thread) {
  return snap__plat_thread_is_running(thread);
}
