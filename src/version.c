/*
 * version.c — snap_version: the version this library was built as.
 *
 * The string is SNAP_VERSION_STRING as the header said when the library
 * was compiled, so a caller compiled against another header can tell the
 * two apart. Nothing else; no state.
 */
#include "stacksnap.h"

const char *snap_version(void) { return SNAP_VERSION_STRING; }
