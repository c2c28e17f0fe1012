/*
 * demangle_swift_standin.c (test_demangle_swift_plumbing) — a plumbing
 * check with a stand-in, NOT a Swift test: there is no Swift runtime here.
 * This executable exports its own swift_demangle with the runtime's
 * signature, so snap__plat_demangle finds it through dlsym(RTLD_DEFAULT)
 * as it would find libswiftCore's. The checks: which prefixes reach it,
 * with which arguments (the whole name and its length, no output buffer,
 * flags 0), that its malloc'ed answer is handed back as is, that its NULL
 * (a name it cannot read) gives NULL, and that C++ and plain names never
 * reach it. Real Swift demangling is the Swift runtime's business.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "platform/platform.h"

static int calls;
static char last_name[128];
static size_t last_len;
static const void *last_out, *last_size;
static uint32_t last_flags = 0xffffffffu;

char *swift_demangle(const char *name, size_t len, char *out, size_t *size,
                     uint32_t flags);
char *swift_demangle(const char *name, size_t len, char *out, size_t *size,
                     uint32_t flags) {
  calls++;
  snprintf(last_name, sizeof last_name, "%s", name);
  last_len = len;
  last_out = out;
  last_size = size;
  last_flags = flags;
  if (strstr(name, "unreadable"))
    return NULL;
  char *answer = malloc(strlen(name) + sizeof "standin:");
  if (answer)
    sprintf(answer, "standin:%s", name);
  return answer;
}

static void routed(const char *name, const char *passed) {
  int before = calls;
  char *got = snap__plat_demangle(name);
  CHECK(calls == before + 1, "%s did not reach swift_demangle", name);
  CHECK(strcmp(last_name, passed) == 0 && last_len == strlen(passed),
        "%s: passed \"%s\" (length %zu)", name, last_name, last_len);
  CHECK(last_out == NULL && last_size == NULL && last_flags == 0,
        "%s: an output buffer or flags were passed", name);
  char want[160];
  snprintf(want, sizeof want, "standin:%s", passed);
  CHECK(got && strcmp(got, want) == 0, "%s gave \"%s\"", name,
        got ? got : "(null)");
  free(got);
}

static void not_routed(const char *name) {
  int before = calls;
  char *got = snap__plat_demangle(name);
  CHECK(calls == before, "%s reached swift_demangle", name);
  free(got); /* C++ names may well be demangled; not this test's concern */
}

int main(void) {
  routed("$s4main3fooyyF", "$s4main3fooyyF");
  routed("$S4main3fooyyF", "$S4main3fooyyF");
  routed("$e4main3fooyyF", "$e4main3fooyyF");
  routed("_T04main3fooyyF", "_T04main3fooyyF");
  routed("_$s4main3fooyyF", "_$s4main3fooyyF");

  int before = calls;
  CHECK(snap__plat_demangle("$s4mainunreadable") == NULL,
        "the demangler's NULL must give NULL");
  CHECK(calls == before + 1, "the unreadable name did not reach it");

  not_routed("_ZN3foo3barEi");
  not_routed("main");
  not_routed("$");
  not_routed("s4main3fooyyF");
  not_routed("T04main");
  return check_result("test_demangle_swift_plumbing");
}
