/*
 * fuzz_dwarf_lines.c — libFuzzer over tools/symbolicate/dwarf_lines.c
 * (libdw over a file in memory): any bytes as a whole ELF file, with a
 * budget of 64 MiB for what compressed sections inflate to. The index is built
 * and looked up at the addresses the input's last 64 bytes name, at 0 and at
 * the top of the address space; every answer must be an error code or a row at
 * or below the address with a file (possibly empty). ASan/UBSan find the rest
 * (the asan configuration, tests/tools/dwarf_tests.cmake).
 */
#include "../../tools/symbolicate/dwarf_lines.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* libelf may write into its buffer (ELF_C_READ_MMAP_PRIVATE): a copy,
     of exactly size bytes so that ASan sees an overread. */
  uint8_t *copy = malloc(size ? size : 1);
  if (!copy)
    return 0;
  memcpy(copy, data, size);
  snap__dwarf_lines_t *dl = NULL;
  int rc = snap__dwarf_lines_open(copy, size, 64u << 20, NULL, &dl);
  if (rc != SNAP_DWL_OK) {
    if (dl || rc >= 0 || !snap__dwarf_lines_strerror(rc))
      abort();
    free(copy);
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
      snap__dwarf_inline_t in[4];
      (void)snap__dwarf_lines_inlined(dl, probes[i] + d, in, 4);
    }
  }
  snap__dwarf_lines_close(dl);
  free(copy);
  return 0;
}
