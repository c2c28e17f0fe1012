/*
 * errors.c — snap_strerror and snap_err_name, generated from the one error
 * table in stacksnap.h so codes, names and texts cannot drift apart.
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

const char *snap_err_name(int code) {
  switch (code) {
#define SNAP__ERRNO_NAME(name, value, text)                                    \
  case SNAP_##name: return "SNAP_" #name;
    SNAP_ERRNO_MAP(SNAP__ERRNO_NAME)
#undef SNAP__ERRNO_NAME
  }
  return "SNAP_EUNKNOWN";
}
