/*
 * test_macho_uuid.c — an image's LC_UUID and extent from its load commands
 * (src/platform/darwin/macho_ranges.c) and the UUID's text form
 * (src/platform/darwin/build_id_text.c), on Linux, over a stand-in image
 * laid out byte by byte as <mach-o/loader.h> says (docs/apple.md, [U1]):
 *   mach_header_64 (32 bytes), then LC_SEGMENT_64 (72 bytes, no sections)
 *   __PAGEZERO, __TEXT, __DATA, __LINKEDIT, then LC_UUID (24 bytes).
 * The builder below writes the header's fields at loader.h's offsets by
 * itself; it shares no code with the parser.
 *
 * Oracles: the UUID bytes and their text are TN3178's example
 * (`otool -l` prints "uuid E3F22F87-0B68-3B06-A845-8402D70B8FE9" for the
 * LC_UUID of /usr/bin/true, x86_64; [U2]); the extent is the segment
 * table's arithmetic written out by hand. Hostile variants (cmdsize 0, a
 * short or long uuid command, sizeofcmds past the end, every truncation)
 * must give no UUID and never read outside the bytes: each image is copied
 * into a buffer of exactly its size, so ASan sees any overread.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "platform/darwin/macho_ranges.h"
#include "platform/platform.h"

/* <mach-o/loader.h> ([U1]). */
#define MH_MAGIC_64 0xfeedfacfu
#define CPU_TYPE_ARM64 0x0100000cu
#define MH_EXECUTE 0x2u
#define MH_DYLIB 0x6u
#define LC_SEGMENT_64 0x19u
#define LC_UUID 0x1bu

/* TN3178: x86_64 /usr/bin/true, `otool -l`: "uuid E3F2...8FE9". */
static const uint8_t k_uuid[16] = {0xe3, 0xf2, 0x2f, 0x87, 0x0b, 0x68,
                                   0x3b, 0x06, 0xa8, 0x45, 0x84, 0x02,
                                   0xd7, 0x0b, 0x8f, 0xe9};
static const char k_uuid_text[] = "E3F22F87-0B68-3B06-A845-8402D70B8FE9";

typedef struct image {
  unsigned char b[1024];
  size_t len;
  uint32_t ncmds;
} image_t;

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

static void begin(image_t *im, uint32_t filetype) {
  memset(im, 0, sizeof *im);
  put32(im->b + 0, MH_MAGIC_64);    /* magic */
  put32(im->b + 4, CPU_TYPE_ARM64); /* cputype */
  put32(im->b + 12, filetype);      /* filetype */
  im->len = 32;                     /* sizeof(struct mach_header_64) */
}

/* struct segment_command_64: cmd, cmdsize, segname[16], vmaddr, vmsize,
   fileoff, filesize, maxprot, initprot, nsects, flags. */
static void segment(image_t *im, const char *name, uint64_t vmaddr,
                    uint64_t vmsize) {
  unsigned char *c = im->b + im->len;
  put32(c, LC_SEGMENT_64);
  put32(c + 4, 72);
  strncpy((char *)c + 8, name, 16);
  put64(c + 24, vmaddr);
  put64(c + 32, vmsize);
  im->len += 72;
  im->ncmds++;
}

/* struct uuid_command: cmd, cmdsize, uint8_t uuid[16]. cmdsize as given
   (24 is the real one); the command takes max(cmdsize, 8) bytes here. */
static void uuid_cmd(image_t *im, uint32_t cmdsize, const uint8_t *uuid) {
  unsigned char *c = im->b + im->len;
  put32(c, LC_UUID);
  put32(c + 4, cmdsize);
  size_t room = cmdsize > 8 ? cmdsize - 8 : 0;
  memcpy(c + 8, uuid, room < 16 ? room : 16);
  im->len += cmdsize >= 8 ? cmdsize : 8;
  im->ncmds++;
}

static void finish(image_t *im) {
  put32(im->b + 16, im->ncmds);                /* ncmds */
  put32(im->b + 20, (uint32_t)(im->len - 32)); /* sizeofcmds */
}

/* A typical arm64 executable: __PAGEZERO 4 GiB, then __TEXT at 4 GiB. */
static void executable(image_t *im, bool with_uuid) {
  begin(im, MH_EXECUTE);
  segment(im, "__PAGEZERO", 0, 0x100000000ull);
  segment(im, "__TEXT", 0x100000000ull, 0x8000);
  segment(im, "__DATA", 0x100008000ull, 0x4000);
  segment(im, "__LINKEDIT", 0x10000c000ull, 0x1234);
  if (with_uuid)
    uuid_cmd(im, 24, k_uuid);
  finish(im);
}
/* __LINKEDIT's end minus __TEXT's start: 0x10000d234 - 0x100000000. */
#define EXE_EXTENT 0xd234u

/* Parses a copy of exactly n bytes, so any read past them is an ASan
   report rather than a silent read of the rest of im->b. */
static bool parse_exact(const unsigned char *b, size_t n,
                        snap__macho_info_t *out) {
  unsigned char *copy = malloc(n ? n : 1);
  if (!copy)
    abort();
  memcpy(copy, b, n);
  bool ok = snap__macho_parse(copy, n, out);
  /* Nothing of *out may point into the copy once it is freed: only
     install_name does, and none of these images has one. */
  free(copy);
  return ok;
}

static void test_executable(void) {
  image_t im;
  snap__macho_info_t m;
  executable(&im, true);
  CHECK(parse_exact(im.b, im.len, &m), "well-formed image refused");
  CHECK(m.has_uuid, "LC_UUID not found");
  CHECK(memcmp(m.uuid, k_uuid, 16) == 0, "wrong UUID bytes");
  CHECK_EQ(m.image_size, EXE_EXTENT);
  CHECK_EQ(m.text_vmaddr, 0x100000000ull);
  CHECK_EQ(m.text_vmsize, 0x8000);

  executable(&im, false);
  CHECK(parse_exact(im.b, im.len, &m), "image without LC_UUID refused");
  CHECK(!m.has_uuid, "a UUID from an image that has none");
  CHECK_EQ(m.image_size, EXE_EXTENT);
}

/* A dylib: no __PAGEZERO, __TEXT at 0, LC_UUID before the segments. The
   extent counts from __TEXT's start; a segment whose end wraps (corrupt)
   stretches nothing. */
static void test_dylib(void) {
  image_t im;
  snap__macho_info_t m;
  begin(&im, MH_DYLIB);
  uuid_cmd(&im, 24, k_uuid);
  segment(&im, "__TEXT", 0, 0x4000);
  segment(&im, "__DATA_CONST", 0x4000, 0x4000);
  segment(&im, "__LINKEDIT", 0x8000, 0x500);
  segment(&im, "__BOGUS", UINT64_MAX - 0x10, 0x100);
  finish(&im);
  CHECK(parse_exact(im.b, im.len, &m), "dylib refused");
  CHECK(m.has_uuid && memcmp(m.uuid, k_uuid, 16) == 0, "dylib's UUID");
  CHECK_EQ(m.image_size, 0x8500);

  /* __PAGEZERO maps nothing: even one that claims to reach past the other
     segments (ld64 puts it below __TEXT) stretches nothing. */
  begin(&im, MH_EXECUTE);
  segment(&im, "__PAGEZERO", 0, 0x200000000ull);
  segment(&im, "__TEXT", 0x100000000ull, 0x8000);
  segment(&im, "__LINKEDIT", 0x100008000ull, 0x100);
  finish(&im);
  CHECK(parse_exact(im.b, im.len, &m), "long __PAGEZERO: refused");
  CHECK_EQ(m.image_size, 0x8100);

  /* Two LC_UUIDs: dyld would refuse the image; the first is kept. */
  static const uint8_t other[16] = {1, 2,  3,  4,  5,  6,  7,  8,
                                    9, 10, 11, 12, 13, 14, 15, 16};
  begin(&im, MH_DYLIB);
  segment(&im, "__TEXT", 0, 0x4000);
  uuid_cmd(&im, 24, k_uuid);
  uuid_cmd(&im, 24, other);
  finish(&im);
  CHECK(parse_exact(im.b, im.len, &m), "two UUIDs: refused");
  CHECK(m.has_uuid && memcmp(m.uuid, k_uuid, 16) == 0, "not the first UUID");
}

/* LC_UUID of the wrong size, or a chain that does not hold together:
   no UUID, no crash. */
static void test_hostile(void) {
  image_t im;
  snap__macho_info_t m;

  /* cmdsize 0: the walk cannot step past it; the image is malformed and
     nothing read from it is kept. */
  executable(&im, false);
  uuid_cmd(&im, 0, k_uuid);
  finish(&im);
  CHECK(!parse_exact(im.b, im.len, &m), "cmdsize 0 accepted");
  CHECK(!m.has_uuid && m.image_size == 0 && m.text_vmsize == 0,
        "a refused image left fields behind");

  /* A uuid command cut short (cmdsize 16: 8 of the 16 bytes), last in the
     image so that reading all 16 would overrun the buffer. */
  executable(&im, false);
  uuid_cmd(&im, 16, k_uuid);
  finish(&im);
  CHECK(parse_exact(im.b, im.len, &m), "short LC_UUID: whole image refused");
  CHECK(!m.has_uuid, "UUID from a 16-byte uuid command");
  CHECK_EQ(m.image_size, EXE_EXTENT);

  /* Longer than uuid_command: not one dyld loads. */
  executable(&im, false);
  uuid_cmd(&im, 32, k_uuid);
  finish(&im);
  CHECK(parse_exact(im.b, im.len, &m), "long LC_UUID: whole image refused");
  CHECK(!m.has_uuid, "UUID from a 32-byte uuid command");

  /* cmdsize 24 but past sizeofcmds: the last command sticks out. */
  executable(&im, true);
  put32(im.b + 20, (uint32_t)(im.len - 32 - 8));
  CHECK(!parse_exact(im.b, im.len - 8, &m), "command past sizeofcmds");
  CHECK(!m.has_uuid, "UUID from a command past sizeofcmds");

  /* sizeofcmds past the end of the bytes. */
  executable(&im, true);
  put32(im.b + 20, (uint32_t)(im.len - 32 + 8));
  CHECK(!parse_exact(im.b, im.len, &m), "sizeofcmds past the end");
  CHECK(!m.has_uuid, "UUID with sizeofcmds past the end");
  put32(im.b + 20, UINT32_MAX);
  CHECK(!parse_exact(im.b, im.len, &m), "sizeofcmds 0xffffffff");

  /* ncmds says one more command than there is. */
  executable(&im, true);
  put32(im.b + 16, im.ncmds + 1);
  CHECK(!parse_exact(im.b, im.len, &m), "ncmds past the commands");
  CHECK(!m.has_uuid, "UUID with ncmds past the commands");

  /* Every truncation of the good image: refused, read inside. */
  executable(&im, true);
  for (size_t n = 0; n < im.len; n++) {
    CHECK(!parse_exact(im.b, n, &m), "truncated to %zu bytes: accepted", n);
    CHECK(!m.has_uuid, "truncated to %zu bytes: a UUID", n);
  }
}

/* The text form ([U2]): 16 bytes → 8-4-4-4-12 uppercase; others →
   lowercase hex; nothing that does not fit. */
static void test_text(void) {
  char out[2 * SNAP__BUILD_ID_MAX + 5];
  snap__plat_build_id_text(k_uuid, 16, out, sizeof out);
  CHECK(strcmp(out, k_uuid_text) == 0, "UUID text \"%s\"", out);

  /* Exactly enough room: 36 characters and the NUL. */
  char exact[37];
  snap__plat_build_id_text(k_uuid, 16, exact, sizeof exact);
  CHECK(strcmp(exact, k_uuid_text) == 0, "in 37 bytes: \"%s\"", exact);

  /* One byte short: "", and nothing written past the given size. */
  char small[40];
  memset(small, 'Z', sizeof small);
  snap__plat_build_id_text(k_uuid, 16, small, 36);
  CHECK(small[0] == '\0', "a truncated UUID \"%.36s\"", small);
  for (size_t i = 36; i < sizeof small; i++)
    CHECK(small[i] == 'Z', "byte %zu written past size", i);

  /* Not a UUID: the generic lowercase hex (a 20-byte SHA-1 style id). */
  static const uint8_t sha[20] = {0x3a, 0x9f, 0x00, 0xff, 0x10, 0x01, 0xab,
                                  0xcd, 0xef, 0x12, 0x34, 0x56, 0x78, 0x9a,
                                  0xbc, 0xde, 0xf0, 0x0f, 0x77, 0x88};
  snap__plat_build_id_text(sha, sizeof sha, out, sizeof out);
  CHECK(strcmp(out, "3a9f00ff1001abcdef123456789abcdef00f7788") == 0,
        "20-byte id \"%s\"", out);

  snap__plat_build_id_text(k_uuid, 0, out, sizeof out);
  CHECK(out[0] == '\0', "empty id gave \"%s\"", out);
  snap__plat_build_id_text(NULL, 16, out, sizeof out);
  CHECK(out[0] == '\0', "NULL id gave \"%s\"", out);
  snap__plat_build_id_text(k_uuid, 16, out, 0); /* must not write */
}

int main(void) {
  test_executable();
  test_dylib();
  test_hostile();
  test_text();
  return check_result("test_macho_uuid");
}
