/*
 * config.c — the audit's settings, read once at start-up and copied, and
 * the process's identity.
 *
 * Owns: audit_config_init (start.c's constructor calls it first): reading
 * STACKSNAP_AUDIT_OUT, _PREFIX and _APP into this library's own memory (a
 * program may rewrite its environment later: perl does, and a pointer
 * kept from getenv() then names garbage), the copy of standard error
 * (a program that closes fd 2 must not silence the audit), this library's
 * code range (its frames are dropped from the stacks it records), the
 * marker page a copied child finds wiped, and the small helpers every
 * part uses (the clock, the thread id, the pid).
 * Must not: call any other part (it is the bottom of audit.h's order);
 * record anything (start.c holds the guard throughout), or fail the
 * host: a setting that cannot be used is ignored, and the audit goes on
 * with the default.
 */
#include "audit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define AUDIT_FN_ENTRY(n, k, r) {#n, k, r},
const audit_fn_t audit_fns[FN_COUNT] = {AUDIT_FUNCTIONS(AUDIT_FN_ENTRY)};
#undef AUDIT_FN_ENTRY

audit_config_t audit_cfg = {.stderr_fd = -1};
_Atomic int audit_pid;
_Atomic int audit_forked_from;
atomic_bool audit_ready;
_Atomic int *audit_marker;
__thread int audit_busy __attribute__((tls_model("initial-exec")));
__thread int audit_tid __attribute__((tls_model("initial-exec")));

static char g_prefixes[4096]; /* the prefixes' text, NUL-separated */

uint64_t audit_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int audit_gettid(void) {
  if (audit_tid == 0)
    audit_tid = (int)syscall(SYS_gettid);
  return audit_tid;
}

int audit_getpid(void) { return (int)syscall(SYS_getpid); }

/* The marker page (audit.h): NULL where the kernel cannot wipe it
   (before Linux 4.14), and each check then asks for the pid. */
static void map_marker(void) {
  void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return;
  if (madvise(p, 4096, MADV_WIPEONFORK) != 0) {
    munmap(p, 4096);
    return;
  }
  audit_marker = p;
  atomic_store(audit_marker, atomic_load(&audit_pid));
}

/* Splits a colon-separated list into up to max entries, copied into
   store; returns how many. */
static int split(const char *list, char *store, size_t size, const char **out,
                 size_t *lens, int max) {
  size_t used = 0;
  int n = 0;
  for (const char *p = list; *p && n < max;) {
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > 0 && used + len + 1 <= size) {
      memcpy(store + used, p, len);
      store[used + len] = '\0';
      out[n] = store + used;
      if (lens)
        lens[n] = len;
      n++;
      used += len + 1;
    }
    p += len + (end != NULL);
  }
  return n;
}

static void read_settings(void) {
  const char *v = getenv("STACKSNAP_AUDIT_OUT");
  if (v && *v && strlen(v) + 24 < sizeof audit_cfg.out) /* room for -<pid> */
    strcpy(audit_cfg.out, v);

  v = getenv("STACKSNAP_AUDIT_PREFIX");
  audit_cfg.nprefixes =
      split(v && *v ? v : "/etc/", g_prefixes, sizeof g_prefixes,
            audit_cfg.prefix, audit_cfg.prefix_len, AUDIT_MAX_PREFIXES);

  v = getenv("STACKSNAP_AUDIT_APP");
  if (v && *v) {
    /* stacksnap copies the prefixes; this copy only splits them. */
    char store[4096];
    const char *list[64];
    int n = split(v, store, sizeof store, list, NULL, 64);
    if (n > 0)
      (void)snap_set_app_image_prefixes(list, n);
  }
}

void audit_config_init(void) {
  audit_cfg.start_ns = audit_now_ns();
  atomic_store(&audit_pid, (int)getpid());
  map_marker();
  read_settings();
  ssize_t n =
      readlink("/proc/self/exe", audit_cfg.exe, sizeof audit_cfg.exe - 1);
  audit_cfg.exe[n > 0 ? n : 0] = '\0';
  if (!audit_cfg.out[0]) {
    /* Far above the descriptors a program counts on (a shell keeps its
       own at 10 and up; some programs expect their first open to be 3). */
    int fd = fcntl(2, F_DUPFD_CLOEXEC, 400);
    audit_cfg.stderr_fd = fd >= 0 ? fd : fcntl(2, F_DUPFD_CLOEXEC, 10);
  }
  snap_image_info_t self = {.size = sizeof self};
  if (snap_image_lookup((uintptr_t)audit_config_init, &self) == SNAP_OK) {
    audit_cfg.self_base = self.base;
    audit_cfg.self_start = self.start;
    audit_cfg.self_end = self.end;
  }
}
