/*
 * fatal.c — the last write when a signal ends the process, without the
 * program seeing a handler it did not install.
 *
 * Owns: a handler for each signal whose default action ends the process
 * and whose disposition is the default at start-up (an ignored signal
 * stays ignored; a sanitizer's handler stays). It makes the last write
 * (writer.c) and raises the signal again: SA_RESETHAND made the
 * disposition the default, so the signal then does what it would have
 * done, and the exit status says so.
 *
 * Owns too: the interposed sigaction and signal. A program asking for a
 * disposition we hold is told SIG_DFL, as it would be without the audit
 * (CPython installs its KeyboardInterrupt handler only when SIGINT's is
 * SIG_DFL; a shell treats an inherited disposition as the user's). A
 * program installing its own handler replaces ours; one setting SIG_DFL
 * keeps ours, which ends in the default action anyway.
 * Must not: do anything in the handler that is not async-signal-safe.
 */
#include "audit.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The signals whose default action ends the process (SIGKILL and
   SIGSTOP cannot be caught). */
static const int k_fatal[] = {SIGHUP,  SIGINT,    SIGQUIT, SIGILL,  SIGTRAP,
                              SIGABRT, SIGBUS,    SIGFPE,  SIGUSR1, SIGSEGV,
                              SIGUSR2, SIGPIPE,   SIGALRM, SIGTERM, SIGXCPU,
                              SIGXFSZ, SIGVTALRM, SIGPROF, SIGSYS};

static bool g_ours[NSIG]; /* our handler is the disposition (atomic) */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn g_real_sigaction; /* looked up on first use (atomic) */

/* ThreadSanitizer does not know this handler (it is installed with libc's
   sigaction, behind the runtime's interceptor), and a signal that lands
   while the thread is inside one of its blocking interceptors (pause,
   read) runs it with the runtime's synchronisation switched off: the
   acquire loads that order the helper's writes before the last write are
   not seen, and each read is reported as a race. The last write's code is
   the exit's too, where it is checked; here the dying thread is left out
   of the checking. */
#if defined(__SANITIZE_THREAD__)
#define AUDIT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define AUDIT_TSAN 1
#endif
#endif
#ifdef AUDIT_TSAN
/* The runtime's annotations (the executable exports them). */
__attribute__((weak)) void AnnotateIgnoreReadsBegin(const char *file, int line);
__attribute__((weak)) void AnnotateIgnoreWritesBegin(const char *file,
                                                     int line);
#endif

static void on_fatal(int sig, siginfo_t *info, void *ctx) {
  (void)info;
  (void)ctx;
#ifdef AUDIT_TSAN
  if (AnnotateIgnoreReadsBegin && AnnotateIgnoreWritesBegin) {
    AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
  }
#endif
  int saved = errno;
  __atomic_store_n(&g_ours[sig], false, __ATOMIC_RELEASE); /* SA_RESETHAND */
  audit_check_process();
  if (audit_own_process())
    audit_writer_final("signal", sig);
  /* Raised again: delivered when this returns (it is blocked until then).
     A fault would recur on its own, but a kill would not. */
  syscall(SYS_tgkill, (int)syscall(SYS_getpid), (int)syscall(SYS_gettid), sig);
  errno = saved;
}

/* Before the constructor ran (a sanitizer's runtime starting, another
   library's constructor), the hooks look the real function up
   themselves. */
AUDIT_UNSANITIZED static sigaction_fn real_sigaction(void) {
  sigaction_fn f = __atomic_load_n(&g_real_sigaction, __ATOMIC_ACQUIRE);
  if (!f) {
    f = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    __atomic_store_n(&g_real_sigaction, f, __ATOMIC_RELEASE);
  }
  return f;
}

/* No calls below into this library's code but real_sigaction: it would be
   instrumented. (libc's, and the atomics builtins, are not.) */
AUDIT_UNSANITIZED AUDIT_EXPORT int
sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  sigaction_fn real = real_sigaction();
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  bool ours =
      sig > 0 && sig < NSIG && __atomic_load_n(&g_ours[sig], __ATOMIC_ACQUIRE);
  if (!ours)
    return real(sig, act, old);
  if (act && ((act->sa_flags & SA_SIGINFO) || act->sa_handler != SIG_DFL)) {
    int rc = real(sig, act, NULL);
    if (rc != 0)
      return rc;
    __atomic_store_n(&g_ours[sig], false, __ATOMIC_RELEASE);
  }
  /* What a program is told of a disposition we hold. */
  if (old) {
    __builtin_memset(old, 0, sizeof *old);
    old->sa_handler = SIG_DFL;
  }
  return 0;
}

AUDIT_UNSANITIZED AUDIT_EXPORT __sighandler_t signal(int sig,
                                                     __sighandler_t handler) {
  struct sigaction sa, old;
  __builtin_memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  /* glibc's signal(): BSD semantics, the signal blocked in its handler. */
  sigemptyset(&sa.sa_mask);
  if (sig > 0 && sig < NSIG)
    sigaddset(&sa.sa_mask, sig);
  sa.sa_flags = SA_RESTART;
  return sigaction(sig, &sa, &old) == 0 ? old.sa_handler : SIG_ERR;
}

void audit_fatal_init(void) {
  sigaction_fn real = real_sigaction();
  if (!real)
    return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fatal;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&sa.sa_mask); /* one fatal signal at a time */
  for (size_t i = 0; i < sizeof k_fatal / sizeof k_fatal[0]; i++)
    sigaddset(&sa.sa_mask, k_fatal[i]);
  for (size_t i = 0; i < sizeof k_fatal / sizeof k_fatal[0]; i++) {
    struct sigaction old;
    int sig = k_fatal[i];
    if (real(sig, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
        old.sa_handler != SIG_DFL)
      continue; /* ignored, or a sanitizer's own */
    __atomic_store_n(&g_ours[sig], true, __ATOMIC_RELEASE);
    if (real(sig, &sa, NULL) != 0)
      __atomic_store_n(&g_ours[sig], false, __ATOMIC_RELEASE);
  }
}
