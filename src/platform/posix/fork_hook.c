/*
 * fork_hook.c — runs a function in the child of every fork().
 *
 * Owns: registering the core's child handlers (the lag watchdog's). Must
 * not: do work in the handler itself — a child of a threaded process may
 * only touch what it owns, so handlers only reset state.
 */
#include <pthread.h>

#include "platform/platform.h"
#include "platform/process.h"

int snap__plat_on_fork_child(void (*fn)(void)) {
  return pthread_atfork(NULL, NULL, fn) == 0 ? SNAP_OK : SNAP_ENOMEM;
}
