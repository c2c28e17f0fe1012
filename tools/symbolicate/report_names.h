/*
 * report_names.h — names the frames of a report document: the images it
 * lists, every frame under them, checked and then filled in.
 */
#ifndef SNAP_TOOLS_REPORT_NAMES_H
#define SNAP_TOOLS_REPORT_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "json.h"
#include "symbol_files.h"

/* Limits on what a report may hold (a real one has tens of images and a
   few thousand frames). */
#define SNAP__REPORT_MAX_IMAGES 65536
#define SNAP__REPORT_MAX_FRAMES 4000000

typedef struct snap__report_summary {
  bool apple;         /* "os":"darwin": frames are named on a Mac (atos) */
  size_t frames;      /* frames in the report */
  size_t in_image;    /* of them, in a listed image */
  size_t named;       /* named from a file here (function found) */
  size_t with_line;   /* of them, with file:line */
  size_t images_used; /* images some frame points into */
  size_t images_named;
} snap__report_summary_t;

/* Checks the report's shape (an object with an "images" array of
   {name, path, base, size, build_id}; every object with a "pc" under it is
   a frame: a hex pc, and where the report gives one an image_offset of pc
   minus its image's base), then names every frame in a listed image from
   the files finder finds by build id (finder NULL: finds nothing, for the
   fuzzer), in place:
     frame: symbol, symbol_offset, offset (schema 1's meaning), and
            source_file / source_line when a line table has them; a frame
            whose image no file names keeps what the report said;
     image: "symbols": what named it, or why nothing did.
   A frame at index > 0 of its array is a return address: it is named by
   the byte before it (the call), as the library names it; frame 0 is the
   exact pc.
   Returns 0, or -1 with why[] saying which value is wrong ("images[3].base:
   not a hex string") or that memory ran out; the document may then be
   partly named. */
int snap__report_name(snap_json_doc_t *doc, snap__symfinder_t *finder,
                      snap__report_summary_t *summary, char *why,
                      size_t why_size);

/* A pc string "0x..." (1 to 16 hex digits) into *out. */
bool snap__parse_hex(const char *s, size_t len, unsigned long long *out);

#endif
