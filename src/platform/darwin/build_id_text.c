/*
 * build_id_text.c — an Apple image's build id (its LC_UUID) as Apple's own
 * tools print it.
 *
 * A 16-byte id is a UUID and is written in the byte order it is stored,
 * grouped 8-4-4-4-12, uppercase: `dwarfdump --uuid`, atos, the Binary
 * Images of a crash log and Spotlight's com_apple_xcode_dsym_uuids (what
 * `mdfind` finds a dSYM by) all spell it so (docs/apple.md, [U2]). Any
 * other length is not a UUID Apple's tools know: plain lowercase hex, the
 * generic form.
 *
 * Pure (no Apple API or header): tested on Linux by test_macho_uuid.
 * Must not: write past size, or leave a truncated id behind — an id that
 * does not fit is written as "" (a prefix would name another build).
 */
#include "platform/platform.h"

#include <string.h>

void snap__plat_build_id_text(const uint8_t *id, size_t len, char *out,
                              size_t size) {
  static const char upper[] = "0123456789ABCDEF";
  static const char lower[] = "0123456789abcdef";
  if (!out || size == 0)
    return;
  out[0] = '\0';
  if (!id || len == 0)
    return;
  bool uuid = len == 16;
  size_t need = 2 * len + (uuid ? 4 : 0) + 1; /* 4 dashes, the NUL */
  if (size < need)
    return;
  const char *digits = uuid ? upper : lower;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (uuid && (i == 4 || i == 6 || i == 8 || i == 10))
      out[o++] = '-';
    out[o++] = digits[id[i] >> 4];
    out[o++] = digits[id[i] & 0xf];
  }
  out[o] = '\0';
}
