/*
 * process.h — the platform seam's answers about this process and its
 * life: whether a tracer is attached, its id and a token that tells it
 * from a later process with the same id, the library's own helper
 * threads, the child of a fork, and symbols of libraries already loaded.
 *
 * Owns: declarations only; platform/posix and the backends define them.
 * Kept out of platform.h, which holds what capture needs, so that the
 * seam the walker depends on does not carry what only the lag watchdog,
 * its reports and the trace ask. Must not: hold a policy (what a report
 * does with a pid, which state a fork resets: the callers decide); name
 * an OS type in a signature. Nothing here runs in the stopped window
 * unless tagged [signal-safe].
 */
#ifndef SNAP_PLATFORM_PROCESS_H
#define SNAP_PLATFORM_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacksnap.h"

/* True when a debugger (or any tracer) is attached to the process now. */
bool snap__plat_is_traced(void);
/* The process id (written into reports). */
int64_t snap__plat_process_id(void);
/* A token that tells process `pid` from every other process that had or
   will have that pid (pids are reused), into buf (NUL-terminated; 64 bytes
   are enough): written beside the pid into reports, so a later start can
   tell a live writer from a dead one. Compare tokens for equality only.
   Linux: the boot id and the start time in clock ticks since boot
   (/proc/<pid>/task/<pid>/stat field 22); Apple: sysctl(KERN_PROC_PID)'s
   p_starttime. SNAP_OK; SNAP_ENOTHREAD when no such process runs (it never
   did, it exited, or it is a zombie); another negative code when the OS
   does not say (an Apple sandbox hiding other processes, /proc unreadable):
   then nothing is known. [setup] */
int snap__plat_process_start(int64_t pid, char *buf, size_t size);

/* A joinable helper thread (the watchdog). */
typedef struct snap__plat_thread {
  _Alignas(16) unsigned char opaque[16];
} snap__plat_thread_t;
/* Starts fn(arg) on a new thread with every signal blocked (so the app's
   signals keep going to its own threads). SNAP_OK or SNAP_ENOMEM. */
int snap__plat_thread_start(snap__plat_thread_t *t, void (*fn)(void *),
                            void *arg, const char *name);
void snap__plat_thread_join(snap__plat_thread_t *t);
/* Whether t is one of the threads snap__plat_thread_start started and
   whose fn has not returned: the library's own, which the lag dump and
   the trace leave out. [signal-safe] */
bool snap__plat_thread_is_ours(snap_thread_t t);

/* A symbol of an already loaded library (NULL if none): for adapters of
   loop libraries the app brings, so stacksnap never links them. */
void *snap__plat_find_symbol(const char *name);

#endif /* SNAP_PLATFORM_PROCESS_H */
