/*
 * report_text.h — a named report as text a person reads.
 */
#ifndef SNAP_TOOLS_REPORT_TEXT_H
#define SNAP_TOOLS_REPORT_TEXT_H

#include <stdarg.h>
#include <stdio.h>

#include "json.h"
#include "report_names.h"

/* Writes doc (after snap__report_name) to f: a header, every stack, the
   images and what named each, and for an Apple report the atos lines.
   0, or -1 when a write failed. */
int snap__report_text(FILE *f, const snap_json_doc_t *doc,
                      const snap__report_summary_t *summary);

#endif
