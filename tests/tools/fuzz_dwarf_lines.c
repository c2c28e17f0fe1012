/*
 * fuzz_dwarf_lines.c — libFuzzer over tools/symbolicate/dwarf_lines.c:
 * any bytes as a whole ELF file. The index is built and looked up at the
 * addresses the input's last 64 bytes name, at 0 and at the top of the
 * address space; every answer must be an error code or a row at or below
 * the address with a file (possibly empty). ASan/UBSan find the rest (the asan
 * configuration, tests/tools/dwarf_tests.cmake).
 */
#include "../../tools/symbolicate/dwarf_lines.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  snap__dwarf_lines_t *dl = NULL;
  int rc = snap__dwarf_lines_open(data, size, &dl);
  if (rc != SNAP_DWL_OK) {
    if (dl || rc >= 0 || !snap__dwarf_lines_strerror(rc))
      abort();
    return 0;
  }
  uint64_t probes[10] = {0, 1, UINT64_MAX, UINT64_MAX / 2};
  size_t n = 4;
  for (size_t at = size >= 64 ? size - 64 : 0; n < 10 && at + 8 <= size;
       at += 8)
    memcpy(&probes[n++], data + at, 8);
  for (size_t i = 0; i < n; i++) {
    for (uint64_t d = 0; d < 3; d++) {
      snap__dwarf_line_t l;
      int lr = snap__dwarf_lines_lookup(dl, probes[i] + d, &l);
      if (lr == SNAP_DWL_OK) {
        /* An empty path is an answer (a file entry named ""; addr2line
           prints ":N" for it). */
        if (!l.file || l.row_address > probes[i] + d)
          abort();
      } else if (lr != SNAP_DWL_ENOTFOUND) {
        abort();
      }
    }
  }
  snap__dwarf_lines_close(dl);
  return 0;
}
