/*
 * cpu_trigger.c — the CPU trigger: the main thread above cpu_percent of a
 * core over a window gives a "cpu" report, even when every loop iteration
 * is short (no lag).
 *
 * Owns: the window (its start, the main thread's CPU time then, whether
 * the last one was hot). One report per hot episode: the CPU must drop
 * below the percentage for a window before the next. Must not: sample,
 * write, or read a clock: the watchdog passes the time and the CPU
 * reading in, and writes the report (report.c) when told to.
 *
 * Time the whole process did not run does not count as wall time of the
 * window (snap__cpu_trigger_discount), but the ring's points are still
 * taken from the window's real start.
 */
#include "lag/lag.h"

void snap__cpu_trigger_start(snap__cpu_trigger_t *t, unsigned percent,
                             uint64_t window_ns, uint64_t now, int64_t cpu) {
  *t = (snap__cpu_trigger_t){.percent = percent,
                             .window_ns = window_ns,
                             .t0 = now,
                             .ring_t0 = now,
                             .cpu0 = cpu};
}

uint64_t snap__cpu_trigger_due(const snap__cpu_trigger_t *t) {
  return t->percent ? t->t0 + t->window_ns : UINT64_MAX;
}

void snap__cpu_trigger_discount(snap__cpu_trigger_t *t, uint64_t late) {
  t->t0 += late;
}

bool snap__cpu_trigger_close(snap__cpu_trigger_t *t, uint64_t now, int64_t cpu,
                             snap__cpu_episode_t *e) {
  uint64_t wall = now - t->t0;
  bool hot = false;
  unsigned pct = 0;
  if (cpu >= 0 && t->cpu0 >= 0 && wall > 0) {
    pct = (unsigned)((uint64_t)(cpu - t->cpu0) * 100 / wall);
    hot = pct >= t->percent;
  }
  bool begins = hot && !t->hot;
  if (begins)
    *e = (snap__cpu_episode_t){.percent = pct,
                               .wall_ns = wall,
                               .cpu_ns = cpu - t->cpu0,
                               .ring_since_ns = t->ring_t0};
  t->hot = hot;
  t->t0 = now;
  t->ring_t0 = now;
  t->cpu0 = cpu;
  return begins;
}
