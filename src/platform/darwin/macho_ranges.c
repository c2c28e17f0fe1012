/*
 * macho_ranges.c — __TEXT range, the __unwind_info section and
 * app-or-system from Mach-O load commands.
 *
 * Why __TEXT and not each executable section: __TEXT is the one segment
 * that holds code (__text, __stubs, __auth_stubs, the Swift and ObjC
 * metadata around them) and it starts at the image's load address, so one
 * range per image answers "which image holds this pc" without a section
 * walk, the way dyld itself answers dladdr.
 *
 * Algorithm: check the 32-byte header (magic, 64-bit, sizeofcmds inside the
 * bytes given), then step through the commands by cmdsize (each at least 8,
 * 8-byte multiple per the ABI, inside sizeofcmds), keeping LC_SEGMENT_64
 * "__TEXT" (and, among its section headers, all inside cmdsize,
 * "__unwind_info": compact_unwind.c reads it for function bounds),
 * LC_ID_DYLIB, the first LC_UUID (cmdsize exactly 24, so its 16 bytes lie
 * inside it) and the highest end of any segment but __PAGEZERO (the
 * image's extent, measured from the header: __TEXT starts at file offset
 * 0, so at the header). Reads are memcpy from checked offsets: the bytes
 * may come from a file with any alignment. A malformed command chain
 * leaves nothing behind (*out zeroed).
 *
 * The extent of a library in the dyld shared cache reaches the cache's
 * shared __LINKEDIT, far past its own code: it bounds every segment, as
 * promised, but is no "which image holds pc" answer (__TEXT is).
 *
 * Must not: name an Apple API or header (tested on Linux), read past the
 * size it was given, or allocate.
 */
#include "platform/darwin/macho_ranges.h"

#include <string.h>

static uint32_t u32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v); /* Mach-O for arm64 and x86_64: little-endian */
  return v;
}

static uint64_t u64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

#define HEADER_64_SIZE 32u  /* struct mach_header_64 */
#define SEGMENT_64_SIZE 72u /* struct segment_command_64 */
#define SECTION_64_SIZE 80u /* struct section_64 */
#define DYLIB_CMD_SIZE 24u  /* struct dylib_command */
#define UUID_CMD_SIZE 24u   /* struct uuid_command: cmd, cmdsize, uuid[16] */
#define MAX_CMDS 100000u    /* more than any linker writes */

/* The __unwind_info section header of the __TEXT segment command c: its
   nsects headers must all lie inside the command. */
static void find_unwind_info(const unsigned char *c, uint32_t cmdsize,
                             snap__macho_info_t *out) {
  uint32_t nsects = u32(c + 64);
  if (nsects > (cmdsize - SEGMENT_64_SIZE) / SECTION_64_SIZE)
    return;
  for (uint32_t i = 0; i < nsects; i++) {
    const unsigned char *sec = c + SEGMENT_64_SIZE + i * SECTION_64_SIZE;
    if (memcmp(sec, "__unwind_info\0\0\0", 16) == 0 &&
        memcmp(sec + 16, "__TEXT\0\0\0\0\0\0\0\0\0\0", 16) == 0) {
      out->unwind_info_addr = u64(sec + 32);
      out->unwind_info_size = u64(sec + 40);
      return;
    }
  }
}

bool snap__macho_parse(const void *hdr, size_t size, snap__macho_info_t *out) {
  const unsigned char *b = hdr;
  memset(out, 0, sizeof *out);
  if (!b || size < HEADER_64_SIZE || u32(b) != SNAP__MH_MAGIC_64)
    return false;
  out->cputype = u32(b + 4);
  out->filetype = u32(b + 12);
  uint32_t ncmds = u32(b + 16), sizeofcmds = u32(b + 20);
  out->flags = u32(b + 24);
  if (ncmds > MAX_CMDS || sizeofcmds > size - HEADER_64_SIZE)
    return false;

  const unsigned char *cmds = b + HEADER_64_SIZE;
  size_t off = 0;
  uint64_t seg_end = 0; /* highest vmaddr + vmsize but __PAGEZERO's */
  for (uint32_t i = 0; i < ncmds; i++) {
    if (sizeofcmds - off < 8)
      goto malformed;
    const unsigned char *c = cmds + off;
    uint32_t cmd = u32(c), cmdsize = u32(c + 4);
    if (cmdsize < 8 || cmdsize > sizeofcmds - off)
      goto malformed;
    if (cmd == SNAP__LC_SEGMENT_64 && cmdsize >= SEGMENT_64_SIZE) {
      uint64_t vmaddr = u64(c + 24), vmsize = u64(c + 32);
      /* __PAGEZERO reserves the low 4 GiB of an executable's address space
         and maps nothing; a wrapped end is a corrupt command. */
      if (memcmp(c + 8, "__PAGEZERO\0\0\0\0\0\0", 16) != 0 &&
          vmsize <= UINT64_MAX - vmaddr && vmaddr + vmsize > seg_end)
        seg_end = vmaddr + vmsize;
      if (memcmp(c + 8, "__TEXT\0\0\0\0\0\0\0\0\0\0", 16) == 0) {
        out->text_vmaddr = vmaddr;
        out->text_vmsize = vmsize;
        find_unwind_info(c, cmdsize, out);
      }
    } else if (cmd == SNAP__LC_UUID && cmdsize == UUID_CMD_SIZE &&
               !out->has_uuid) {
      /* cmdsize is sizeof(struct uuid_command) exactly (<mach-o/loader.h>);
         dyld refuses an image whose LC_UUID says otherwise. */
      memcpy(out->uuid, c + 8, SNAP__MACHO_UUID_SIZE);
      out->has_uuid = true;
    } else if (cmd == SNAP__LC_ID_DYLIB && cmdsize > DYLIB_CMD_SIZE) {
      uint32_t name_off = u32(c + 8);
      if (name_off >= DYLIB_CMD_SIZE && name_off < cmdsize) {
        const char *name = (const char *)c + name_off;
        size_t max = cmdsize - name_off;
        const char *nul = memchr(name, '\0', max);
        out->install_name = name;
        out->install_name_len = nul ? (size_t)(nul - name) : max;
      }
    }
    off += cmdsize;
  }
  if (out->text_vmsize && seg_end > out->text_vmaddr)
    out->image_size = seg_end - out->text_vmaddr;
  return true;
malformed:
  /* Nothing read before the bad command is kept: a UUID from an image
     whose commands do not hold together names no build. */
  memset(out, 0, sizeof *out);
  return false;
}

static bool starts(const char *s, size_t len, const char *prefix) {
  size_t n = strlen(prefix);
  return len >= n && memcmp(s, prefix, n) == 0;
}

/* A system location: the OS's own directories, on a device or inside a
   simulator runtime (…/RuntimeRoot/System/…, …/RuntimeRoot/usr/lib/…). */
static bool system_path(const char *s, size_t len) {
  if (starts(s, len, "/usr/lib/") || starts(s, len, "/System/") ||
      starts(s, len, "/usr/libexec/"))
    return true;
  for (size_t i = 0; i + 13 <= len; i++)
    if (memcmp(s + i, "/RuntimeRoot/", 13) == 0)
      return true;
  return false;
}

enum snap__macho_origin snap__macho_origin(const snap__macho_info_t *info,
                                           const char *path) {
  if (info->filetype == SNAP__MH_EXECUTE)
    return SNAP__MACHO_APP;
  if (info->filetype == SNAP__MH_DYLINKER ||
      (info->flags & SNAP__MH_DYLIB_IN_CACHE))
    return SNAP__MACHO_SYSTEM;
  const char *n = info->install_name;
  size_t len = info->install_name_len;
  if (n && system_path(n, len))
    return SNAP__MACHO_SYSTEM;
  if (path && system_path(path, strlen(path)))
    return SNAP__MACHO_SYSTEM;
  if (n && (starts(n, len, "@rpath/") || starts(n, len, "@executable_path/") ||
            starts(n, len, "@loader_path/")))
    return SNAP__MACHO_APP;
  return SNAP__MACHO_UNKNOWN;
}

bool snap__macho_app_root(const char *exe_path, char *buf, size_t size) {
  if (!exe_path || !size)
    return false;
  size_t end = 0; /* length of the root, trailing '/' included */
  for (const char *p = exe_path; (p = strstr(p, ".app/")) != NULL; p++) {
    /* The outermost bundle: a path component ending in ".app". */
    if (p > exe_path && p[-1] != '/') {
      end = (size_t)(p - exe_path) + 5;
      break;
    }
  }
  if (!end) {
    const char *slash = strrchr(exe_path, '/');
    end = slash ? (size_t)(slash - exe_path) + 1 : 0;
  }
  if (end >= size)
    return false;
  memcpy(buf, exe_path, end);
  buf[end] = '\0';
  return true;
}
