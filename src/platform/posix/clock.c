/*
 * clock.c — the two clocks the lag watchdog reads: a monotonic one for
 * every duration and deadline, and the wall clock for report names and
 * dates. POSIX, so both backends compile it.
 *
 * The monotonic clock must not count time the machine slept: a laptop
 * suspended with the app's loop busy is not a lag, and a watchdog that
 * counted the sleep would report a "hang" on every resume.
 *  - Linux: CLOCK_MONOTONIC, which stops during suspend (CLOCK_BOOTTIME is
 *    the one that counts it). clock_gettime reads it from the vDSO, no
 *    system call.
 *  - Apple: CLOCK_UPTIME_RAW through clock_gettime_nsec_np (mach absolute
 *    time in nanoseconds, read from the commpage), which also stops while
 *    asleep. Apple's CLOCK_MONOTONIC counts sleep, so it is not used.
 * The sem_timedwait of each backend measures its deadline against this
 * same clock.
 *
 * The coarse clock is the same clock read to the kernel's tick (Linux's
 * CLOCK_MONOTONIC_COARSE, Apple's CLOCK_UPTIME_RAW_APPROX): 5-6 ns a read
 * here against 25-27 for the exact one, for a check made on every naming
 * call whose interval is tens of ms.
 *
 * Must not: fail loudly. clock_gettime on these clocks cannot fail with
 * valid arguments; if it ever did, 0 is returned rather than garbage.
 */
#include <time.h>

#include "platform/platform.h"

/* Nanoseconds on clock id, 0 if it cannot be read. */
static uint64_t read_ns(clockid_t id) {
  struct timespec ts;
  if (clock_gettime(id, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t snap__plat_now_ns(void) {
#ifdef __APPLE__
  return clock_gettime_nsec_np(CLOCK_UPTIME_RAW);
#else
  return read_ns(CLOCK_MONOTONIC);
#endif
}

uint64_t snap__plat_coarse_ns(void) {
#ifdef __APPLE__
  return clock_gettime_nsec_np(CLOCK_UPTIME_RAW_APPROX);
#else
  return read_ns(CLOCK_MONOTONIC_COARSE);
#endif
}

int64_t snap__plat_process_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
    return -1;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t snap__plat_unix_ns(void) { return read_ns(CLOCK_REALTIME); }

int64_t snap__plat_unix_ms(void) {
  return (int64_t)(read_ns(CLOCK_REALTIME) / 1000000u);
}
