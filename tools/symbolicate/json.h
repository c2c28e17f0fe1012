/*
 * json.h — the JSON reader and writer of stacksnap-symbolicate: a report
 * (possibly hostile) in, a tree to read and amend, the same report out.
 *
 * Owns: the program's view of a report: strict RFC 8259 parsing (yyjson
 * 0.10.0, third_party/yyjson, with numbers kept as their text), read
 * access, the few edits the program makes (set a member, append to an
 * array) and serialisation to a growing buffer or a FILE * through the
 * library's one JSON string rule (src/report/text_buf.c).
 * Must not: crash, recurse on input, or accept what RFC 8259 rejects on
 * any input; print. Errors are values: NULL with a message, false, or an
 * errno from the writers.
 *
 * Why yyjson and not our own (issue 27): the tool is offline, no
 * signal-safety rule keeps it hand-written, and yyjson's raw-number mode
 * keeps 64-bit addresses exact, which is what our 1 324-line parser
 * existed for. Numbers keep their source text, so 64-bit addresses and
 * floats are written back unchanged.
 *
 * Not thread-safe per document: one thread reads or edits a document at a
 * time (distinct documents are independent).
 */
#ifndef SNAP_TOOLS_JSON_H
#define SNAP_TOOLS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The largest input snap_json_parse reads when the caller passes 0.
   Memory peaks in the worst case, an array of one-digit numbers: yyjson's
   16-byte value and its mutable copy's 32-byte node per two input bytes,
   plus the numbers' copied text (measured: 738 MiB of peak RSS for
   32 MiB), so a hostile input at this default can take ~1.5 GiB; a caller that
   cannot afford that passes a smaller maximum. A real report (mostly strings)
   takes a few times its size. */
#define SNAP_JSON_DEFAULT_MAX_INPUT ((size_t)64 << 20)
/* A hard ceiling on any caller's maximum: counts inside are 32-bit. */
#define SNAP_JSON_MAX_INPUT_CEILING ((size_t)1 << 30)
/* Arrays and objects nested deeper than this are refused (a report nests
   about 6 deep), by a scan before yyjson's reader (which does not
   recurse); the writer recurses at most this deep plus the program's own
   few levels. */
#define SNAP_JSON_MAX_DEPTH 256

typedef enum snap_json_type {
  SNAP_JSON_NULL,
  SNAP_JSON_BOOL,
  SNAP_JSON_NUMBER,
  SNAP_JSON_STRING,
  SNAP_JSON_ARRAY,
  SNAP_JSON_OBJECT,
} snap_json_type_t;

/* A document owns every node in it; nodes never move (an append or a set
   keeps pointers to other nodes valid) and are freed with the document. */
typedef struct snap_json_doc snap_json_doc_t;
typedef struct snap_json snap_json_t;

/* Why a parse failed. offset is the byte where the problem was seen; line
   and col are 1-based (col counts bytes); message is
   "line L col C (byte B): reason", NUL-terminated. */
typedef struct snap_json_error {
  size_t offset, line, col;
  char message[160];
} snap_json_error_t;

/* "yyjson 0.10.0": what reads the reports (for --version). */
const char *snap_json_reader_version(void);

/* ---- Documents --------------------------------------------------------- */

/* Parses len bytes of text (not NUL-terminated; a NUL byte anywhere is an
   error). max_input: the largest len accepted, 0 for
   SNAP_JSON_DEFAULT_MAX_INPUT (clamped to SNAP_JSON_MAX_INPUT_CEILING).
   Strict RFC 8259: one value with optional whitespace around it; no
   comments, trailing commas, NaN/Infinity, leading zeros, byte order mark,
   raw control characters in strings, invalid UTF-8 (overlong, surrogates,
   beyond U+10FFFF) or \u escapes that leave a lone surrogate.
   The document keeps no pointer into text (free it at will). Nodes are at
   most len (each takes at least one input byte).
   Returns the document, or NULL with *err filled (err may be NULL). */
snap_json_doc_t *snap_json_parse(const char *text, size_t len, size_t max_input,
                                 snap_json_error_t *err);
/* A new document whose root is null (assign it to build from scratch).
   NULL when out of memory. */
snap_json_doc_t *snap_json_doc_new(void);
/* Frees the document and every node and string in it. NULL is fine. */
void snap_json_free(snap_json_doc_t *doc);
snap_json_t *snap_json_root(const snap_json_doc_t *doc);

/* ---- Reading ------------------------------------------------------------ */
/* Every accessor takes NULL or a node of the wrong type and answers
   "absent" (NULL, 0 or false), so chains like
   snap_json_get(snap_json_get(root, "a"), "b") need no check between. */

snap_json_type_t
snap_json_type(const snap_json_t *v); /* NULL: SNAP_JSON_NULL */
bool snap_json_is(const snap_json_t *v, snap_json_type_t type); /* v && type */
/* "null", "bool", "number", "string", "array", "object": for messages. */
const char *snap_json_type_name(snap_json_type_t type);

/* Members of an object or elements of an array; 0 for anything else. */
size_t snap_json_count(const snap_json_t *v);
/* Element i of an array, or NULL. */
snap_json_t *snap_json_at(const snap_json_t *array, size_t i);
/* Member i of an object (source order, duplicates kept): its value, and its
   key through *key / *key_len when not NULL (NUL-terminated, may hold NUL).
   NULL when out of range or not an object. */
snap_json_t *snap_json_member(const snap_json_t *object, size_t i,
                              const char **key, size_t *key_len);
/* The value of the first member named key, or NULL. Linear in the members. */
snap_json_t *snap_json_get(const snap_json_t *object, const char *key);
snap_json_t *snap_json_get_n(const snap_json_t *object, const char *key,
                             size_t key_len);

/* A string's bytes (valid UTF-8; NUL-terminated, and may hold NUL from
   \u0000: use *len), or NULL when v is not a string. len may be NULL. */
const char *snap_json_string(const snap_json_t *v, size_t *len);
/* A bool's value into *out; false when v is not a bool. */
bool snap_json_bool(const snap_json_t *v, bool *out);
/* A number's source text, exactly as read (NUL-terminated), or NULL. */
const char *snap_json_number_text(const snap_json_t *v, size_t *len);
/* A number as an exact integer: true only when its text has integer syntax
   (no fraction, no exponent: Python reads 1.0 and 1e3 as floats too) and
   the value fits. */
bool snap_json_int64(const snap_json_t *v, int64_t *out);
bool snap_json_uint64(const snap_json_t *v, uint64_t *out);
/* A number as the nearest double (locale-independent); false when not a
   number or when its magnitude overflows a double (1e400). Underflow gives
   the rounded value (0 or a subnormal), as Python does. */
bool snap_json_double(const snap_json_t *v, double *out);

/* ---- Editing ------------------------------------------------------------ */
/* Values are only ever created fresh inside a container (or at the root),
   so a document stays a tree: no node has two parents, no cycle. Each
   function returns the node set or appended, or NULL (out of memory, or
   obj/array is not of that type: nothing changed then). Strings are copied
   as given; bytes that are not UTF-8 are written out as \ufffd. */

/* Sets member key of obj to a fresh null: the first member with that key
   gets the new value (its place in the order kept), else a member is
   appended. Assign the value with the functions below. */
snap_json_t *snap_json_set(snap_json_doc_t *doc, snap_json_t *obj,
                           const char *key);
snap_json_t *snap_json_set_string(snap_json_doc_t *doc, snap_json_t *obj,
                                  const char *key, const char *s, size_t len);
snap_json_t *snap_json_set_int64(snap_json_doc_t *doc, snap_json_t *obj,
                                 const char *key, int64_t value);
snap_json_t *snap_json_set_uint64(snap_json_doc_t *doc, snap_json_t *obj,
                                  const char *key, uint64_t value);
snap_json_t *snap_json_set_bool(snap_json_doc_t *doc, snap_json_t *obj,
                                const char *key, bool value);
snap_json_t *snap_json_set_null(snap_json_doc_t *doc, snap_json_t *obj,
                                const char *key);
snap_json_t *snap_json_set_object(snap_json_doc_t *doc, snap_json_t *obj,
                                  const char *key);
snap_json_t *snap_json_set_array(snap_json_doc_t *doc, snap_json_t *obj,
                                 const char *key);
/* Appends a fresh null to array and returns it. */
snap_json_t *snap_json_append(snap_json_doc_t *doc, snap_json_t *array);

/* Turn node v (of doc) into a value in place; a container's old contents
   are dropped. Return false only when out of memory (v unchanged). */
bool snap_json_assign_string(snap_json_doc_t *doc, snap_json_t *v,
                             const char *s, size_t len);
bool snap_json_assign_int64(snap_json_doc_t *doc, snap_json_t *v,
                            int64_t value);
bool snap_json_assign_uint64(snap_json_doc_t *doc, snap_json_t *v,
                             uint64_t value);
void snap_json_assign_bool(snap_json_t *v, bool value);
void snap_json_assign_null(snap_json_t *v);
void snap_json_assign_object(snap_json_t *v); /* empty */
void snap_json_assign_array(snap_json_t *v);  /* empty */

/* ---- Writing ------------------------------------------------------------ */

/* Flags of the writers. Compact: no whitespace at all. Pretty: 2-space
   indent, "key": value, one member or element a line, [] and {} when empty
   (Python's json.dumps(indent=2, ensure_ascii=False) layout; its strings
   differ only in writing \n, \t, \r, \b, \f as \u00XX). */
#define SNAP_JSON_PRETTY 1u
#define SNAP_JSON_FINAL_NEWLINE 2u /* end the text with "\n" */

/* Serialises v (and all below it) into a malloc'd, NUL-terminated text,
   its length in *len (may be NULL). NULL when out of memory. The caller
   frees it with free(). The text is always valid JSON, by the library's
   one string rule (snap__tbuf_json_string): '"' and '\\' escaped, control
   characters as \u00XX, valid UTF-8 kept as is, each maximal subpart that
   is not UTF-8 as \ufffd. NULL also past SNAP_JSON_MAX_DEPTH + 16 levels
   (edits can only nest so far by hand). */
char *snap_json_write_string(const snap_json_t *v, unsigned flags, size_t *len);
/* The same text into f, then fflush(f). Returns 0, or the errno of the
   failed write or flush (ENOSPC for a full disk, EPIPE for a closed pipe
   when SIGPIPE is ignored; EIO when the stream gave none), or ENOMEM. A
   caller writing a file still checks fclose. */
int snap_json_write_file(const snap_json_t *v, unsigned flags, FILE *f);

#endif
