/*
 * report_store.c — the report directory: new reports, updates, the daily
 * cap, retention, and reports left ongoing by a process that died.
 *
 * Owns: file names ("<start_unix_ms>-<kind>.json") and what happens to
 * the files. Must not: build report text (report_json.c), write a file
 * but through src/report/, or touch a file whose name is not exactly one
 * we write (a report_dir may hold other things: "0001-hang.json" is not
 * ours, and retention leaves it alone).
 *
 * Every write goes through snap__report_replace (an exclusive temp file,
 * fsync, rename, fsync of the directory; never through a link, never over
 * a FIFO or a device), so a kill at any instant leaves each report either
 * as it was or as it is now, never half written. Reading back takes
 * regular files only: a FIFO named like a report cannot hang the start. A
 * report is written "ongoing" and rewritten as the lag goes on; a process
 * killed during a lag therefore leaves an ongoing report, which the next start
 * turns into a "hang_killed" one: the same content, kind and flag changed.
 * But an ongoing report is not always a dead process's: another live
 * process may share the directory, and a final write that failed (a full
 * disk) leaves a finished lag ongoing. So the start asks the report's
 * writer ("pid" and "pid_start", which tells a live process from a dead
 * one whose pid was reused): alive, or unknown, the report is left alone;
 * this very process (a previous watchdog, stopped with its final write
 * still failing), it is finished (the flag turned false); gone, it becomes
 * hang_killed. Reports without "pid_start" (older versions) are judged as
 * before: gone.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lag/lag.h"
#include "report/report.h"

#define DAY_MS INT64_C(86400000)
/* Reports are tens to hundreds of KiB; anything far larger is not ours. */
#define MAX_REPORT_BYTES (64u << 20)

/* Parses "<ms>-<kind>.json" as make_name writes it; false for any other
   name (a leading zero among them: snap__report_ms_prefix). */
static bool parse_name(const char *name, int64_t *ms, snap__lag_kind_t *kind) {
  int64_t v;
  size_t digits = snap__report_ms_prefix(name, &v);
  if (!digits)
    return false;
  const char *k = name + digits + 1;
  for (int i = 0; i < SNAP__KIND_COUNT; i++) {
    const char *text = snap__lag_kind_name((snap__lag_kind_t)i);
    size_t kl = strlen(text);
    if (strncmp(k, text, kl) == 0 && strcmp(k + kl, ".json") == 0) {
      *ms = v;
      *kind = (snap__lag_kind_t)i;
      return true;
    }
  }
  return false;
}

/* "<ms>-dropped.json": the daily cap's count of a day (report.c), with the
   date exactly as it is written (snap__report_ms_prefix: no leading zero),
   so retention removes no name the library did not make. */
static bool parse_dropped_name(const char *name, int64_t *ms) {
  size_t digits = snap__report_ms_prefix(name, ms);
  return digits > 0 && strcmp(name + digits, "-dropped.json") == 0;
}

static void make_name(char name[64], int64_t ms, snap__lag_kind_t kind) {
  snprintf(name, 64, "%" PRId64 "-%s.json", ms, snap__lag_kind_name(kind));
}

/* The sampling trace beside a report (report.c writes it). */
static void make_trace_name(char name[64], int64_t ms) {
  snprintf(name, 64, "%" PRId64 "-trace.pftrace", ms);
}

static bool is_trace_name(const char *name) {
  int64_t ms;
  size_t digits = snap__report_ms_prefix(name, &ms);
  return digits && strcmp(name + digits, "-trace.pftrace") == 0;
}

static void announce(snap__lag_store_t *st, const char *name, bool final) {
  if (!st->on_report && !st->on_report_write)
    return;
  char path[1200];
  snprintf(path, sizeof path, "%s/%s", st->dir, name);
  if (st->on_report)
    st->on_report(path, st->ctx);
  if (st->on_report_write)
    st->on_report_write(path, final, st->ctx);
}

/* ---- Start: clean up, retention, recovery -------------------------------- */

typedef struct names {
  char (*v)[64];
  size_t n, cap;
  bool failed;
} names_t;

static void collect(const char *name, void *ctx) {
  names_t *ns = ctx;
  if (strlen(name) >= 64)
    return;
  if (ns->n == ns->cap) {
    size_t cap = ns->cap ? ns->cap * 2 : 64;
    char(*v)[64] = realloc(ns->v, cap * sizeof *v);
    if (!v) {
      ns->failed = true;
      return;
    }
    ns->v = v;
    ns->cap = cap;
  }
  strcpy(ns->v[ns->n++], name);
}

static int list(const snap__lag_store_t *st, names_t *ns) {
  memset(ns, 0, sizeof *ns);
  int rc = snap__report_dir_list(st->dir, collect, ns);
  if (rc == SNAP_OK && ns->failed)
    rc = SNAP_ENOMEM;
  return rc;
}

/* A temp file of ours, left by a kill: src/report/'s temp of a report,
   of a trace beside one, or of the write probe. */
static bool is_our_tmp(const char *name) {
  char inner[64];
  int64_t ms;
  snap__lag_kind_t kind;
  if (snap__report_temp_of(name, inner, sizeof inner))
    return parse_name(inner, &ms, &kind) || is_trace_name(inner) ||
           strcmp(inner, "probe") == 0;
  /* Or one of an older version: "." + a report name + ".tmp", and its
     probe's "..probe.tmp.tmp". */
  size_t n = strlen(name);
  if (name[0] != '.' || n < 5 || n > 63 || strcmp(name + n - 4, ".tmp") != 0)
    return false;
  memcpy(inner, name + 1, n - 5);
  inner[n - 5] = '\0';
  return parse_name(inner, &ms, &kind) || strcmp(inner, ".probe.tmp") == 0;
}

/* True when names holds "<ms>-<kind>.json". */
static bool listed(const names_t *ns, int64_t ms, snap__lag_kind_t kind) {
  char name[64];
  make_name(name, ms, kind);
  for (size_t i = 0; i < ns->n; i++)
    if (strcmp(ns->v[i], name) == 0)
      return true;
  return false;
}

/* The value of top-level field `key` in a report's text, or NULL. The
   writer puts every top-level field at the start of a line, and a newline
   inside a string is always escaped, so "\n\"key\":" is found nowhere
   else. */
static const char *top_field(const char *text, const char *key) {
  char pat[40];
  int n = snprintf(pat, sizeof pat, "\n\"%s\":", key);
  const char *p = n > 0 && (size_t)n < sizeof pat ? strstr(text, pat) : NULL;
  return p ? p + n : NULL;
}

/* Who wrote an ongoing report, as far as a start can tell. */
typedef enum writer { WRITER_GONE, WRITER_ALIVE, WRITER_US } writer_t;

static writer_t writer_of(const snap__lag_store_t *st, const char *text) {
  const char *p = top_field(text, "pid");
  const char *s = top_field(text, "pid_start");
  if (!p || !s || *s != '"')
    return WRITER_GONE; /* no way to tell: judged as before the field */
  char *end;
  long long pid = strtoll(p, &end, 10);
  size_t tn = strcspn(s + 1, "\"\n");
  if (end == p || pid <= 0 || s[1 + tn] != '"' || tn >= 64)
    return WRITER_GONE;
  char token[64], now[64];
  memcpy(token, s + 1, tn);
  token[tn] = '\0';
  if (pid == st->pid && st->pid_start[0] && strcmp(token, st->pid_start) == 0)
    return WRITER_US;
  int rc = snap__plat_process_start(pid, now, sizeof now);
  if (rc == SNAP_OK)
    return strcmp(now, token) == 0 ? WRITER_ALIVE : WRITER_GONE; /* reused */
  /* Cannot tell (the OS hides it): never call a live process killed. */
  return rc == SNAP_ENOTHREAD ? WRITER_GONE : WRITER_ALIVE;
}

/* An ongoing report whose writer is gone becomes
   "<start>-hang_killed.json"; one of this process's (a previous watchdog
   whose final write failed) is finished: ongoing false, kind kept. Its
   text keeps all but the prefix, so the stacks and duration of its last
   write stay. A live writer's report is left alone. */
static void recover(snap__lag_store_t *st, const char *name, int64_t ms,
                    snap__lag_kind_t kind) {
  char *text;
  size_t n;
  if (snap__report_read(st->dir, name, MAX_REPORT_BYTES, &text, &n) != SNAP_OK)
    return;
  char was[128], now[256];
  size_t wl = 0;
  writer_t writer = WRITER_ALIVE;
  /* Of any schema version: an app updated since the kill wrote an older
     one. Its text stays in its version (only the prefix changes). */
  unsigned schema = SNAP__LAG_SCHEMA;
  for (; schema >= 1; schema--) {
    snap__lag_json_prefix(was, sizeof was, schema, kind, true);
    wl = strlen(was);
    if (n >= wl && memcmp(text, was, wl) == 0) {
      writer = writer_of(st, text);
      break;
    }
  }
  if (writer != WRITER_ALIVE) {
    snap__lag_kind_t to_kind =
        writer == WRITER_US ? kind : SNAP__KIND_HANG_KILLED;
    int nl = snap__lag_json_prefix(now, sizeof now, schema, to_kind, false);
    if (to_kind == SNAP__KIND_HANG_KILLED) /* when it died, as known */
      nl += snap__lag_killed_bounds(text, now + nl, sizeof now - (size_t)nl);
    size_t out_n = (size_t)nl + (n - wl);
    char *out = malloc(out_n);
    if (out) {
      memcpy(out, now, (size_t)nl);
      memcpy(out + nl, text + wl, n - wl);
      char to[64];
      make_name(to, ms, to_kind);
      if (snap__report_replace(st->dir, to, out, out_n, st->mode) == SNAP_OK) {
        if (strcmp(to, name) != 0)
          snap__report_remove(st->dir, name);
        announce(st, to, true); /* nothing follows either */
      }
      free(out);
    }
  }
  free(text);
}

/* Removes report `name` (dated ms) if it is past retention; true if so.
   Applied at start and before each new report is counted. */
static bool expire(snap__lag_store_t *st, const char *name, int64_t ms,
                   int64_t now) {
  if (ms >= now - (int64_t)st->retention_days * DAY_MS)
    return false;
  snap__report_remove(st->dir, name);
  char trace[64]; /* its sampling trace, if one ran (report.c) */
  make_trace_name(trace, ms);
  snap__report_remove(st->dir, trace);
  return true;
}

int snap__lag_store_open(snap__lag_store_t *st) {
  if (snap__report_dir_make(st->dir, st->mode) != SNAP_OK)
    return SNAP_EIO;
  names_t ns;
  int rc = list(st, &ns);
  if (rc != SNAP_OK) {
    free(ns.v);
    return rc == SNAP_ENOMEM ? rc : SNAP_EIO;
  }
  int64_t now = snap__plat_unix_ms();
  st->pid = snap__plat_process_id();
  if (snap__plat_process_start(st->pid, st->pid_start, sizeof st->pid_start) !=
      SNAP_OK)
    st->pid_start[0] = '\0';
  for (size_t i = 0; i < ns.n; i++) {
    const char *name = ns.v[i];
    int64_t ms;
    snap__lag_kind_t kind;
    if (is_our_tmp(name)) {
      snap__report_remove(st->dir, name); /* a write cut short */
    } else if (parse_name(name, &ms, &kind) && !expire(st, name, ms, now)) {
      if (kind == SNAP__KIND_LAG && listed(&ns, ms, SNAP__KIND_HANG))
        /* Killed while a lag became a hang: the hang file is in place,
           the lag file it replaces was not yet removed. */
        snap__report_remove(st->dir, name);
      else if (kind != SNAP__KIND_HANG_KILLED)
        recover(st, name, ms, kind);
    } else if (parse_dropped_name(name, &ms)) {
      expire(st, name, ms, now); /* kept as long as that day's reports */
    }
  }
  free(ns.v);
  /* Can we write at all? Better an error now than lost reports later. */
  return snap__report_probe(st->dir, st->mode) == SNAP_OK ? SNAP_OK : SNAP_EIO;
}

/* ---- Writing ------------------------------------------------------------- */

/* Reports dated today (UTC), after deleting those past retention. */
static unsigned count_today(snap__lag_store_t *st, int64_t now) {
  names_t ns;
  unsigned today = 0;
  if (list(st, &ns) == SNAP_OK) {
    int64_t day = now - now % DAY_MS;
    for (size_t i = 0; i < ns.n; i++) {
      int64_t ms;
      snap__lag_kind_t kind;
      if (parse_name(ns.v[i], &ms, &kind) && !expire(st, ns.v[i], ms, now))
        today += ms >= day;
    }
  }
  free(ns.v);
  return today;
}

int snap__lag_store_add(snap__lag_store_t *st, int64_t start_unix_ms,
                        snap__lag_kind_t kind, const char *json, size_t n,
                        bool final, char name[64]) {
  if (count_today(st, snap__plat_unix_ms()) >= st->max_per_day) {
    st->dropped++;
    return SNAP_EBUSY;
  }
  make_name(name, start_unix_ms, kind);
  if (snap__report_replace(st->dir, name, json, n, st->mode) != SNAP_OK &&
      (snap__report_dir_make(st->dir, st->mode) != SNAP_OK || /* deleted? */
       snap__report_replace(st->dir, name, json, n, st->mode) != SNAP_OK))
    return SNAP_EIO;
  announce(st, name, final);
  return SNAP_OK;
}

int snap__lag_store_update(snap__lag_store_t *st, char name[64],
                           int64_t start_unix_ms, snap__lag_kind_t kind,
                           const char *json, size_t n, bool final) {
  char to[64];
  make_name(to, start_unix_ms, kind);
  if (snap__report_replace(st->dir, to, json, n, st->mode) != SNAP_OK)
    return SNAP_EIO;
  if (strcmp(to, name) != 0) {
    /* The kind changed (a lag became a hang): the new file is in place
       before the old one goes, so a kill in between leaves both, never
       neither. */
    snap__report_remove(st->dir, name);
    strcpy(name, to);
  }
  announce(st, name, final);
  return SNAP_OK;
}
