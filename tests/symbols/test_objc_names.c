/*
 * test_objc_names.c — Objective-C method names from the runtime, in a
 * stripped executable.
 *
 * The fixture (objc_fixture.m) is built by gcc against GCC's libobjc and
 * linked here; objc.cmake strips this executable after linking and hands
 * us nm's listings of the file before and after, so the test first proves
 * the method symbols really are gone. Oracles: the runtime's own
 * method_getImplementation for each IMP, return addresses taken inside
 * each method body, names spelled by hand in the fixture. Last, the whole
 * pipeline: snap_callstack_symbols called from inside a method names it.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "objc_fixture.h"
#include "platform/linux/objc_names.h"
#include "stacksnap.h"

/* Whether the file at path contains the text. */
static int file_contains(const char *path, const char *text) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  static char all[1 << 20];
  size_t n = fread(all, 1, sizeof all - 1, f);
  fclose(f);
  all[n] = 0;
  return strstr(all, text) != NULL;
}

static void check_stripped(void) {
  /* The unstripped copy shows what nm prints when the symbols are there:
     the same checks on it must find them (so they can fail). */
  CHECK(file_contains(OBJC_NM_UNSTRIPPED, "_i_SnapShape__area") == 1,
        "nm of the unstripped link (%s) lacks the method symbol",
        OBJC_NM_UNSTRIPPED);
  CHECK(file_contains(OBJC_NM_UNSTRIPPED, "objc_fixture_after_methods") == 1,
        "nm of the unstripped link lacks the C function");
  CHECK(file_contains(OBJC_NM_STRIPPED, "no symbols") == 1,
        "%s: nm still finds a symbol table in the test executable",
        OBJC_NM_STRIPPED);
  CHECK(file_contains(OBJC_NM_STRIPPED, "SnapShape") == 0,
        "the stripped executable still names a method");
}

static void check_probe(const objc_probe_t *p) {
  char buf[128];
  CHECK(p->imp != 0, "%s: the runtime gives no IMP", p->name);
  CHECK(p->inside > p->imp, "%s: body address 0x%lx not above IMP 0x%lx",
        p->name, (unsigned long)p->inside, (unsigned long)p->imp);

  /* From inside the body, with no floor and with a floor just below. */
  memset(buf, 'x', sizeof buf);
  uintptr_t got = snap__linux_objc_method(p->inside, 0, buf, sizeof buf);
  CHECK(got == p->imp, "%s: IMP 0x%lx, expected 0x%lx", p->name,
        (unsigned long)got, (unsigned long)p->imp);
  CHECK(strcmp(buf, p->name) == 0, "named \"%s\", expected \"%s\"", buf,
        p->name);
  got = snap__linux_objc_method(p->inside, p->imp - 1, buf, sizeof buf);
  CHECK(got == p->imp, "%s: floor just below the IMP hides it", p->name);

  /* The first instruction names the method; the floor is exclusive. */
  got = snap__linux_objc_method(p->imp, 0, buf, sizeof buf);
  CHECK(got == p->imp && strcmp(buf, p->name) == 0,
        "%s at its first byte: 0x%lx \"%s\"", p->name, (unsigned long)got, buf);
  got = snap__linux_objc_method(p->inside, p->imp, buf, sizeof buf);
  CHECK(got == 0, "%s: a floor at the IMP must exclude it (got 0x%lx)", p->name,
        (unsigned long)got);

  /* Truncation: NUL-terminated, a prefix of the name, IMP still given. */
  char small[6];
  got = snap__linux_objc_method(p->inside, 0, small, sizeof small);
  CHECK(got == p->imp && strlen(small) == sizeof small - 1 &&
            strncmp(small, p->name, sizeof small - 1) == 0,
        "%s truncated to \"%s\"", p->name, small);
}

/* Lookups from several threads while the main thread loads the plug-in
   (so the table is rebuilt under them): every answer stays right. Returns
   the number of wrong answers through the pointer. */
#define LOOKUP_THREADS 3
#define LOOKUP_ROUNDS 300
static objc_probe_t probes[OBJC_FIXTURE_PROBES];

static void *lookups(void *arg) {
  intptr_t wrong = 0;
  char buf[128];
  for (int r = 0; r < LOOKUP_ROUNDS; r++) {
    const objc_probe_t *p = &probes[(r + (intptr_t)arg) % OBJC_FIXTURE_PROBES];
    if (snap__linux_objc_method(p->inside, 0, buf, sizeof buf) != p->imp ||
        strcmp(buf, p->name) != 0)
      wrong++;
  }
  return (void *)wrong;
}

/* The whole pipeline: snap_callstack_symbols from inside a method of a
   stripped binary names that method. */
static void in_method(void *ctx) {
  *(const snap_stack_t **)ctx = snap_callstack_symbols(16, 0);
}

static void check_pipeline(void) {
  const snap_stack_t *s = NULL;
  uintptr_t imp = objc_fixture_visit(in_method, &s);
  CHECK(s != NULL, "snap_callstack_symbols failed");
  int found = -1;
  for (int i = 0; i < snap_stack_count(s); i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    if (f->symbol && strcmp(f->symbol, "-[SnapShape visit:context:]") == 0)
      found = i;
  }
  CHECK(found >= 0, "no frame named -[SnapShape visit:context:]");
  if (found >= 0)
    CHECK(snap_stack_frame(s, found)->symbol_addr == imp,
          "symbol_addr 0x%lx, the runtime's IMP 0x%lx",
          (unsigned long)snap_stack_frame(s, found)->symbol_addr,
          (unsigned long)imp);
  if (found < 0)
    for (int i = 0; i < snap_stack_count(s); i++)
      fprintf(stderr, "  %s\n", snap_stack_line(s, i));
  snap_stack_release(s);
}

int main(void) {
  check_stripped();

  objc_fixture_probes(probes);
  uintptr_t highest = 0;
  for (int i = 0; i < OBJC_FIXTURE_PROBES; i++) {
    check_probe(&probes[i]);
    if (probes[i].imp > highest)
      highest = probes[i].imp;
  }

  /* A plain C function above every method: with its start as the floor
     (what the ELF provider passes when it knows the function) it is not
     named for a method; without a floor the nearest method below wins,
     which shows the floor is what decides. */
  uintptr_t c_inside = objc_fixture_after_methods();
  CHECK(c_inside > highest, "the C function 0x%lx is not above the methods",
        (unsigned long)c_inside);
  Dl_info info;
  uintptr_t c_start = (uintptr_t)&objc_fixture_after_methods;
  CHECK(dladdr((void *)c_inside, &info) == 0 || info.dli_sname == NULL ||
            strcmp(info.dli_sname, "objc_fixture_after_methods") != 0,
        "the stripped binary still names the C function through dladdr");
  char buf[128] = "untouched";
  CHECK(snap__linux_objc_method(c_inside, c_start, buf, sizeof buf) == 0,
        "the C function is named \"%s\"", buf);
  CHECK(snap__linux_objc_method(c_inside, 0, buf, sizeof buf) != 0,
        "without a floor the C function should fall to the last method");

  /* Below every method (and its floor): nothing. */
  CHECK(snap__linux_objc_method(1, 0, buf, sizeof buf) == 0,
        "address 1 named \"%s\"", buf);

  /* A class that arrives later: the table notices and rebuilds, while
     other threads look up. */
  pthread_t t[LOOKUP_THREADS];
  for (intptr_t i = 0; i < LOOKUP_THREADS; i++)
    CHECK(pthread_create(&t[i], NULL, lookups, (void *)i) == 0,
          "pthread_create");
  void *plugin = dlopen(OBJC_PLUGIN_PATH, RTLD_NOW);
  CHECK(plugin != NULL, "dlopen %s: %s", OBJC_PLUGIN_PATH, dlerror());
  if (plugin) {
    objc_plugin_probe_fn probe =
        (objc_plugin_probe_fn)dlsym(plugin, "objc_plugin_probe");
    CHECK(probe != NULL, "no objc_plugin_probe");
    if (probe) {
      objc_probe_t p;
      probe(&p);
      check_probe(&p);
    }
  }
  for (int i = 0; i < LOOKUP_THREADS; i++) {
    void *wrong = NULL;
    pthread_join(t[i], &wrong);
    CHECK(wrong == NULL, "thread %d: %ld wrong answers", i,
          (long)(intptr_t)wrong);
  }
  /* And the old classes are still there after the rebuild. */
  check_probe(&probes[0]);

  check_pipeline();
  return check_result("test_objc_names");
}
