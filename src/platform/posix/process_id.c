/*
 * process_id.c — the process id, for lag reports.
 *
 * Owns: nothing but getpid(). Must not: cache the value (a forked child
 * has its own).
 */
#include <unistd.h>

#include "platform/platform.h"
#include "platform/process.h"

int64_t snap__plat_process_id(void) { return (int64_t)getpid(); }
