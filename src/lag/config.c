/*
 * config.c — the lag watchdog's configuration: its defaults and the ranges
 * snap_lag_start accepts.
 *
 * Owns: snap_lag_config_default and the range check (the values and ranges
 * stacksnap.h documents). Must not: keep the caller's struct or its
 * strings (snap_lag_start copies what it needs), or start anything.
 */
#include <string.h>

#include "lag/lag.h"

SNAP_EXPORT void snap_lag_config_default(snap_lag_config_t *cfg) {
  if (!cfg)
    return;
  memset(cfg, 0, sizeof *cfg);
  cfg->threshold_ms = 250;
  cfg->sample_interval_ms = 50;
  cfg->ring_size = 20;
  cfg->hang_ms = 8000;
  cfg->cpu_percent = 80;
  cfg->retention_days = 7;
  cfg->max_reports_per_day = 20;
  cfg->cpu_window_ms = 5000;
  cfg->max_threads = 64;
}

static bool in(unsigned v, unsigned lo, unsigned hi) {
  return v >= lo && v <= hi;
}

int snap__lag_config_check(const snap_lag_config_t *c) {
  if (!c || !c->report_dir || !c->report_dir[0] ||
      strlen(c->report_dir) >= sizeof((snap__lag_store_t *)0)->dir)
    return SNAP_EINVAL;
  if (!in(c->threshold_ms, 10, 60000) ||
      !in(c->hang_ms, c->threshold_ms, 3600000) ||
      (c->sample_interval_ms &&
       !in(c->sample_interval_ms, 1, c->threshold_ms)) ||
      (c->sample_interval_ms && !in(c->ring_size, 1, 1000)) ||
      c->ring_size > 1000 || c->cpu_percent > 100 ||
      !in(c->retention_days, 1, 3650) ||
      !in(c->max_reports_per_day, 1, 100000) ||
      !in(c->cpu_window_ms, 100, 600000) || !in(c->max_threads, 1, 1024))
    return SNAP_EINVAL;
  return SNAP_OK;
}
