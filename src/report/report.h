/*
 * report.h — the one writer of the library's files and JSON (src/report/).
 *
 * Every file the library writes (lag reports, the trace beside a report,
 * snap_trace_write's file, the report directory's write probe) is written
 * by files.c, and every JSON text is built in text_buf.c's buffer with its
 * one escaping rule. docs/security.md is the threat model these keep:
 * whoever can write the directory may plant links, FIFOs and devices in
 * it, and the library never writes through them, never replaces them,
 * never hangs on them, never deletes a name it does not write, and makes
 * what it writes readable by the owner only unless told otherwise.
 *
 * Must not: name an OS API (platform/ does: the files part of platform.h);
 * run in the stopped window (everything here may block and allocate).
 */
#ifndef SNAP_REPORT_H
#define SNAP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "platform/platform.h"
#include "stacksnap.h"

/* ---- Files (files.c) ----------------------------------------------------- */

/* Owner read and write: the default of every file the library writes. */
#define SNAP__REPORT_MODE 0600u

/* A mode a caller may choose for its files: owner read and write always,
   group and others read or write at most (no execute, no set-id, no
   sticky bit). */
bool snap__report_mode_ok(unsigned mode);
/* The mode of a directory made for files of `mode`: search (x) wherever
   the files are readable. 0600 gives 0700, 0640 gives 0750. */
unsigned snap__report_dir_mode(unsigned file_mode);

/* Creates dir and its missing parents with snap__report_dir_mode(mode);
   an existing directory is left as it is. SNAP_OK, SNAP_EINVAL, SNAP_EIO. */
int snap__report_dir_make(const char *dir, unsigned mode);
/* Calls cb for every entry of dir but "." and "..". SNAP_OK, SNAP_EIO. */
int snap__report_dir_list(const char *dir,
                          void (*cb)(const char *name, void *ctx), void *ctx);

/* Replaces dir/name with data, atomically: at every instant the name holds
   the old content or the new (design rule 5). The data goes to a new temp
   file "." name "." 16 random hex digits ".tmp", created exclusively
   (never through a link, never opening what is there) with exactly `mode`;
   it is fsync'd and renamed over name, and dir is fsync'd. name is one
   path component. When something other than a regular file (a FIFO, a
   symlink, a device, a directory) is at dir/name it is left alone:
   SNAP_ENOTREG. SNAP_OK; SNAP_EINVAL (a bad name or mode); SNAP_EIO:
   nothing replaced, except when only the final fsync of dir failed (the
   new file is in place but may not survive a power cut; writing it again
   is safe). */
int snap__report_replace(const char *dir, const char *name, const void *data,
                         size_t n, unsigned mode);
/* Reads dir/name whole into a malloc'ed, NUL-terminated buffer (*n without
   the NUL), only if it is a regular file: a symlink or a FIFO is never
   followed or waited on (SNAP_ENOTREG). SNAP_OK, SNAP_EIO (also above max
   bytes), SNAP_ENOMEM, SNAP_ENOTREG. */
int snap__report_read(const char *dir, const char *name, size_t max,
                      char **data, size_t *n);
/* Removes the name dir/name (a link itself, never its target). SNAP_OK,
   also when it did not exist; SNAP_EIO. Callers pass only names they
   write (snap__report_ms_prefix, snap__report_temp_of). */
int snap__report_remove(const char *dir, const char *name);
/* Can dir take a file? Writes and fsyncs a temp file "." "probe" "."
   hex ".tmp" and removes it. SNAP_OK or SNAP_EIO. */
int snap__report_probe(const char *dir, unsigned mode);
/* How long the calling thread has spent in the calls above but the listing,
   wall time: waits on the disk (an fsync behind a busy journal), the
   caller's own doing, which a watchdog must not take for a stopped
   process. A stop that lands inside one of them counts as disk time. */
uint64_t snap__report_waited_ns(void);

/* ---- Names (names.c) ----------------------------------------------------- */

/* The names the library writes start with a date, "<ms>-": ms in decimal
   exactly as "%" PRId64 prints it (no sign, no leading zero, no space), so
   that a name is ours only if printing its date gives it back. Returns
   the length of "<ms>" (the '-' follows) and sets *ms, or 0 when name does
   not start so ("0001-hang.json", "-1-lag.json", "1x-lag.json"). */
size_t snap__report_ms_prefix(const char *name, int64_t *ms);
/* When name is a temp file of replace or probe (".X.<16 hex>.tmp"): true,
   with X in inner[size]. Only this exact shape: retention never removes a
   dot-file it did not make. */
bool snap__report_temp_of(const char *name, char *inner, size_t size);

/* ---- A growable text buffer and its JSON (text_buf.c) -------------------- */

typedef struct snap__tbuf {
  char *p;
  size_t len, cap;
  bool failed; /* an allocation failed: the text is incomplete */
} snap__tbuf_t;
void snap__tbuf_put(snap__tbuf_t *b, const void *s, size_t n);
void snap__tbuf_puts(snap__tbuf_t *b, const char *s);
void snap__tbuf_printf(snap__tbuf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A JSON string literal, quotes included: escapes what JSON requires and
   replaces bytes that are not UTF-8 with U+FFFD. The one rule for every
   string the library writes into JSON (lag reports, Trace Event JSON). */
void snap__tbuf_json_string(snap__tbuf_t *b, const char *s);
/* The length of the well-formed UTF-8 sequence at s (1..4; no overlong
   form, surrogate or code point above U+10FFFF), 0 when s does not start
   one (a NUL terminator counts as 1). */
size_t snap__utf8_len(const unsigned char *s);
/* Where s starts no well-formed sequence: how many bytes one U+FFFD
   replaces (Unicode's maximal subpart: those of a sequence cut short, or
   the one byte that starts none), >= 1. */
size_t snap__utf8_bad_len(const unsigned char *s);
/* s as text: appended with each maximal subpart that is not UTF-8
   replaced by U+FFFD; snap__utf8_clean_len is the length that appends. */
void snap__tbuf_text(snap__tbuf_t *b, const char *s);
size_t snap__utf8_clean_len(const char *s);
void snap__tbuf_free(snap__tbuf_t *b);

#endif
