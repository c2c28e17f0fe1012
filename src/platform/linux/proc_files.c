/*
 * proc_files.c — reading the small text files of /proc the Linux backend
 * asks about threads (stat, status, comm, schedstat, syscall): a
 * thread's path, one read, finding a field in a status file, the three
 * numbers of a schedstat file, and the files kept open between reads
 * (a stat line is proc_stat.c's).
 *
 * Owns: one open/read-until-EOF/close loop (EINTR retried, the text
 * NUL-terminated), the "Key:<blanks>value" lookup and the schedstat parse,
 * so each question is only its own parse. Into caller's buffers: no allocation,
 * no stdio. Must not: be called from the stopped window (open and read block on
 * /proc).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decimal.h"
#include "platform/linux/linux.h"

ssize_t snap__linux_read_small(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t len = 0;
  while (len + 1 < size) {
    ssize_t r = read(fd, buf + len, size - 1 - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int err = errno;
      close(fd);
      errno = err;
      return -1;
    }
    if (r == 0)
      break;
    len += (size_t)r;
  }
  close(fd);
  buf[len] = '\0';
  return (ssize_t)len;
}

const char *snap__linux_status_field(const char *text, const char *key) {
  size_t klen = strlen(key);
  for (const char *p = text; (p = strstr(p, key)) != NULL; p += klen) {
    if (p != text && p[-1] != '\n')
      continue; /* inside another line */
    p += klen;
    while (*p == ' ' || *p == '\t')
      p++;
    return p;
  }
  return NULL;
}

/* "/proc/self/task/<tid>/<leaf>" into path[64]. */
void snap__linux_task_path(char *path, int tid, const char *leaf) {
  static const char head[] = "/proc/self/task/";
  char *p = path;
  memcpy(p, head, sizeof head - 1);
  p += sizeof head - 1;
  p += snap__dec_u64(p, (unsigned)tid); /* at most 10 digits */
  *p++ = '/';
  size_t n = strlen(leaf);
  if (n > 64 - (size_t)(p - path) - 1)
    n = 64 - (size_t)(p - path) - 1;
  memcpy(p, leaf, n);
  p[n] = '\0';
}

int snap__linux_schedstat(const char *text, uint64_t v[3]) {
  const char *p = text;
  for (int i = 0; i < 3; i++) {
    while (*p == ' ')
      p++;
    if (*p < '0' || *p > '9')
      return SNAP_EIO;
    uint64_t x = 0;
    for (int d = 0; *p >= '0' && *p <= '9'; p++, d++) {
      if (d == 18)
        return SNAP_EIO; /* 31 years of nanoseconds: not a count */
      x = x * 10 + (uint64_t)(*p - '0');
    }
    v[i] = x;
  }
  return SNAP_OK;
}

/* ---- Files kept open ------------------------------------------------------

   A descriptor we keep is remembered with the file's identity (device and
   inode): an app may close every descriptor it did not open (a daemon
   after fork does) and reuse the number for a file of its own. Before any
   use, and before we close it, fstat says whether it is still ours; if
   not, it is forgotten, never closed: closing it would close the app's. */

bool snap__linux_kept_open(snap__linux_kept_t *k, const char *path) {
  struct stat st;
  k->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (k->fd >= 0 && fstat(k->fd, &st) != 0) {
    close(k->fd);
    k->fd = -1;
  }
  if (k->fd < 0)
    return false;
  k->dev = (uint64_t)st.st_dev;
  k->ino = (uint64_t)st.st_ino;
  return true;
}

bool snap__linux_kept_ours(const snap__linux_kept_t *k) {
  struct stat st;
  return k->fd >= 0 && fstat(k->fd, &st) == 0 &&
         (uint64_t)st.st_dev == k->dev && (uint64_t)st.st_ino == k->ino;
}

void snap__linux_kept_close(snap__linux_kept_t *k) {
  if (snap__linux_kept_ours(k))
    close(k->fd);
  k->fd = -1;
}

ssize_t snap__linux_kept_read(const snap__linux_kept_t *k, char *buf,
                              size_t size) {
  if (size == 0 || !snap__linux_kept_ours(k)) {
    errno = EBADF;
    return -1;
  }
  ssize_t n;
  do
    n = pread(k->fd, buf, size - 1, 0);
  while (n < 0 && errno == EINTR);
  if (n >= 0)
    buf[n] = '\0';
  return n;
}

/* ---- One thread's files, kept open ---------------------------------------

   The watchdog reads the same few files of the main thread at every point
   sample (stat, schedstat, status, syscall: a third of its CPU time went
   to opening them). procfs makes each of these texts afresh for every
   read from offset 0, so the files of the thread asked about last stay
   open and are read with pread. One thread's at a time: a dump of many
   threads opens each afresh, as before. The cache is taken with a flag,
   never waited for: a second reader (or a forked child that inherited the
   flag set) opens and closes its own, as before. A thread that exited, or
   whose tid was reused, fails the read: the file is opened again, once. */

static const char *const k_leaves[] = {"stat", "schedstat", "status",
                                       "syscall"};
#define LEAVES (sizeof k_leaves / sizeof k_leaves[0])
static atomic_flag g_task_busy = ATOMIC_FLAG_INIT;
static int g_task_tid;
static snap__linux_kept_t g_task[LEAVES] = {
    {-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}, {-1, 0, 0}};

void snap__linux_task_files_forget(void) {
  for (size_t i = 0; i < LEAVES; i++)
    snap__linux_kept_close(&g_task[i]);
  g_task_tid = 0;
  atomic_flag_clear_explicit(&g_task_busy, memory_order_release);
}

ssize_t snap__linux_read_task(int tid, const char *leaf, char *buf,
                              size_t size) {
  char path[64];
  snap__linux_task_path(path, tid, leaf);
  size_t k = 0;
  while (k < LEAVES && strcmp(k_leaves[k], leaf) != 0)
    k++;
  if (k == LEAVES || size == 0 ||
      atomic_flag_test_and_set_explicit(&g_task_busy, memory_order_acquire))
    return snap__linux_read_small(path, buf, size);
  if (g_task_tid != tid) {
    for (size_t i = 0; i < LEAVES; i++)
      snap__linux_kept_close(&g_task[i]);
    g_task_tid = tid;
  }
  ssize_t n = -1;
  for (int attempt = 0; attempt < 2 && n <= 0; attempt++) {
    if (g_task[k].fd < 0 && !snap__linux_kept_open(&g_task[k], path))
      break; /* errno says why (ENOENT: no such thread) */
    if ((n = snap__linux_kept_read(&g_task[k], buf, size)) <= 0) {
      int err = errno;
      snap__linux_kept_close(&g_task[k]);
      errno = err;
    }
  }
  atomic_flag_clear_explicit(&g_task_busy, memory_order_release);
  return n;
}
