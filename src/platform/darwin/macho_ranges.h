/*
 * macho_ranges.h — what the image table needs from a Mach-O image's load
 * commands: its __TEXT range, where its __TEXT,__unwind_info section is,
 * its LC_UUID and extent (what names its build in a report), and whether
 * it belongs to the app or to the system.
 *
 * Pure: no Apple API and no Apple header (the constants are the documented
 * <mach-o/loader.h> values, spelled out here), so the parser is built and
 * tested on Linux against real Mach-O files linked with ld64.lld.
 */
#ifndef SNAP_PLATFORM_DARWIN_MACHO_RANGES_H
#define SNAP_PLATFORM_DARWIN_MACHO_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* <mach-o/loader.h> values used here. */
#define SNAP__MH_MAGIC_64 0xfeedfacfu
#define SNAP__MH_EXECUTE 0x2u
#define SNAP__MH_DYLIB 0x6u
#define SNAP__MH_DYLINKER 0x7u
#define SNAP__MH_BUNDLE 0x8u
#define SNAP__MH_DYLIB_IN_CACHE 0x80000000u
#define SNAP__LC_SEGMENT_64 0x19u
#define SNAP__LC_ID_DYLIB 0xdu
#define SNAP__LC_UUID 0x1bu
#define SNAP__MACHO_UUID_SIZE 16u /* uuid_command's uint8_t uuid[16] */

typedef struct snap__macho_info {
  uint32_t cputype, filetype, flags;
  uint64_t text_vmaddr;      /* __TEXT as linked (add the slide when loaded) */
  uint64_t text_vmsize;      /* 0 if the image has no __TEXT segment */
  uint64_t unwind_info_addr; /* __TEXT,__unwind_info as linked, 0 if none */
  uint64_t unwind_info_size;
  const char *install_name; /* LC_ID_DYLIB inside the parsed bytes, or NULL */
  size_t install_name_len;
  /* The image's extent from its header (the start of __TEXT): the highest
     end, vmaddr + vmsize, of any segment but __PAGEZERO, minus
     text_vmaddr. 0 if there is no __TEXT. */
  uint64_t image_size;
  /* LC_UUID's bytes (the first LC_UUID of the right size), the key
     of the image's dSYM; has_uuid false if the image has none. */
  bool has_uuid;
  uint8_t uuid[SNAP__MACHO_UUID_SIZE];
} snap__macho_info_t;

/* Parses the 64-bit Mach-O header and load commands at hdr, of which only
   [hdr, hdr + size) is read: sizeofcmds and every cmdsize are checked
   against it, never trusted. Returns false for anything that is not a
   well-formed little-endian 64-bit image. [signal-safe] */
bool snap__macho_parse(const void *hdr, size_t size, snap__macho_info_t *out);

enum snap__macho_origin {
  SNAP__MACHO_UNKNOWN = 0, /* decide by path (the app-prefix rule) */
  SNAP__MACHO_APP = 1,
  SNAP__MACHO_SYSTEM = 2
};

/* App or system from what the image says of itself and where it was loaded
   from (path may be NULL):
   - the main executable (MH_EXECUTE) is the app;
   - the dynamic linker, anything in the dyld shared cache
     (MH_DYLIB_IN_CACHE), and any library whose install name or path is under
     /usr/lib/, /System/ or a simulator runtime root is the system;
   - a library installed as @rpath/, @executable_path/ or @loader_path/ is
     embedded in its app;
   - anything else is unknown. */
enum snap__macho_origin snap__macho_origin(const snap__macho_info_t *info,
                                           const char *path);

/* The directory whose tree is "the app" for the main executable at
   exe_path, with a trailing '/': the outermost "<name>.app/" bundle (iOS
   device and simulator: App.app/App; macOS: App.app/Contents/MacOS/App; an
   extension inside an app counts as that app), else the executable's
   directory. False if it does not fit in size. */
bool snap__macho_app_root(const char *exe_path, char *buf, size_t size);

#endif /* SNAP_PLATFORM_DARWIN_MACHO_RANGES_H */
