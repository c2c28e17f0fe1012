/*
 * test_syscall_file.c — snap__linux_syscall_read parses what the kernel
 * publishes about a blocked thread: the system call's number and
 * arguments as <sys/syscall.h> and the call's own arguments say.
 *
 * Oracles from outside: the kernel's numbers (SYS_read, SYS_futex ...),
 * the file descriptor the thread reads from, the futex word's address.
 * Under qemu-user the file describes the emulator's host thread, so the
 * numbers (the host's) do not match the guest's: the test then checks only
 * that the parse succeeds and says so (the callers reject such pcs).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "platform/linux/linux.h"

static int g_pipe[2];
static _Atomic int g_tid;

static void *reader(void *arg) {
  atomic_store(&g_tid, (int)syscall(SYS_gettid));
  char c;
  ssize_t r = read(g_pipe[0], &c, 1); /* blocks until main writes */
  (void)r;
  return arg;
}

static void *sleeper(void *arg) {
  atomic_store(&g_tid, (int)syscall(SYS_gettid));
  struct timespec ts = {1, 0};
  nanosleep(&ts, NULL);
  return arg;
}

/* Waits until tid is blocked in a system call (the file says so). */
static bool wait_blocked(int tid, snap__linux_syscall_t *sc) {
  for (int i = 0; i < 2000; i++) {
    if (snap__linux_syscall_read(tid, sc) == SNAP_OK &&
        sc->state == SNAP__LINUX_SC_IN_SYSCALL)
      return true;
    usleep(500);
  }
  return false;
}

static bool under_emulator(const snap__linux_syscall_t *sc) {
  /* The guest's own code is mapped from our executable and libc; a pc in
     none of them is the host's. */
  Dl_info info;
  return dladdr((void *)sc->pc, &info) == 0;
}

int main(void) {
  snap__linux_syscall_t sc;
  CHECK(pipe(g_pipe) == 0, "pipe");
  pthread_t t;
  atomic_store(&g_tid, 0);
  pthread_create(&t, NULL, reader, NULL);
  while (!atomic_load(&g_tid))
    usleep(100);
  CHECK(wait_blocked(atomic_load(&g_tid), &sc), "reader blocked in a call");
  bool emulated = under_emulator(&sc);
  if (emulated) {
    printf("under an emulator: the file speaks of the host thread "
           "(nr %ld, pc %#lx); numbers not compared\n",
           sc.nr, (unsigned long)sc.pc);
  } else {
    CHECK(sc.nr == SYS_read, "reader: nr %ld, want SYS_read %d", sc.nr,
          SYS_read);
    CHECK(sc.args[0] == (uintptr_t)g_pipe[0], "read's fd %lu, want %d",
          (unsigned long)sc.args[0], g_pipe[0]);
    CHECK(sc.args[2] == 1, "read's count %lu", (unsigned long)sc.args[2]);
    CHECK(sc.sp != 0 && sc.pc != 0, "sp and pc");
  }
  CHECK(write(g_pipe[1], "x", 1) == 1, "write");
  pthread_join(t, NULL);
  int self = (int)syscall(SYS_gettid);
  /* A thread reading its own file sees the read it is making (read, or
     pread64 once the file is kept open). */
  CHECK(snap__linux_syscall_read(self, &sc) == SNAP_OK &&
            sc.state == SNAP__LINUX_SC_IN_SYSCALL &&
            (emulated || sc.nr == SYS_read || sc.nr == SYS_pread64),
        "the caller reads its own read (state %d, nr %ld)", sc.state, sc.nr);
  CHECK(snap__linux_syscall_read(0x7ffffff0, &sc) == SNAP_ENOTHREAD,
        "no such thread");

  atomic_store(&g_tid, 0);
  pthread_create(&t, NULL, sleeper, NULL);
  while (!atomic_load(&g_tid))
    usleep(100);
  CHECK(wait_blocked(atomic_load(&g_tid), &sc), "sleeper blocked");
  if (!emulated) {
#ifdef SYS_nanosleep
    bool sleeping = sc.nr == SYS_clock_nanosleep || sc.nr == SYS_nanosleep;
#else
    bool sleeping = sc.nr == SYS_clock_nanosleep;
#endif
    CHECK(sleeping, "sleeper: nr %ld, want clock_nanosleep %d", sc.nr,
          SYS_clock_nanosleep);
  }
  pthread_join(t, NULL);
  return check_result("test_syscall_file");
}
