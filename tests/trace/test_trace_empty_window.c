/*
 * test_trace_empty_window.c — a window with no samples writes a valid,
 * empty trace in every format, with no undefined behaviour (issue 24,
 * item 14: the Perfetto exporter called qsort(NULL, 0, ...), and qsort's
 * array is declared nonnull: a UBSan build aborted). The point of this
 * test is its run in the sanitizer builds (ASan+UBSan with
 * -fno-sanitize-recover); elsewhere it checks the files.
 * Oracle: the files exist and are not empty (a Perfetto trace always has
 * its clock packet; JSON its brackets); UBSan's abort, where built in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"

int main(void) {
  char dir[] = "/tmp/snap_empty_window.XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  snap_trace_config_t c;
  snap_trace_config_default(&c);
  CHECK_EQ(snap_trace_start(&c), SNAP_OK);
  usleep(20000);
  CHECK_EQ(snap_trace_stop(), SNAP_OK);
  static const unsigned formats[] = {SNAP_TRACE_PERFETTO,
                                     SNAP_TRACE_CHROME_JSON, SNAP_TRACE_FOLDED};
  for (int i = 0; i < 3; i++) {
    char path[600];
    snprintf(path, sizeof path, "%s/empty.%u", dir, formats[i]);
    /* 1970's first two nanoseconds: nothing was sampled then. */
    CHECK_EQ(snap_trace_write(path, formats[i], 1, 2), SNAP_OK);
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode), "format %u: no file",
          formats[i]);
    CHECK(formats[i] == SNAP_TRACE_FOLDED || st.st_size > 0,
          "format %u: an empty file", formats[i]);
    unlink(path);
  }
  rmdir(dir);
  return check_result("test_trace_empty_window");
}
