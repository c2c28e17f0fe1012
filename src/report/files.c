/*
 * files.c — the one writer of the library's files: replace a file
 * atomically, read one back, remove one, probe a directory, make one.
 *
 * Owns: the policy (platform/posix/report_files.c holds the OS calls).
 * Must not: abort or print (every failure is a returned code); run in the
 * stopped window (it blocks on the disk and allocates); touch a name its
 * caller did not build (names.c says which are ours).
 *
 * Replacing (design rule 5, "nothing lost"): a kill at any instant leaves
 * dir/name holding either its old content or the new one.
 *  1. if dir/name is there and is not a regular file (a FIFO, a symlink,
 *     a device, a directory), stop: SNAP_ENOTREG, nothing touched (issue
 *     24, item 5: snap_trace_write made /dev/null a regular file as root);
 *  2. create a new temp file ".NAME.<16 random hex>.tmp" exclusively
 *     (O_EXCL|O_NOFOLLOW: a name already there, a planted symlink among
 *     them, is never opened; another random name is tried) with exactly
 *     the caller's mode, 0600 by default (item 3: reports held stacks,
 *     paths and thread names for every local user to read);
 *  3. write the whole content, fsync it, so the data reaches the disk
 *     before the name does;
 *  4. look at dir/name again (step 1 narrowed to the rename), rename the
 *     temp over it — atomic on every POSIX file system;
 *  5. fsync the directory, so the rename itself survives a power cut.
 * A failure in 2–4 unlinks the temp and returns SNAP_EIO; dir/name is
 * untouched. Step 5 comes after the point of no return: if it fails the
 * new content is already in place (only its durability is unconfirmed) and
 * SNAP_EIO is still returned, so the caller may write it again.
 *
 * Why random names (item 1): the temp name used to be ".NAME.tmp", opened
 * O_CREAT|O_TRUNC, so a link planted there by anyone who could write the
 * directory had the whole report written through it. O_EXCL alone closes
 * that; the random part keeps a planter from making every write fail by
 * taking the one name it would use, and a planter who races the next write
 * has nothing to aim at. A name the OS gives no randomness for
 * (getentropy missing) falls back to a counter mixed with the clock and
 * the pid: predictable, still exclusive, so still never followed.
 *
 * What the rename cannot promise: between step 4's look and the rename,
 * whoever can write the directory can put a FIFO at dir/name, and the
 * rename replaces that entry (their own file, not what it points to: a
 * rename never writes through a link). Nothing here ever writes to or
 * truncates a file that was already there.
 *
 * Reading back: opened O_NONBLOCK|O_NOFOLLOW and fstat'ed before a byte is
 * read, so a FIFO named like a report cannot hang snap_lag_start (item 2)
 * and a link named like one is not followed to another file.
 *
 * Each call but the listing adds its wall time to its thread's
 * snap__report_waited_ns: an fsync on a busy disk waits for a journal
 * commit that holds everyone else's writes too (100 ms and more), and a
 * watchdog that cannot tell that wait from a stopped process would take
 * it out of a lag.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/process.h"
#include "report/report.h"

/* Temp names tried before giving up: each is taken only if a planter
   guessed 64 random bits, so more than one failure means no randomness
   (the fallback) and a planter who predicted it. */
#define TEMP_TRIES 16

bool snap__report_mode_ok(unsigned mode) {
  return (mode & ~0666u) == 0 && (mode & 0600u) == 0600u;
}

unsigned snap__report_dir_mode(unsigned file_mode) {
  return (file_mode & 0777u) | ((file_mode & 0444u) >> 2);
}

static bool name_ok(const char *name) {
  return name && name[0] && !strchr(name, '/') && strcmp(name, ".") != 0 &&
         strcmp(name, "..") != 0;
}

/* dir + "/" + name into buf[PATH_MAX]: SNAP_OK, SNAP_EINVAL (bad dir or
   name) or SNAP_EIO (too long: it could not be opened anyway). */
static int join(char *buf, const char *dir, const char *name) {
  if (!dir || !dir[0] || !name_ok(name))
    return SNAP_EINVAL;
  int len = snprintf(buf, PATH_MAX, "%s/%s", dir, name);
  return len < 0 || len >= PATH_MAX ? SNAP_EIO : SNAP_OK;
}

/* 64 bits for a temp name: the OS's randomness, else a counter mixed with
   the clock and the pid (splitmix64's finaliser: distinct inputs give
   distinct outputs). */
static uint64_t name_bits(void) {
  uint64_t v;
  if (snap__plat_random(&v, sizeof v) == SNAP_OK)
    return v;
  static _Atomic uint64_t counter;
  v = atomic_fetch_add(&counter, 1) ^ snap__plat_now_ns() ^
      ((uint64_t)snap__plat_process_id() << 40);
  v = (v ^ (v >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  v = (v ^ (v >> 27)) * UINT64_C(0x94d049bb133111eb);
  return v ^ (v >> 31);
}

/* Creates a new temp file for dir/name (".NAME.<16 hex>.tmp"), its path in
   tmp[PATH_MAX]. SNAP_OK with *fd, SNAP_EIO. */
static int create_temp(const char *dir, const char *name, unsigned mode,
                       char *tmp, int *fd) {
  for (int i = 0; i < TEMP_TRIES; i++) {
    int len = snprintf(tmp, PATH_MAX, "%s/.%s.%016" PRIx64 ".tmp", dir, name,
                       name_bits());
    if (len < 0 || len >= PATH_MAX)
      return SNAP_EIO;
    int rc = snap__plat_file_create(tmp, mode, fd);
    if (rc != SNAP_EBUSY)
      return rc == SNAP_OK ? SNAP_OK : SNAP_EIO;
  }
  return SNAP_EIO;
}

/* SNAP_OK when dst may be replaced (nothing there, or a regular file);
   SNAP_ENOTREG when something else is; SNAP_EIO when it cannot be told. */
static int replaceable(const char *dst) {
  snap__plat_file_kind_t kind;
  if (snap__plat_path_kind(dst, &kind) != SNAP_OK)
    return SNAP_EIO;
  return kind == SNAP__FILE_NONE || kind == SNAP__FILE_REGULAR ? SNAP_OK
                                                               : SNAP_ENOTREG;
}

/* Writes data to a new temp file in dir and fsyncs it: SNAP_OK with its
   path in tmp, or SNAP_EIO with nothing left behind. */
static int write_temp(const char *dir, const char *name, const void *data,
                      size_t n, unsigned mode, char *tmp) {
  int fd;
  if (create_temp(dir, name, mode, tmp, &fd) != SNAP_OK)
    return SNAP_EIO;
  bool ok = snap__plat_write_all(fd, data, n) == SNAP_OK &&
            snap__plat_file_sync(fd) == SNAP_OK;
  if (snap__plat_file_close(fd) != SNAP_OK)
    ok = false;
  if (!ok) {
    snap__plat_file_unlink(tmp);
    return SNAP_EIO;
  }
  return SNAP_OK;
}

static int file_replace(const char *dir, const char *name, const void *data,
                        size_t n, unsigned mode) {
  char dst[PATH_MAX], tmp[PATH_MAX];
  int rc = join(dst, dir, name);
  if (rc != SNAP_OK)
    return rc;
  if ((n > 0 && !data) || !snap__report_mode_ok(mode))
    return SNAP_EINVAL;
  if ((rc = replaceable(dst)) != SNAP_OK)
    return rc;
  if (write_temp(dir, name, data, n, mode, tmp) != SNAP_OK)
    return SNAP_EIO;
  if ((rc = replaceable(dst)) != SNAP_OK ||
      (rc = snap__plat_file_rename(tmp, dst)) != SNAP_OK) {
    snap__plat_file_unlink(tmp);
    return rc == SNAP_ENOTREG ? rc : SNAP_EIO;
  }
  return snap__plat_dir_sync(dir);
}

static int file_read(const char *dir, const char *name, size_t max, char **data,
                     size_t *n) {
  if (!data || !n)
    return SNAP_EINVAL;
  *data = NULL;
  *n = 0;
  char path[PATH_MAX];
  int rc = join(path, dir, name);
  if (rc != SNAP_OK)
    return rc;
  /* Not even opened unless it looks regular: opening a device can do
     things (a tape rewinds, a terminal becomes the controlling one). The
     descriptor's fstat then settles it against a swap in between. */
  snap__plat_file_kind_t kind;
  if (snap__plat_path_kind(path, &kind) != SNAP_OK || kind == SNAP__FILE_NONE)
    return SNAP_EIO;
  if (kind != SNAP__FILE_REGULAR)
    return SNAP_ENOTREG;
  int fd;
  uint64_t size;
  if (snap__plat_file_open_read(path, &fd, &kind, &size) != SNAP_OK)
    return SNAP_EIO; /* a symlink swapped in fails here (O_NOFOLLOW) */
  if (kind != SNAP__FILE_REGULAR || size > max) {
    snap__plat_file_close(fd);
    return kind != SNAP__FILE_REGULAR ? SNAP_ENOTREG : SNAP_EIO;
  }
  /* The size is a first guess: the file may grow while it is read. The
     buffer grows with it up to max bytes; one byte more is an error. */
  size_t cap = (size_t)size + 1, len = 0;
  char *buf = malloc(cap);
  rc = buf ? SNAP_OK : SNAP_ENOMEM;
  while (rc == SNAP_OK) {
    if (len + 1 == cap) { /* full but for the NUL: grow or give up */
      if (len >= max) {
        char probe;
        if (snap__plat_file_read_some(fd, &probe, 1) != 0)
          rc = SNAP_EIO; /* more than max bytes, or a read error */
        break;
      }
      size_t grown = cap - 1 > max / 2 ? max + 1 : 2 * cap;
      char *b = realloc(buf, grown);
      if (!b) {
        rc = SNAP_ENOMEM;
        break;
      }
      buf = b;
      cap = grown;
    }
    long r = snap__plat_file_read_some(fd, buf + len, cap - 1 - len);
    if (r < 0)
      rc = SNAP_EIO;
    if (r <= 0)
      break;
    len += (size_t)r;
  }
  snap__plat_file_close(fd);
  if (rc != SNAP_OK) {
    free(buf);
    return rc;
  }
  buf[len] = '\0';
  *data = buf;
  *n = len;
  return SNAP_OK;
}

static int file_remove(const char *dir, const char *name) {
  char path[PATH_MAX];
  int rc = join(path, dir, name);
  return rc == SNAP_OK ? snap__plat_file_unlink(path) : rc;
}

static int dir_probe(const char *dir, unsigned mode) {
  if (!dir || !dir[0] || !snap__report_mode_ok(mode))
    return SNAP_EINVAL;
  static const char probe[] = "probe";
  char tmp[PATH_MAX];
  if (write_temp(dir, "probe", probe, sizeof probe, mode, tmp) != SNAP_OK)
    return SNAP_EIO;
  return snap__plat_file_unlink(tmp);
}

/* ---- The calls, timed ------------------------------------------------- */

static _Thread_local uint64_t t_waited_ns;

static int timed(uint64_t since, int rc) {
  t_waited_ns += snap__plat_now_ns() - since;
  return rc;
}

uint64_t snap__report_waited_ns(void) { return t_waited_ns; }

int snap__report_dir_make(const char *dir, unsigned mode) {
  if (!snap__report_mode_ok(mode))
    return SNAP_EINVAL;
  uint64_t t0 = snap__plat_now_ns();
  return timed(t0, snap__plat_dir_make(dir, snap__report_dir_mode(mode)));
}

int snap__report_dir_list(const char *dir,
                          void (*cb)(const char *name, void *ctx), void *ctx) {
  return snap__plat_dir_list(dir, cb, ctx);
}

int snap__report_replace(const char *dir, const char *name, const void *data,
                         size_t n, unsigned mode) {
  uint64_t t0 = snap__plat_now_ns();
  return timed(t0, file_replace(dir, name, data, n, mode));
}

int snap__report_read(const char *dir, const char *name, size_t max,
                      char **data, size_t *n) {
  uint64_t t0 = snap__plat_now_ns();
  return timed(t0, file_read(dir, name, max, data, n));
}

int snap__report_remove(const char *dir, const char *name) {
  uint64_t t0 = snap__plat_now_ns();
  return timed(t0, file_remove(dir, name));
}

int snap__report_probe(const char *dir, unsigned mode) {
  uint64_t t0 = snap__plat_now_ns();
  return timed(t0, dir_probe(dir, mode));
}
