/*
 * test_errors.c — the error table's two faces: every code has a distinct
 * name (snap_err_name, "SNAP_" plus the enum's own spelling, checked
 * against the preprocessor's spelling of each enumerator) and a text
 * (snap_strerror); a stack too deep to sample has its own code, whose
 * text is not "out of memory".
 */
#include <string.h>

#include "check.h"
#include "stacksnap.h"

int main(void) {
  struct {
    int code;
    const char *name;
  } want[] = {
#define ENTRY(name, value, text) {SNAP_##name, "SNAP_" #name},
      SNAP_ERRNO_MAP(ENTRY)
#undef ENTRY
  };
  int n = (int)(sizeof want / sizeof want[0]);
  for (int i = 0; i < n; i++) {
    CHECK(strcmp(snap_err_name(want[i].code), want[i].name) == 0,
          "snap_err_name(%d) = %s, want %s", want[i].code,
          snap_err_name(want[i].code), want[i].name);
    CHECK(strcmp(snap_strerror(want[i].code), "unknown error") != 0,
          "%s has no text", want[i].name);
    for (int j = 0; j < i; j++)
      CHECK(want[i].code != want[j].code, "%s and %s share a code",
            want[i].name, want[j].name);
  }
  CHECK_EQ(SNAP_ENOSTACK, -11);
  CHECK(strcmp(snap_strerror(SNAP_ENOSTACK), snap_strerror(SNAP_ENOMEM)) != 0,
        "a stack too deep reads as out of memory");
  CHECK(strcmp(snap_err_name(42), "SNAP_EUNKNOWN") == 0, "42: %s",
        snap_err_name(42));
  CHECK(strcmp(snap_err_name(-1000), "SNAP_EUNKNOWN") == 0, "-1000");
  return check_result("test_errors");
}
