/*
 * test_macho_ranges.c — __TEXT ranges and app-or-system from Mach-O load
 * commands (src/platform/darwin/macho_ranges.c), on Linux, over files that
 * ld64.lld linked against the iPhoneOS SDK in check-darwin's iOS arm64 build:
 *   argv[1]  the smoke executable (App.app/App layout)
 *   argv[2]  a dylib embedded in the app (install name @rpath/...)
 *   argv[3]  a dylib installed like a system library (/usr/lib/...)
 * Registered only when SNAP_DARWIN_SDK was set at configure time
 * (tests/darwin/darwin.cmake); without the SDK there are no such files and
 * this test does not exist, rather than pass without checking anything.
 *
 * The oracle for the __TEXT range is independent of the parser: LC_MAIN's
 * entry offset (the file offset of main's code) must fall inside __TEXT,
 * which starts at file offset 0. LC_UUID's text and the image's extent are
 * compared with llvm-dwarfdump --uuid and llvm-objdump's segment list.
 * Then every truncation and a set of
 * corruptions of the real bytes must be rejected without a read outside
 * them (the ASan configuration proves the "without").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "platform/darwin/macho_ranges.h"
#include "platform/platform.h"

#define CPU_TYPE_ARM64 0x0100000cu
#define LC_MAIN 0x80000028u

static unsigned char *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  unsigned char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 1 << 16;
      unsigned char *b = realloc(buf, cap);
      if (!b)
        break;
      buf = b;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0)
      break;
  }
  fclose(f);
  *size = n;
  return buf;
}

static uint32_t rd32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* LC_MAIN's entryoff, by a loop of its own. */
static bool entry_offset(const unsigned char *b, size_t size, uint64_t *off) {
  uint32_t ncmds = rd32(b + 16);
  size_t p = 32;
  for (uint32_t i = 0; i < ncmds && p + 8 <= size; i++) {
    uint32_t cmd = rd32(b + p), cmdsize = rd32(b + p + 4);
    if (cmd == LC_MAIN && p + 16 <= size) {
      memcpy(off, b + p + 8, 8);
      return true;
    }
    if (cmdsize < 8)
      return false;
    p += cmdsize;
  }
  return false;
}

static bool name_is(const snap__macho_info_t *m, const char *want) {
  return m->install_name && m->install_name_len == strlen(want) &&
         memcmp(m->install_name, want, m->install_name_len) == 0;
}

/* The image's LC_UUID and extent against LLVM's Mach-O tools, which share
   no code with ours: `llvm-dwarfdump --uuid` prints "UUID: <text> (arch)
   path" in the form Apple's dwarfdump does (docs/apple.md, [U2]), and
   `llvm-objdump --macho --private-headers` lists each segment's segname,
   vmaddr and vmsize. Paths come from SNAP_LLVM_DWARFDUMP and
   SNAP_LLVM_OBJDUMP (tests/darwin/darwin.cmake); a tool not found there is
   said, and its check left out. */
static void check_identity(const char *path, const snap__macho_info_t *m) {
  char cmd[4096], line[512];
  const char *dd = getenv("SNAP_LLVM_DWARFDUMP");
  if (dd && *dd) {
    snprintf(cmd, sizeof cmd, "'%s' --uuid '%s'", dd, path);
    FILE *p = popen(cmd, "r");
    char want[64] = "";
    while (p && fgets(line, sizeof line, p))
      if (sscanf(line, "UUID: %63s", want) == 1)
        break;
    if (p)
      pclose(p);
    char got[2 * SNAP__BUILD_ID_MAX + 5];
    snap__plat_build_id_text(m->uuid, m->has_uuid ? 16 : 0, got, sizeof got);
    CHECK(want[0] && strcmp(got, want) == 0, "%s: UUID %s, llvm-dwarfdump %s",
          path, got, want);
  } else {
    fprintf(stderr, "test_macho_ranges: no llvm-dwarfdump: UUID unchecked\n");
  }
  const char *od = getenv("SNAP_LLVM_OBJDUMP");
  if (od && *od) {
    snprintf(cmd, sizeof cmd, "'%s' --macho --private-headers '%s'", od, path);
    FILE *p = popen(cmd, "r");
    char seg[64] = "";
    unsigned long long v, addr = 0, text = 0, end = 0;
    int nseg = 0;
    while (p && fgets(line, sizeof line, p)) {
      if (sscanf(line, " segname %63s", seg) == 1)
        continue;
      if (sscanf(line, " vmaddr %llx", &v) == 1)
        addr = v;
      else if (sscanf(line, " vmsize %llx", &v) == 1 && seg[0]) {
        nseg++;
        if (strcmp(seg, "__TEXT") == 0)
          text = addr;
        if (strcmp(seg, "__PAGEZERO") != 0 && addr + v > end)
          end = addr + v;
        seg[0] = '\0';
      }
    }
    if (p)
      pclose(p);
    CHECK(nseg >= 2, "%s: llvm-objdump listed %d segments", path, nseg);
    CHECK(m->image_size == end - text,
          "%s: extent %#llx, llvm-objdump's segments %#llx", path,
          (unsigned long long)m->image_size, end - text);
  } else {
    fprintf(stderr, "test_macho_ranges: no llvm-objdump: extent unchecked\n");
  }
}

static void check_executable(const char *path) {
  size_t size;
  unsigned char *b = slurp(path, &size);
  CHECK(b != NULL, "cannot read %s", path);
  if (!b)
    return;
  snap__macho_info_t m;
  CHECK(snap__macho_parse(b, size, &m), "parse %s", path);
  CHECK_EQ(m.cputype, CPU_TYPE_ARM64);
  CHECK_EQ(m.filetype, SNAP__MH_EXECUTE);
  CHECK(m.text_vmsize > 0 && m.text_vmsize % 0x4000 == 0,
        "__TEXT size %#llx (16 KiB pages on arm64)",
        (unsigned long long)m.text_vmsize);
  CHECK(m.text_vmaddr == 0x100000000ull, "__TEXT at %#llx",
        (unsigned long long)m.text_vmaddr);
  uint64_t entry = 0;
  CHECK(entry_offset(b, size, &entry), "no LC_MAIN");
  CHECK(entry > 0 && entry < m.text_vmsize, "entry %#llx outside __TEXT",
        (unsigned long long)entry);
  CHECK(m.install_name == NULL, "an executable has no install name");
  CHECK(snap__macho_origin(&m, path) == SNAP__MACHO_APP, "executable is app");
  CHECK(m.has_uuid, "ld64.lld writes LC_UUID by default");
  check_identity(path, &m);

  /* Every truncation: rejected until the load commands are all there. */
  size_t need = 32 + rd32(b + 20);
  for (size_t n = 0; n <= need + 8 && n <= size; n++) {
    unsigned char *copy = malloc(n ? n : 1); /* exact size: ASan sees overrun */
    memcpy(copy, b, n);
    snap__macho_info_t t;
    bool ok = snap__macho_parse(copy, n, &t);
    CHECK(ok == (n >= need), "truncated to %zu of %zu: %d", n, need, ok);
    free(copy);
  }

  /* Corruptions of the real header and commands. */
  unsigned char *c = malloc(need);
  memcpy(c, b, need);
  snap__macho_info_t t;
  memcpy(c + 20, &(uint32_t){0xfffffff0u}, 4); /* sizeofcmds past the end */
  CHECK(!snap__macho_parse(c, need, &t), "huge sizeofcmds accepted");
  memcpy(c, b, need);
  memcpy(c + 32 + 4, &(uint32_t){0}, 4); /* first cmdsize 0: no progress */
  CHECK(!snap__macho_parse(c, need, &t), "cmdsize 0 accepted");
  memcpy(c, b, need);
  memcpy(c + 32 + 4, &(uint32_t){0x7fffffffu}, 4); /* past sizeofcmds */
  CHECK(!snap__macho_parse(c, need, &t), "huge cmdsize accepted");
  memcpy(c, b, need);
  memcpy(c + 16, &(uint32_t){rd32(b + 16) + 1}, 4); /* one command too many */
  CHECK(!snap__macho_parse(c, need, &t), "extra ncmds accepted");
  memcpy(c, b, need);
  c[0] ^= 1; /* not MH_MAGIC_64 */
  CHECK(!snap__macho_parse(c, need, &t), "bad magic accepted");
  free(c);
  free(b);
}

static void check_dylib(const char *path, const char *install_name,
                        enum snap__macho_origin origin) {
  size_t size;
  unsigned char *b = slurp(path, &size);
  CHECK(b != NULL, "cannot read %s", path);
  if (!b)
    return;
  snap__macho_info_t m;
  CHECK(snap__macho_parse(b, size, &m), "parse %s", path);
  CHECK_EQ(m.filetype, SNAP__MH_DYLIB);
  CHECK(m.text_vmsize > 0, "no __TEXT in %s", path);
  CHECK(name_is(&m, install_name), "install name %.*s", (int)m.install_name_len,
        m.install_name ? m.install_name : "");
  CHECK(snap__macho_origin(&m, NULL) == origin, "%s origin %d", path,
        snap__macho_origin(&m, NULL));
  /* The same image in the dyld shared cache is the system's, whatever its
     name says. */
  snap__macho_info_t cached = m;
  cached.flags |= SNAP__MH_DYLIB_IN_CACHE;
  CHECK(snap__macho_origin(&cached, NULL) == SNAP__MACHO_SYSTEM, "in cache");
  CHECK(m.has_uuid, "%s: no LC_UUID", path);
  check_identity(path, &m);
  free(b);
}

/* An image with no telling install name: its loaded path decides. */
static void check_paths(void) {
  snap__macho_info_t m;
  memset(&m, 0, sizeof m);
  m.filetype = SNAP__MH_BUNDLE;
  CHECK(snap__macho_origin(&m, "/System/Library/Frameworks/UIKit.framework/"
                               "UIKit") == SNAP__MACHO_SYSTEM,
        "system framework path");
  CHECK(snap__macho_origin(
            &m, "/Applications/Xcode.app/Contents/Developer/Platforms/"
                "iPhoneOS.platform/Library/Developer/CoreSimulator/Profiles/"
                "Runtimes/iOS.simruntime/Contents/Resources/RuntimeRoot/usr/"
                "lib/libobjc.A.dylib") == SNAP__MACHO_SYSTEM,
        "simulator runtime path");
  CHECK(snap__macho_origin(&m, "/private/var/containers/Bundle/Application/"
                               "0C7F/App.app/PlugIns/Ext.appex/Ext") ==
            SNAP__MACHO_UNKNOWN,
        "bundle path is left to the app rule");
  m.filetype = SNAP__MH_DYLINKER;
  CHECK(snap__macho_origin(&m, "/usr/lib/dyld") == SNAP__MACHO_SYSTEM, "dyld");
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s executable embedded.dylib system.dylib\n",
            argv[0]);
    return 2;
  }
  check_executable(argv[1]);
  check_dylib(argv[2], "@rpath/libsnapsmoke_embedded.dylib", SNAP__MACHO_APP);
  check_dylib(argv[3], "/usr/lib/libsnapsmoke_system.dylib",
              SNAP__MACHO_SYSTEM);
  check_paths();
  return check_result("test_macho_ranges");
}
