/*
 * classify.c — Matrix's two-level classification of a lag: the innermost
 * 2 (l1) and 4 (l2) app frames of the main stack, as text keys.
 *
 * Owns: the key format. Must not: use addresses where a name exists (an
 * address changes with every launch; a key must group one lag across runs
 * and devices of one build).
 *
 * Format: "innermost|caller|..." of symbol names; an unnamed app frame is
 * "image+0xoffset" from the image's load address, which is stable per
 * build. No app frame at all: the innermost frames of any image instead
 * (a lag entirely in a system library still groups), prefixed "sys:".
 */
#include <stdio.h>
#include <string.h>

#include "lag/lag.h"

static size_t append(char *out, size_t size, size_t at, const char *text) {
  size_t len = strlen(text);
  if (at + len + 1 > size)
    return at;
  memcpy(out + at, text, len + 1);
  return at + len;
}

static size_t append_frame(char *out, size_t size, size_t at,
                           const snap_frame_t *f) {
  char buf[320];
  if (f->symbol)
    snprintf(buf, sizeof buf, "%s", f->symbol);
  else
    snprintf(buf, sizeof buf, "%s+0x%lx", f->image,
             (unsigned long)(f->pc - f->image_base));
  return append(out, size, at, buf);
}

void snap__classify(const snap_stack_t *s, int frames, char *out, size_t size) {
  if (size == 0)
    return;
  out[0] = '\0';
  int n = snap_stack_count(s);
  if (n == 0)
    return; /* no stack (it could not be sampled): no class */
  bool any_app = false;
  for (int i = 0; i < n && !any_app; i++)
    any_app = snap_stack_frame(s, i)->in_app;
  size_t at = any_app ? 0 : append(out, size, 0, "sys:");
  int taken = 0;
  for (int i = 0; i < n && taken < frames; i++) {
    const snap_frame_t *f = snap_stack_frame(s, i);
    if (any_app && !f->in_app)
      continue;
    if (taken)
      at = append(out, size, at, "|");
    at = append_frame(out, size, at, f);
    taken++;
  }
}
