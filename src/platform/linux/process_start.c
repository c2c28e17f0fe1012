/*
 * process_start.c — which process a pid names, on Linux: a token that
 * tells a live process from one that died and left its pid to another.
 *
 * Owns: snap__plat_process_start. The token is "<boot id>:<start>":
 *  - start: field 22 of /proc/<pid>/task/<pid>/stat (the thread-group
 *    leader's start, in clock ticks since boot: the process's start). A
 *    pid is handed out again only after its process is reaped, and never
 *    twice within one tick in practice (pids wrap after pid_max);
 *  - boot id: /proc/sys/kernel/random/boot_id, since ticks restart at 0
 *    each boot (a service started at boot may well get the same pid and
 *    tick again after a reboot).
 * Why task/<pid>/stat and not /proc/<pid>/stat: the same kernel value, but
 * qemu-user answers /proc/self/stat and /proc/<own pid>/stat itself with
 * a start time of its own (seen: 1903723 against the kernel's 1903720),
 * so a process would read another value for itself than other processes
 * read for it. qemu leaves the task path to the kernel.
 * Gone: no such file (ESRCH/ENOENT), or state Z/X with at most one thread
 * (a zombie leader with live threads is a live process whose main thread
 * exited). The line is parsed by proc_stat.c.
 *
 * Files are read into stack buffers; no stdio, no allocation. Must not:
 * be called from the stopped window (reads of /proc block).
 */
#include <errno.h>
#include <string.h>

#include "decimal.h"
#include "platform/linux/linux.h"
#include "platform/process.h"

/* "/proc/<pid>/task/<pid>/stat" into path[64]. */
static void stat_path(char *path, unsigned pid) {
  char *p = path;
  for (int twice = 0; twice < 2; twice++) {
    static const char *const parts[2] = {"/proc/", "/task/"};
    size_t n = strlen(parts[twice]);
    memcpy(p, parts[twice], n);
    p += n;
    p += snap__dec_u64(p, pid); /* at most 10 digits */
  }
  memcpy(p, "/stat", sizeof "/stat");
}

int snap__plat_process_start(int64_t pid, char *buf, size_t size) {
  if (pid <= 0 || pid > 0x7fffffff || !buf || size == 0)
    return SNAP_EINVAL;
  buf[0] = '\0';
  char path[64], stat[1024];
  stat_path(path, (unsigned)pid);
  if (snap__linux_read_small(path, stat, sizeof stat) < 0)
    return errno == ENOENT || errno == ESRCH ? SNAP_ENOTHREAD : SNAP_EIO;
  snap__linux_stat_t st;
  if (snap__linux_stat_parse(stat, &st) != SNAP_OK)
    return SNAP_EIO;
  if ((st.state == 'Z' || st.state == 'X' || st.state == 'x') &&
      st.num_threads <= 1)
    return SNAP_ENOTHREAD; /* exited, not yet reaped */
  char boot[64];
  ssize_t bn = snap__linux_read_small("/proc/sys/kernel/random/boot_id", boot,
                                      sizeof boot);
  if (bn <= 0)
    return SNAP_EIO;
  while (bn > 0 && (boot[bn - 1] == '\n' || boot[bn - 1] == ' '))
    boot[--bn] = '\0';
  char start[SNAP__DEC_MAX];
  size_t sn = snap__dec_u64(start, st.starttime);
  if ((size_t)bn + 1 + sn + 1 > size)
    return SNAP_EINVAL;
  memcpy(buf, boot, (size_t)bn);
  buf[bn] = ':';
  memcpy(buf + bn + 1, start, sn);
  buf[(size_t)bn + 1 + sn] = '\0';
  return SNAP_OK;
}
