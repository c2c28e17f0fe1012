/*
 * config.c — the lag watchdog's configuration: its defaults, its versions
 * (by size) and the ranges snap_lag_start accepts.
 *
 * Owns: snap_lag_config_init, reading a caller's config into the layout
 * this library knows, and the range check (values and ranges as
 * stacksnap.h documents them). Must not: keep the caller's struct or its
 * strings (snap_lag_start copies what it needs), read or write past the
 * caller's size, or start anything.
 *
 * Versions (API v1): the struct's first field is the caller's sizeof. A
 * later version appends fields after the last one, at or past the previous
 * version's size (never in its tail padding: a struct copy need not copy
 * padding, so those bytes may hold anything), and lists its size in
 * k_sizes; a size names one layout. A caller of an older layout gets the
 * defaults for the fields it does not have.
 */
#include <string.h>

#include "lag/lag.h"
#include "report/report.h"

#define ROUND_UP(n, a) (((n) + (a)-1) / (a) * (a))
/* v1 ends with report_when_traced; its alignment is a pointer's. */
#define SIZE_V1                                                                \
  ROUND_UP(offsetof(snap_lag_config_t, report_when_traced) + sizeof(bool),     \
           _Alignof(void *))

_Static_assert(offsetof(snap_lag_config_t, size) == 0,
               "snap_lag_config_t: size must be the first field");
/* v2 (1.1.0) adds on_report_write and dump_budget_ms, right past v1's
   size. */
_Static_assert(offsetof(snap_lag_config_t, on_report_write) == SIZE_V1,
               "snap_lag_config_t: v2's first field must start at v1's size");
#define SIZE_V2                                                                \
  ROUND_UP(offsetof(snap_lag_config_t, dump_budget_ms) + sizeof(unsigned),     \
           _Alignof(void *))
_Static_assert(sizeof(void *) != 8 || SIZE_V2 == 88,
               "snap_lag_config_t: the v2 layout changed");
/* v3 (1.3.0) adds file_mode, past v2's size: reserved_v2_ fills v2's tail
   padding where the pointer alignment leaves one. */
#define SIZE_V3 sizeof(snap_lag_config_t)
_Static_assert(offsetof(snap_lag_config_t, file_mode) >= SIZE_V2,
               "snap_lag_config_t: v3's first field must start past v2's size");
_Static_assert(SIZE_V3 == ROUND_UP(offsetof(snap_lag_config_t, file_mode) +
                                       sizeof(unsigned),
                                   _Alignof(void *)),
               "snap_lag_config_t grew: list the new version's size in "
               "k_sizes and pin its layout here");
_Static_assert(sizeof(void *) != 8 ||
                   (offsetof(snap_lag_config_t, file_mode) == 88 &&
                    SIZE_V3 == 96),
               "snap_lag_config_t: the v3 layout changed");
/* The v1 layout where it ships (LP64: arm64, x86_64): a field inserted,
   moved or retyped breaks every caller built before. */
_Static_assert(sizeof(void *) != 8 ||
                   (offsetof(snap_lag_config_t, threshold_ms) == 4 &&
                    offsetof(snap_lag_config_t, report_dir) == 24 &&
                    offsetof(snap_lag_config_t, on_report) == 40 &&
                    offsetof(snap_lag_config_t, cpu_window_ms) == 56 &&
                    offsetof(snap_lag_config_t, report_when_traced) == 64 &&
                    SIZE_V1 == 72),
               "snap_lag_config_t: the v1 layout changed");

static const size_t k_sizes[] = {SIZE_V1, SIZE_V2, SIZE_V3};

static bool known_size(size_t size) {
  for (size_t i = 0; i < sizeof k_sizes / sizeof *k_sizes; i++)
    if (k_sizes[i] == size)
      return true;
  return false;
}

SNAP_EXPORT void snap_lag_config_init(snap_lag_config_t *cfg, size_t size) {
  if (!cfg || size < sizeof cfg->size)
    return;
  if (!known_size(size)) { /* zeroes, and a size snap_lag_start refuses */
    memset(cfg, 0, size);
    cfg->size = (uint32_t)size;
    return;
  }
  snap_lag_config_t d;
  memset(&d, 0, sizeof d);
  d.size = (uint32_t)size;
  d.threshold_ms = 250;
  d.sample_interval_ms = 50;
  d.ring_size = 20;
  d.hang_ms = 8000;
  d.cpu_percent = 80;
  d.retention_days = 7;
  d.max_reports_per_day = 20;
  d.cpu_window_ms = 5000;
  d.max_threads = 64;
  d.dump_budget_ms = 200;
  d.file_mode = SNAP__REPORT_MODE;
  memcpy(cfg, &d, size); /* size <= sizeof d: a known layout */
}

int snap__lag_config_read(const snap_lag_config_t *in, snap_lag_config_t *out) {
  if (!in || !known_size(in->size))
    return SNAP_EINVAL;
  snap_lag_config_init(out, sizeof *out);
  memcpy(out, in, in->size); /* only what the caller has */
  out->size = sizeof *out;
  return snap__lag_config_check(out);
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
      !in(c->cpu_window_ms, 100, 600000) || !in(c->max_threads, 1, 1024) ||
      !in(c->dump_budget_ms, 1, 10000) || !snap__report_mode_ok(c->file_mode))
    return SNAP_EINVAL;
  return SNAP_OK;
}
