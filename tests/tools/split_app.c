/*
 * split_app.c — the program of the stripped-build round trip
 * (test_symbolicate.py): it lags, on purpose, in a static function of its
 * own called through the split library, under the watchdog:
 *   main -> app_static_outer -> split_lib_run -> lib_static_relay
 *        -> app_static_spin (computes until its time is up)
 * Built with -g; the test strips it and its library, keeps their debug
 * files apart, runs it, and names the report afterwards.
 *
 *   split_app REPORT_DIR
 * Exits 0 once one final lag report is written (it prints its path).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../test_clock.h"
#include "stacksnap.h"

uint64_t split_lib_run(uint64_t (*fn)(int), int n);

static char g_report[1024];
static atomic_int g_final;

static void on_write(const char *path, bool final, void *ctx) {
  (void)ctx;
  if (final && !atomic_load(&g_final)) {
    snprintf(g_report, sizeof g_report, "%s", path);
    atomic_store(&g_final, 1);
  }
}

/* The lag: CPU work until 600 ms of wall time have passed (a starved
   process computes less, but still lags as long). */
__attribute__((noinline)) static uint64_t app_static_spin(int n) {
  volatile uint64_t x = (uint64_t)n;
  int64_t end = mono_ms() + 600;
  while (mono_ms() < end)
    for (int i = 0; i < 10000; i++)
      x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

__attribute__((noinline)) static uint64_t app_static_outer(int n) {
  uint64_t r = split_lib_run(app_static_spin, n);
  __asm__ volatile("" ::: "memory");
  return r;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: split_app REPORT_DIR\n");
    return 2;
  }
  snap_lag_config_t c;
  snap_lag_config_default(&c);
  c.report_dir = argv[1];
  c.threshold_ms = 200;
  c.cpu_percent = 0;
  c.on_report_write = on_write;
  if (snap_lag_start(&c) != SNAP_OK) {
    fprintf(stderr, "split_app: snap_lag_start failed\n");
    return 1;
  }
  /* Up to 5 lags: the watchdog may be starved on a loaded box; one final
     report is all the test needs. */
  uint64_t sink = 0;
  for (int round = 0; round < 5 && !atomic_load(&g_final); round++) {
    snap_lag_loop_busy();
    sink += app_static_outer(round);
    snap_lag_loop_idle();
    int64_t until = mono_ms() + 10000;
    while (!atomic_load(&g_final) && mono_ms() < until)
      sleep_ms(10);
  }
  snap_lag_stop();
  if (!atomic_load(&g_final)) {
    fprintf(stderr, "split_app: no final report\n");
    return 1;
  }
  printf("%s\n", g_report);
  return sink == 42 ? 3 : 0; /* keeps the work */
}
