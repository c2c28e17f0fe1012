/*
 * errors.c — snap_strerror, generated from the one error table in
 * stacksnap.h so codes and texts cannot drift apart.
 */
#include "stacksnap.h"

const char *snap_strerror(int code) {
  switch (code) {
#define SNAP__ERRNO_TEXT(name, value, text)                                    \
  case SNAP_##name: return text;
    SNAP_ERRNO_MAP(SNAP__ERRNO_TEXT)
#undef SNAP__ERRNO_TEXT
  }
  return "unknown error";
}
