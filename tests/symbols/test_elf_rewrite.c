/*
 * test_elf_rewrite.c — a library file rewritten in place under a loaded
 * image costs names, never the process (design.md rule 6; issue 12,
 * defect 9).
 *
 * A copy of a 300-function library is loaded and some of its functions
 * named. Then its file is rewritten in place (same inode: opened with
 * O_TRUNC, 4 KiB of other bytes written: what `cp new.so lib.so` does
 * while developing), and other functions of it are named; then the file is
 * cut to 0 bytes and yet others are named. A provider that keeps the file
 * mapped reads pages that are now past the end of the file: SIGBUS. Each
 * answer must be the function's own name (the oracle: the name dlsym found
 * it by) or none. The cache is off, so every naming asks the provider.
 *
 * Then the same with the rewrite after the library's first lookup, while
 * its .symtab is still read from the file by each lookup (elf_symbols.c,
 * syms_window): the first lookup's own name, then each answer its own
 * name or none.
 *
 * Last, the path replaced before any lookup by a FIFO and by a symlink to
 * /dev/zero: names or none, and no hang (an open of the FIFO waited for a
 * writer; /dev/zero was read without end by the source-line copy).
 *
 * The naming runs in a child process, so a fault is reported as the test's
 * failure, not as its crash; the child never unloads the library.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"

#define FUNCS 300

static unsigned char *g_orig;
/* Function starts, dlsym'ed before the file changes: the loader reads
   .dynsym from its own mapping of the file, which a cut file faults. */
static uintptr_t g_pc[FUNCS];
static size_t g_orig_size;

static bool read_file(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0)
    return false;
  g_orig_size = (size_t)st.st_size;
  g_orig = malloc(g_orig_size);
  size_t got = 0;
  while (g_orig && got < g_orig_size) {
    ssize_t n = read(fd, g_orig + got, g_orig_size - got);
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  close(fd);
  return g_orig && got == g_orig_size;
}

static bool write_file(const char *path, const void *bytes, size_t n) {
  int fd = open(path, O_WRONLY | O_TRUNC | O_CREAT | O_CLOEXEC, 0755);
  if (fd < 0)
    return false;
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(fd, (const char *)bytes + done, n - done);
    if (w <= 0)
      break;
    done += (size_t)w;
  }
  close(fd);
  return done == n;
}

/* Names functions first, first + 3, ... below FUNCS (global ones only: dlsym
   finds those); returns how many were wrongly named (a name, not theirs). */
static int name_some(int first, int *named, int *unnamed) {
  int wrong = 0;
  for (int i = first; i < FUNCS; i += 3) {
    if (i % 3 == 0)
      continue; /* local */
    char want[32];
    snprintf(want, sizeof want, "snapsmall_%d", i);
    uintptr_t pc = g_pc[i];
    if (!pc)
      continue;
    const snap_stack_t *s =
        snap_symbolicate(&pc, 1, SNAP_SYMBOLICATE_EXACT_PC0);
    const char *got = s ? snap_stack_frame(s, 0)->symbol : NULL;
    if (!got)
      (*unnamed)++;
    else if (strcmp(got, want) == 0)
      (*named)++;
    else {
      printf("  %s named \"%s\"\n", want, got);
      wrong++;
    }
    snap_stack_release(s);
  }
  return wrong;
}

/* Loads the copy and finds its global functions (dlsym, before the file
   changes) into g_pc; NULL when it cannot be loaded. */
static void *load_copy(const char *copy) {
  void *h = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("dlopen %s: %s\n", copy, dlerror());
    return NULL;
  }
  for (int i = 0; i < FUNCS; i++) {
    char name[32];
    snprintf(name, sizeof name, "snapsmall_%d", i);
    g_pc[i] = i % 3 ? (uintptr_t)dlsym(h, name) : 0;
  }
  return h;
}

static int child(const char *copy) {
  snap_set_symbol_cache_limit(0);
  void *h = load_copy(copy);
  if (!h)
    return 2;
  /* Source lines: libdw's session learns the library now (an assembly
     function: no line of its own), and reads the C function's line table
     only once the file is cut. */
  uintptr_t seed = (uintptr_t)dlsym(h, "snap_elf_seed_entry");
  snap_stack_release(snap_symbolicate(
      &g_pc[1], 1, SNAP_SYMBOLICATE_EXACT_PC0 | SNAP_SYMBOLICATE_SOURCE_LINES));
  int named = 0, unnamed = 0, wrong = 0;
  wrong += name_some(1, &named, &unnamed);
  printf("before: %d named, %d unnamed\n", named, unnamed);
  int before = named;

  unsigned char junk[4096];
  memset(junk, 0x5a, sizeof junk);
  if (!write_file(copy, junk, sizeof junk))
    return 3;
  named = unnamed = 0;
  wrong += name_some(2, &named, &unnamed);
  printf("rewritten (4 KiB): %d named, %d unnamed\n", named, unnamed);

  if (truncate(copy, 0) != 0)
    return 3;
  named = unnamed = 0;
  wrong += name_some(1, &named, &unnamed);
  wrong += name_some(2, &named, &unnamed);
  printf("cut to 0 bytes: %d named, %d unnamed\n", named, unnamed);
  const snap_stack_t *s = snap_symbolicate(
      &seed, 1, SNAP_SYMBOLICATE_EXACT_PC0 | SNAP_SYMBOLICATE_SOURCE_LINES);
  const snap_frame_t *f = s ? snap_stack_frame(s, 0) : NULL;
  printf("source line of snap_elf_seed_entry: %s:%u\n",
         f && f->source_file ? f->source_file : "(none)",
         f ? f->source_line : 0);
  snap_stack_release(s);

  /* Never unloaded, and the child leaves by _exit: cutting the file threw
     away even the loader's private copies of its pages (the relocated
     ones), so the library's destructors would run on unrelocated data. */
  (void)h;
  return wrong == 0 && before > 50 ? 0 : 4;
}

/* The same while the image is still scanned, its .symtab read from the
   file by each lookup (elf_symbols.c: syms_window): one function named,
   then the file rewritten, then others named: their own names or none. */
static int child_lazy(const char *copy) {
  snap_set_symbol_cache_limit(0);
  void *h = load_copy(copy);
  if (!h)
    return 2;
  const snap_stack_t *s =
      snap_symbolicate(&g_pc[1], 1, SNAP_SYMBOLICATE_EXACT_PC0);
  const char *got = s ? snap_stack_frame(s, 0)->symbol : NULL;
  bool first = got && strcmp(got, "snapsmall_1") == 0;
  printf("lazy: first lookup named \"%s\"\n", got ? got : "(none)");
  snap_stack_release(s);
  unsigned char junk[4096];
  memset(junk, 0x5a, sizeof junk);
  if (!write_file(copy, junk, sizeof junk))
    return 3;
  int named = 0, unnamed = 0;
  int wrong = name_some(2, &named, &unnamed);
  printf("lazy, rewritten (4 KiB): %d named, %d unnamed\n", named, unnamed);
  (void)h;
  return wrong == 0 && first ? 0 : 4;
}

/* The library's path replaced, before its first lookup, by what a read
   must not wait on or read forever: a FIFO nobody writes, or a symlink to
   /dev/zero (also as a source-line lookup reads it: libdw's copy). Every
   answer its own name or none, and in time (SIGALRM ends a hang). */
static int child_special(const char *copy, bool fifo) {
  snap_set_symbol_cache_limit(0);
  void *h = load_copy(copy);
  if (!h)
    return 2;
  if (unlink(copy) != 0 ||
      (fifo ? mkfifo(copy, 0600) : symlink("/dev/zero", copy)) != 0)
    return 3;
  alarm(60);
  snap_stack_release(snap_symbolicate(
      &g_pc[1], 1, SNAP_SYMBOLICATE_EXACT_PC0 | SNAP_SYMBOLICATE_SOURCE_LINES));
  int named = 0, unnamed = 0;
  int wrong = name_some(1, &named, &unnamed);
  printf("%s at its path: %d named, %d unnamed\n",
         fifo ? "a FIFO" : "/dev/zero", named, unnamed);
  (void)h;
  return wrong == 0 ? 0 : 4;
}

static int child_fifo(const char *copy) { return child_special(copy, true); }
static int child_zero(const char *copy) { return child_special(copy, false); }

/* Runs fn(a fresh copy of the library) in a child. */
static void run_child(int (*fn)(const char *), const char *what) {
  char copy[] = "/tmp/snap_elf_rewrite_XXXXXX";
  int fd = mkstemp(copy);
  CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
  if (fd < 0)
    return;
  close(fd);
  CHECK(write_file(copy, g_orig, g_orig_size), "copy the library");
  pid_t pid = fork();
  if (pid == 0)
    _exit(fn(copy));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  unlink(copy); /* the file, or what replaced it */
  CHECK(!WIFSIGNALED(status),
        "%s: naming a rewritten library killed the process: signal %d (%s)",
        what, WIFSIGNALED(status) ? WTERMSIG(status) : 0,
        WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "%s: the child exited with %d (2 dlopen, 3 file, 4 wrong or no names)",
        what, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  CHECK(read_file(ELF_SMALL_LIB), "read %s", ELF_SMALL_LIB);
  if (!g_orig)
    return check_result("test_elf_rewrite");
  run_child(child, "indexed");
  run_child(child_lazy, "scanned");
  run_child(child_fifo, "FIFO");
  run_child(child_zero, "/dev/zero");
  free(g_orig);
  return check_result("test_elf_rewrite");
}
