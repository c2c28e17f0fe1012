/*
 * test_symbolicate.c — the public naming API against outside witnesses:
 * the linker's own symbol addresses, dladdr, glibc's backtrace().
 *
 *  - the pc - 1 convention: a return address equal to the first byte of the
 *    next function names the caller; an exact pc names its own function;
 *  - frame 0 of a cross-thread sample stopped on a function's first
 *    instruction names that function (SNAP_SYMBOLICATE_EXACT_PC0);
 *  - snap_callstack_symbols names this test's own frames, as dladdr does,
 *    with pcs equal to backtrace()'s; app-only keeps exactly the app frames;
 *  - the line layout of Apple's callStackSymbols;
 *  - snap_print_callstack writes those lines;
 *  - bad input: NULL, 0, negative counts, bad flags, pc 0, unmapped memory,
 *    the vdso, an anonymous executable page.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "asm_layout.h"
#include "check.h"
#include "oracle.h"
#include "stacksnap.h"

static const char *name_at(uintptr_t pc, unsigned flags) {
  static char buf[256];
  const snap_stack_t *s = snap_symbolicate(&pc, 1, flags);
  const snap_frame_t *f = snap_stack_frame(s, 0);
  snprintf(buf, sizeof buf, "%s", f && f->symbol ? f->symbol : "(null)");
  snap_stack_release(s);
  return buf;
}

static void test_pc_minus_one(void) {
  uintptr_t after = (uintptr_t)snap_test_after_tail;
  /* A return address: the call before it is the last instruction of
     snap_test_tail_caller. */
  CHECK(strcmp(name_at(after, 0), "snap_test_tail_caller") == 0, "got %s",
        name_at(after, 0));
  /* The same address as an exact pc is the next function. */
  CHECK(strcmp(name_at(after, SNAP_SYMBOLICATE_EXACT_PC0),
               "snap_test_after_tail") == 0,
        "got %s", name_at(after, SNAP_SYMBOLICATE_EXACT_PC0));
  /* Only frame 0 is exact: the same pc later in the stack is a return
     address again. */
  uintptr_t two[2] = {after, after};
  const snap_stack_t *s = snap_symbolicate(two, 2, SNAP_SYMBOLICATE_EXACT_PC0);
  CHECK_EQ(snap_stack_count(s), 2);
  CHECK(s &&
            strcmp(snap_stack_frame(s, 0)->symbol, "snap_test_after_tail") == 0,
        "frame 0");
  CHECK(s && strcmp(snap_stack_frame(s, 1)->symbol, "snap_test_tail_caller") ==
                 0,
        "frame 1");
  CHECK(s && snap_stack_frame(s, 1)->symbol_addr ==
                 (uintptr_t)snap_test_tail_caller,
        "symbol_addr");
  snap_stack_release(s);
}

#if !SNAP_TEST_TSAN
static void *spin_thread(void *arg) {
  *(volatile pid_t *)arg = gettid();
  snap_test_spin_first();
  return NULL;
}
#endif

static void test_sample_on_first_instruction(void) {
#if SNAP_TEST_TSAN
  /* TSan delivers a signal only when the target enters one of its
     interceptors; a thread spinning in one instruction never does. */
  fprintf(stderr, "spin sample: not possible under TSan\n");
#else
  volatile pid_t tid = 0;
  pthread_t th;
  pthread_create(&th, NULL, spin_thread, (void *)&tid);
  uintptr_t pcs[64];
  int n = 0;
  for (int tries = 0; tries < 200; tries++) {
    while (!tid)
      usleep(100);
    n = snap_capture_thread((snap_thread_t)tid, pcs, 64, 0);
    if (n > 0 && pcs[0] == (uintptr_t)snap_test_spin_first)
      break;
    usleep(1000);
  }
  CHECK(n > 0 && pcs[0] == (uintptr_t)snap_test_spin_first,
        "frame 0 is the spin function's first byte (n=%d)", n);
  if (n > 0) {
    const snap_stack_t *s =
        snap_symbolicate(pcs, n, SNAP_SYMBOLICATE_EXACT_PC0);
    const snap_frame_t *f = snap_stack_frame(s, 0);
    CHECK(f && f->symbol && strcmp(f->symbol, "snap_test_spin_first") == 0,
          "exact frame 0 named %s", f && f->symbol ? f->symbol : "(null)");
    CHECK(f && f->symbol_addr == (uintptr_t)snap_test_spin_first, "addr");
    /* Frame 1 is the return address into spin_thread. */
    const snap_frame_t *f1 = snap_stack_frame(s, 1);
    CHECK(f1 && f1->symbol && strcmp(f1->symbol, "spin_thread") == 0,
          "frame 1 named %s", f1 && f1->symbol ? f1->symbol : "(null)");
    snap_stack_release(s);
    /* Without the flag the same pc is a return address: the function
       before (this is why the flag exists). */
    CHECK(strcmp(name_at(pcs[0], 0), "snap_test_before_spin") == 0, "got %s",
          name_at(pcs[0], 0));
  }
  /* The thread spins forever; the process exits around it. */
  pthread_detach(th);
#endif
}

__attribute__((noinline)) static const snap_stack_t *leaf(unsigned flags) {
  const snap_stack_t *s = snap_callstack_symbols(64, flags);
  __asm__ volatile("" ::: "memory");
  return s;
}
__attribute__((noinline)) const snap_stack_t *snap_test_middle(unsigned f) {
  const snap_stack_t *s = leaf(f);
  __asm__ volatile("" ::: "memory");
  return s;
}
__attribute__((noinline)) const snap_stack_t *snap_test_outer(unsigned f) {
  const snap_stack_t *s = snap_test_middle(f);
  __asm__ volatile("" ::: "memory");
  return s;
}

__attribute__((noinline)) static void test_callstack_symbols(void) {
  const snap_stack_t *s = snap_test_outer(0);
  CHECK(s != NULL, "callstack");
  int n = snap_stack_count(s);
  CHECK(n >= 4, "n = %d", n);
  const char *want[] = {"leaf", "snap_test_middle", "snap_test_outer",
                        "test_callstack_symbols"};
  for (int i = 0; i < 4 && i < n; i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    CHECK(f->symbol && strcmp(f->symbol, want[i]) == 0, "frame %d: %s != %s", i,
          f->symbol ? f->symbol : "(null)", want[i]);
    CHECK(f->in_app, "frame %d in app", i);
  }
  /* Every frame against dladdr where dladdr knows the function (exported
     ones and libc's dynamic symbols): same start address and name. */
  int compared = 0;
  for (int i = 0; i < n; i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    Dl_info info;
    if (!dladdr((void *)(f->pc - 1), &info) || !info.dli_sname ||
        !info.dli_saddr)
      continue;
    compared++;
    CHECK(f->symbol && strcmp(f->symbol, info.dli_sname) == 0 &&
              f->symbol_addr == (uintptr_t)info.dli_saddr,
          "frame %d: %s@%#lx, dladdr %s@%p", i, f->symbol ? f->symbol : "-",
          (unsigned long)f->symbol_addr, info.dli_sname, info.dli_saddr);
    CHECK(f->image_base == (uintptr_t)info.dli_fbase, "frame %d base", i);
  }
  CHECK(compared >= 3, "compared %d frames with dladdr", compared);

  /* One call site, three times: the second sighting is cached
     (cache_admit.c: the first is not), the third the same object, from the
     cache. */
  /* A volatile bound: a compiler must not unroll this into three sites. */
  static volatile int three = 3;
  const snap_stack_t *thrice[3];
  for (int i = 0; i < three; i++)
    thrice[i] = snap_test_outer(0);
  CHECK(thrice[1] && thrice[1] == thrice[2],
        "a repeated call site is served from the cache");
  for (int i = 0; i < 3; i++)
    snap_stack_release(thrice[i]);

  /* Apple's line layout. */
  const snap_frame_t *f0 = snap_stack_frame(s, 0);
  char want_line[512];
  snprintf(want_line, sizeof want_line, "%-4d%-35s 0x%016lx %s + %lu", 0,
           f0->image, (unsigned long)f0->pc, "leaf",
           (unsigned long)(f0->pc - f0->symbol_addr));
  CHECK(strcmp(snap_stack_line(s, 0), want_line) == 0, "line '%s' != '%s'",
        snap_stack_line(s, 0), want_line);
  CHECK(strncmp(snap_stack_line(s, 1), "1   ", 4) == 0, "index padding");
  CHECK(snap_stack_line(s, n) == NULL && snap_stack_frame(s, -1) == NULL,
        "out of range");
  snap_stack_release(s);

  /* App only: exactly the frames whose pc is app code. */
  const snap_stack_t *all = snap_test_outer(0);
  const snap_stack_t *app = snap_test_outer(SNAP_CAPTURE_APP_ONLY);
  int napp = 0;
  for (int i = 0; i < snap_stack_count(all); i++)
    napp += snap_is_app_address(snap_stack_frame(all, i)->pc);
  CHECK(napp > 0 && napp < snap_stack_count(all), "app %d of %d", napp,
        snap_stack_count(all));
  CHECK_EQ(snap_stack_count(app), napp);
  for (int i = 0; i < snap_stack_count(app); i++)
    CHECK(snap_stack_frame(app, i)->in_app, "app frame %d", i);
  snap_stack_release(all);
  snap_stack_release(app);
}

__attribute__((noinline)) static int print_here(int fd) {
  int n = snap_print_callstack(fd, 16, 0);
  __asm__ volatile("" ::: "memory");
  return n;
}

__attribute__((noinline)) static void test_print(void) {
  int p[2];
  CHECK(pipe(p) == 0, "pipe");
  int n = print_here(p[1]);
  close(p[1]);
  char buf[16384];
  ssize_t got = 0, r;
  while ((r = read(p[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0)
    got += r;
  close(p[0]);
  buf[got < 0 ? 0 : got] = '\0';
  int lines = 0;
  for (char *c = buf; *c; c++)
    lines += *c == '\n';
  CHECK(n > 2 && lines == n, "printed %d lines, returned %d", lines, n);
  CHECK(strstr(buf, " print_here + ") && strstr(buf, " test_print + "),
        "names in the printout:\n%s", buf);
  CHECK_EQ(snap_print_callstack(-1, 16, 0), SNAP_EINVAL);
  CHECK_EQ(snap_print_callstack(p[1], 16, 0), SNAP_EIO); /* closed fd */
}

static void test_bad_input(void) {
  uintptr_t pc = (uintptr_t)test_bad_input;
  CHECK(snap_symbolicate(NULL, 1, 0) == NULL, "NULL pcs");
  CHECK(snap_symbolicate(&pc, -1, 0) == NULL, "negative n");
  CHECK(snap_symbolicate(&pc, SNAP_MAX_FRAMES + 1, 0) == NULL, "huge n");
  CHECK(snap_symbolicate(&pc, 1, 0x80000000u) == NULL, "unknown flag");
  CHECK(snap_callstack_symbols(0, 0) == NULL, "max 0");
  CHECK(snap_callstack_symbols(-5, 0) == NULL, "max < 0");
  /* SNAP_SYMBOLICATE_EXACT_PC0 is accepted there (and each cause of a
     NULL is told apart): test_naming_errors.c. */
  const snap_stack_t *empty = snap_symbolicate(NULL, 0, 0);
  CHECK(empty && snap_stack_count(empty) == 0, "n == 0: an empty stack");
  snap_stack_release(empty);
  CHECK_EQ(snap_stack_count(NULL), 0);
  CHECK(snap_stack_frame(NULL, 0) == NULL && snap_stack_line(NULL, 0) == NULL,
        "NULL stack");
  snap_stack_release(NULL);

  /* pc 0, an unmapped page, an anonymous executable page: no image, no
     name, the "0x0 + pc" line. */
  long page = sysconf(_SC_PAGESIZE);
  char *gone = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char *anon = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE | PROT_EXEC,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(gone != MAP_FAILED && anon != MAP_FAILED, "mmap");
  munmap(gone, (size_t)page);
  if (anon != MAP_FAILED)
    anon[0] = (char)0xc3;
  uintptr_t odd[4] = {0, (uintptr_t)gone + 16, (uintptr_t)anon + 16,
                      (uintptr_t)-1};
  const snap_stack_t *s = snap_symbolicate(odd, 4, SNAP_SYMBOLICATE_EXACT_PC0);
  CHECK_EQ(snap_stack_count(s), 4);
  for (int i = 0; i < snap_stack_count(s); i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    CHECK(f->pc == odd[i] && !f->symbol && f->symbol_addr == 0 &&
              f->image_base == 0 && strcmp(f->image, "???") == 0 && !f->in_app,
          "odd pc %d", i);
    char want[128];
    snprintf(want, sizeof want, "%-4d%-35s 0x%016lx 0x0 + %lu", i, "???",
             (unsigned long)odd[i], (unsigned long)odd[i]);
    CHECK(strcmp(snap_stack_line(s, i), want) == 0, "'%s'",
          snap_stack_line(s, i));
  }
  snap_stack_release(s);

  /* The vdso: named by its image; and never a crash. */
  uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  if (vdso) {
    snap_image_info_t info = {.size = sizeof info};
    if (snap_image_lookup(vdso + 0x800, &info) == SNAP_OK) {
      uintptr_t v = vdso + 0x800;
      const snap_stack_t *vs =
          snap_symbolicate(&v, 1, SNAP_SYMBOLICATE_EXACT_PC0);
      CHECK(vs && strcmp(snap_stack_frame(vs, 0)->image, info.name) == 0,
            "vdso image %s", vs ? snap_stack_frame(vs, 0)->image : "-");
      snap_stack_release(vs);
    }
  }
  if (anon != MAP_FAILED)
    munmap(anon, (size_t)page);
}

int main(void) {
  test_bad_input();
  test_pc_minus_one();
  test_callstack_symbols();
  test_print();
  test_sample_on_first_instruction();
  return check_result("test_symbolicate");
}
