/*
 * elf_debug_file.c — a stripped image's separate debug file, found as gdb
 * finds it: /usr/lib/debug/.build-id/xx/yyyy.debug (accepted only if its
 * own build-id matches), then the .gnu_debuglink name in <dir>/,
 * <dir>/.debug/ and /usr/lib/debug/<dir>/ (accepted if the link's CRC32
 * of the whole file matches, or both build-ids do).
 *
 * Owns: snap__elf_find_debug_file. A debug file names the functions; the
 * image's own file still decodes its PLT (a debug file's .plt is NOBITS).
 * Must not: accept a candidate that is the image itself, is for another
 * machine, has no .symtab, or does not match; run in the stopped window
 * (it opens and reads files, allocates).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/linux/elf_image.h"
#include "platform/linux/linux.h"

#define DEBUG_ROOT "/usr/lib/debug"

/* CRC-32 (the polynomial of zlib and of gdb's gnu_debuglink_crc32) of the
   whole file at path, read in chunks (the file copy holds only parts).
   False when the file cannot be read to its end. */
static bool crc32_file(const char *path, uint32_t *out) {
  uint32_t table[256];
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  struct stat st;
  int fd = snap__linux_open_regular(path, &st);
  if (fd < 0)
    return false;
  enum { CHUNK = 1 << 16 };
  uint8_t *chunk = malloc(CHUNK);
  uint32_t crc = 0xFFFFFFFFu;
  bool ok = chunk != NULL;
  for (;;) {
    ssize_t n = ok ? read(fd, chunk, CHUNK) : 0;
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      ok = false;
    if (n <= 0)
      break;
    for (ssize_t i = 0; i < n; i++)
      crc = table[(crc ^ chunk[i]) & 0xFF] ^ (crc >> 8);
  }
  free(chunk);
  close(fd);
  *out = crc ^ 0xFFFFFFFFu;
  return ok;
}

static bool same_build_id(const snap__elf_t *a, const snap__elf_t *b) {
  return a->build_id && b->build_id && a->build_id_len == b->build_id_len &&
         memcmp(a->build_id, b->build_id, a->build_id_len) == 0;
}

/* Maps and parses a candidate debug file; keeps it only if it has a
   .symtab, is for the same machine, is not the image itself, and matches:
   by build-id, or (by_crc) by the debuglink's CRC. */
static bool try_debug(image_t *img, const char *path, bool by_crc) {
  mapping_t m;
  uint32_t crc;
  if (!snap__elf_map_file(path, &m, false))
    return false;
  snap__elf_t d;
  bool ok = !(m.dev == img->file.dev && m.ino == img->file.ino) &&
            snap__elf_parse_lazy(&d, m.addr, m.size) == 0;
  if (ok) {
    ok = d.from_symtab && d.machine == img->elf.machine &&
         (same_build_id(&img->elf, &d) ||
          (by_crc && crc32_file(path, &crc) && crc == img->elf.debuglink_crc));
    if (!ok)
      snap__elf_free(&d);
  }
  if (!ok) {
    snap__elf_unmap(&m);
    return false;
  }
  img->debug = m; /* until indexed (index_image) */
  img->dbg = d;
  img->has_dbg = true;
  return true;
}

static bool try_debuglink_in(image_t *img, const char *dir) {
  const char *fmt[] = {"%s/%s", "%s/.debug/%s", DEBUG_ROOT "%s/%s"};
  char path[PATH_MAX];
  for (size_t i = 0; i < sizeof fmt / sizeof fmt[0]; i++) {
    int n = snprintf(path, sizeof path, fmt[i], dir, img->elf.debuglink);
    if (n > 0 && (size_t)n < sizeof path && try_debug(img, path, true))
      return true;
  }
  return false;
}

void snap__elf_find_debug_file(image_t *img) {
  const snap__elf_t *e = &img->elf;
  char path[PATH_MAX];
  if (e->build_id && e->build_id_len >= 2) {
    int n = snprintf(path, sizeof path, DEBUG_ROOT "/.build-id/%02x/",
                     e->build_id[0]);
    for (size_t i = 1; i < e->build_id_len && n > 0 && n < 200; i++)
      n += snprintf(path + n, sizeof path - (size_t)n, "%02x", e->build_id[i]);
    if (n > 0 && n < 200) {
      snprintf(path + n, sizeof path - (size_t)n, ".debug");
      if (try_debug(img, path, false))
        return;
    }
  }
  if (!e->debuglink || img->path[0] != '/')
    return;
  /* <dir> as the loader named the file, then as the file really is (on
     merged-/usr systems /lib/x86_64-linux-gnu is /usr/lib/x86_64-linux-gnu,
     and /usr/lib/debug holds the latter). */
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", img->path);
  char *slash = strrchr(dir, '/');
  *slash = '\0';
  if (try_debuglink_in(img, dir))
    return;
  if (realpath(img->path, path)) {
    slash = strrchr(path, '/');
    if (slash) {
      *slash = '\0';
      if (strcmp(path, dir) != 0)
        try_debuglink_in(img, path);
    }
  }
}
