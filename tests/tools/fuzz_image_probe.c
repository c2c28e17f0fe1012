/*
 * fuzz_image_probe.c — libFuzzer over what stands between a hostile report
 * and the files stacksnap-symbolicate reads (issue 24): the bounded
 * build-id probe (tools/symbolicate/image_probe.c), the build-id form
 * check, and the terminal escaper (text_escape.c).
 *
 * Each input is a file: the probe reads it through a reader that aborts on
 * any read outside it; it must read at most SNAP__PROBE_MAX_READ bytes,
 * and unless it skipped a piece over its bounds (capped), find exactly
 * the build id the full reader finds (snap__elf_build_id: the file is read
 * whole only when the probe's id matches, and the full reader's then
 * decides). The same bytes as a string: the escape must hold no control
 * byte but none at all (no C0, DEL, C1), be valid UTF-8, count its length
 * as snprintf does, and a cut never splits an escape; a plausible build id
 * is hex of 16 to 128 digits, lowercased. abort() on any disagreement.
 *
 * Built only with clang and ASan (SNAP_FUZZ_SECONDS,
 * tests/tools/symbolicate_tests.cmake); seeds: fuzz_elf's libraries.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_probe.h"
#include "platform/linux/elf_reader.h"
#include "text_escape.h"

static void finding(const char *what) {
  fprintf(stderr, "fuzz_image_probe: %s\n", what);
  abort();
}

typedef struct mem {
  const uint8_t *data;
  size_t size, read;
} mem_t;

static int mem_read(void *ctx, uint64_t off, void *buf, size_t len) {
  mem_t *m = ctx;
  if (off > m->size || len > m->size - off)
    finding("a read outside the file");
  memcpy(buf, m->data + off, len);
  m->read += len;
  return 0;
}

static void check_probe(const uint8_t *data, size_t size) {
  mem_t m = {data, size, 0};
  snap__probe_t p;
  int rc = snap__probe_build_id(mem_read, &m, size, &p);
  if (m.read > SNAP__PROBE_MAX_READ || p.bytes != m.read)
    finding("read more than the bound, or miscounted");
  if ((rc == 0) != (p.id_len > 0))
    finding("result and id disagree");
  const uint8_t *id;
  size_t len;
  int full = snap__elf_build_id(data, size, &id, &len);
  if (rc == 0 && (full != 0 || len != p.id_len || memcmp(id, p.id, len)))
    finding("the probe found an id the full reader does not");
  if (!p.capped && full == 0 && len <= SNAP__BUILD_ID_MAX_BYTES && rc != 0)
    finding("the full reader found an id the probe missed, within bounds");
}

/* Whether s[0..n) is well-formed UTF-8 without C0, DEL or C1. */
static bool terminal_safe(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    size_t k = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xC2) || c > 0xF4 ||
        i + k > n)
      return false;
    for (size_t j = 1; j < k; j++)
      if ((s[i + j] & 0xC0) != 0x80)
        return false;
    if (c == 0xC2 && s[i + 1] < 0xA0)
      return false;
    i += k;
  }
  return true;
}

static void check_escape(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  size_t need = snap__text_escape(NULL, 0, s, size);
  if (need < size || need > 4 * size)
    finding("escape length");
  char *out = malloc(need + 1);
  if (!out)
    return;
  if (snap__text_escape(out, need + 1, s, size) != need || out[need] ||
      strlen(out) != need || !terminal_safe((unsigned char *)out, need))
    finding("escaped text is not terminal-safe, or its length is wrong");
  /* Cut short: a prefix of the whole, never half an escape. */
  size_t cut = size % (need + 1);
  char *part = malloc(cut + 1);
  if (part) {
    snap__text_escape(part, cut + 1, s, size);
    size_t got = strlen(part);
    if (got > cut || memcmp(part, out, got) ||
        !terminal_safe((unsigned char *)part, got))
      finding("a cut escape");
    free(part);
  }
  free(out);
}

static void check_build_id(const uint8_t *data, size_t size) {
  char s[160], out[160];
  size_t n = size < sizeof s - 1 ? size : sizeof s - 1;
  memcpy(s, data, n);
  s[n] = '\0';
  if (!snap__build_id_plausible(s, out, sizeof out))
    return;
  size_t len = strlen(out);
  if (len != strlen(s) || len % 2 || len < 16 || len > 128 ||
      strspn(out, "0123456789abcdef") != len)
    finding("a plausible build id that is not hex of 8 to 64 bytes");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_probe(data, size);
  check_escape(data, size < 4096 ? size : 4096); /* text is short */
  check_build_id(data, size);
  return 0;
}
