/*
 * proc_stat.c — the one parser of a /proc stat line (proc(5):
 * /proc/<pid>/stat and /proc/<pid>/task/<tid>/stat): every field the
 * backend uses, from one pass, into snap__linux_stat_t (linux.h).
 *
 * The line is "pid (comm) state ppid pgrp ... starttime ...". comm is the
 * task's name, which the task sets itself (prctl(PR_SET_NAME),
 * pthread_setname_np: up to 15 bytes; a workqueue kernel thread's is
 * longer) and which may hold any byte but NUL: spaces, '(' and ')',
 * newlines, digits, a whole fake "R 1 2 3". So the line cannot be split
 * on spaces, nor on lines, before comm ends; comm ends at the LAST ')' of
 * the text, since no field after it can hold one (numbers and the state
 * letter). After it, fields are separated by single spaces; a field that
 * is missing, empty, not a number, or above UINT64_MAX makes the line an
 * error (SNAP_EIO), never a zero: a text cut short is not a thread with
 * no start time.
 *
 * No allocation, no lock, no libc call: callable anywhere, though reading
 * the file it parses is [setup] (proc_files.c).
 */
#include "platform/linux/linux.h"

/* The last field parsed (starttime). */
#define LAST_FIELD 22

/* One field at *p: an optional '-' and at least one digit, ended by a
   space, a newline or the end of the text; *p moves past its end. */
static bool field(const char **p, uint64_t *mag, bool *neg) {
  const char *s = *p;
  *neg = *s == '-';
  if (*neg)
    s++;
  if (*s < '0' || *s > '9')
    return false;
  uint64_t v = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10)
      return false;
    v = v * 10 + d;
  }
  if (*s != ' ' && *s != '\n' && *s != '\0')
    return false;
  *mag = v;
  *p = *s == ' ' ? s + 1 : s;
  return true;
}

static int64_t as_signed(uint64_t mag, bool neg) {
  if (mag > (uint64_t)INT64_MAX)
    return neg ? INT64_MIN : INT64_MAX;
  return neg ? -(int64_t)mag : (int64_t)mag;
}

/* The fields into out (zeroed), or SNAP_EIO as soon as one is wrong. */
static int parse(const char *text, snap__linux_stat_t *out) {
  /* Field 1, then " (": the pid is digits only. */
  const char *p = text;
  uint64_t mag;
  bool neg;
  if (!field(&p, &mag, &neg) || neg || p[-1] != ' ' || *p != '(')
    return SNAP_EIO;
  out->pid = as_signed(mag, false);
  const char *comm = p + 1, *close = NULL;
  for (const char *s = comm; *s; s++)
    if (*s == ')')
      close = s;
  if (!close || close[1] != ' ' || !close[2] || close[3] != ' ')
    return SNAP_EIO;
  size_t n = (size_t)(close - comm);
  if (n > sizeof out->comm - 1)
    n = sizeof out->comm - 1;
  for (size_t i = 0; i < n; i++)
    out->comm[i] = comm[i];
  out->state = close[2];
  p = close + 4; /* field 4 */
  for (int i = 4; i <= LAST_FIELD; i++) {
    if (!field(&p, &mag, &neg))
      return SNAP_EIO;
    switch (i) {
    case 4: out->ppid = as_signed(mag, neg); break;
    case 12: out->majflt = mag; break;
    case 14: out->utime = mag; break;
    case 15: out->stime = mag; break;
    case 20: out->num_threads = as_signed(mag, neg); break;
    case 22: out->starttime = mag; break;
    default: break; /* pgrp .. cminflt, cmajflt, cutime .. nice, itrealvalue */
    }
  }
  return SNAP_OK;
}

int snap__linux_stat_parse(const char *text, snap__linux_stat_t *out) {
  *out = (snap__linux_stat_t){0};
  if (text && parse(text, out) == SNAP_OK)
    return SNAP_OK;
  *out = (snap__linux_stat_t){0}; /* no half-read line */
  return SNAP_EIO;
}
