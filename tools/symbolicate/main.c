/*
 * main.c — stacksnap-symbolicate: names the frames of a report from a
 * stripped build, later, from the debug files of exactly that build.
 *
 *   stacksnap-symbolicate [--debug-dir DIR]... [--binary FILE]...
 *                         [--no-default-dirs] [--max-memory MIB]
 *                         [-o OUT.json] REPORT
 *
 * REPORT: a lag report (schema stacksnap.lag/2) or any JSON of the same
 * frame and image shape; "-" reads standard input. Without -o the named
 * report is printed as text (report_text.c); with -o it is written back
 * as JSON with the names filled in ("-o -": standard output). Each image
 * is named only from a file whose build id is the one the report recorded
 * (symbol_files.c says where it looks); what named each image, or why
 * nothing did, is in the output either way. Apple reports are not named
 * here: the text gives the atos lines to run on a Mac.
 *
 * The report is untrusted input (docs/security.md, "Reports as untrusted
 * input"): its build ids must be hex, a file it names by path is read
 * only when its build-id note is the image's, the files read whole stay
 * within --max-memory (default 4096 MiB), and the text output and every
 * message escape what a terminal would act on (text_escape.c).
 *
 * Exit status: 0 when the report was read and written (whether or not
 * every image could be named: the output says which were); 1 when the
 * report cannot be read, is not JSON, or not of the shape (the message
 * says which value), or the output cannot be written; 2 on bad usage.
 *
 * Owns: the command line, reading the report (at most
 * SNAP_JSON_DEFAULT_MAX_INPUT bytes) and writing the result. A program,
 * not the library: it may print, exit and ignore SIGPIPE (so a closed
 * pipe is a write error, exit 1, not a kill).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "report_names.h"
#include "report_text.h"
#include "symbol_files.h"
#include "text_escape.h"

#define MAX_LIST 64 /* --debug-dir and --binary each */

static int usage(void) {
  fprintf(stderr,
          "usage: stacksnap-symbolicate [--debug-dir DIR]... [--binary "
          "FILE]...\n"
          "                             [--no-default-dirs] [-o OUT.json] "
          "REPORT\n"
          "  --debug-dir DIR   a tree with DIR/.build-id/xx/rest.debug "
          "(repeatable)\n"
          "  --binary FILE     an unstripped or debug file to use for the "
          "image\n"
          "                    with its build id (repeatable)\n"
          "  --no-default-dirs do not look in /usr/lib/debug\n"
          "  --max-memory MIB  read symbol files of at most MIB MiB in all "
          "(default 4096)\n"
          "  -o OUT.json       write the report back as JSON, names filled "
          "in\n"
          "                    (- for standard output); default: text\n");
  return 2;
}

/* Reads all of in (at most max bytes). NULL with *why set when it cannot. */
static char *read_all(FILE *in, size_t max, size_t *len, const char **why) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      *why = "out of memory";
      return NULL;
    }
    size_t got = fread(buf + n, 1, cap - n, in);
    n += got;
    if (got == 0) {
      if (ferror(in)) {
        *why = strerror(errno);
        free(buf);
        return NULL;
      }
      *len = n;
      return buf;
    }
    if (n > max) {
      *why = "larger than the largest report read (64 MiB)";
      free(buf);
      return NULL;
    }
    if (n == cap) {
      cap *= 2;
      char *b = realloc(buf, cap);
      if (!b)
        free(buf);
      buf = b;
    }
  }
}

int main(int argc, char **argv) {
  const char *dirs[MAX_LIST], *bins[MAX_LIST];
  int n_dirs = 0, n_bins = 0;
  const char *report = NULL, *out_path = NULL;
  bool no_default = false;
  unsigned long long max_mib = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--debug-dir") == 0 && i + 1 < argc && n_dirs < MAX_LIST)
      dirs[n_dirs++] = argv[++i];
    else if (strcmp(a, "--binary") == 0 && i + 1 < argc && n_bins < MAX_LIST)
      bins[n_bins++] = argv[++i];
    else if (strcmp(a, "--no-default-dirs") == 0)
      no_default = true;
    else if (strcmp(a, "--max-memory") == 0 && i + 1 < argc) {
      char *end;
      errno = 0;
      max_mib = strtoull(argv[++i], &end, 10);
      if (errno || end == argv[i] || *end || max_mib == 0 ||
          max_mib > (1ULL << 40))
        return usage();
    } else if (strcmp(a, "-o") == 0 && i + 1 < argc && !out_path)
      out_path = argv[++i];
    else if ((a[0] != '-' || strcmp(a, "-") == 0) && !report)
      report = a;
    else
      return usage();
  }
  if (!report)
    return usage();
  signal(SIGPIPE, SIG_IGN);

  FILE *in = strcmp(report, "-") == 0 ? stdin : fopen(report, "rb");
  if (!in) {
    fprintf(stderr, "stacksnap-symbolicate: %s: %s\n", report, strerror(errno));
    return 1;
  }
  size_t len = 0;
  const char *why = NULL;
  char *text = read_all(in, SNAP_JSON_DEFAULT_MAX_INPUT, &len, &why);
  if (in != stdin)
    fclose(in);
  if (!text) {
    fprintf(stderr, "stacksnap-symbolicate: %s: %s\n", report, why);
    return 1;
  }
  snap_json_error_t err;
  snap_json_doc_t *doc = snap_json_parse(text, len, 0, &err);
  free(text);
  if (!doc) {
    char msg[4 * sizeof err.message];
    snap__text_escape(msg, sizeof msg, err.message, strlen(err.message));
    fprintf(stderr, "stacksnap-symbolicate: %s: not JSON: %s\n", report, msg);
    return 1;
  }

  snap__symfind_opts_t opts = {dirs,   n_dirs,     bins,
                               n_bins, no_default, max_mib << 20};
  snap__symfinder_t *finder = snap__symfinder_new(&opts);
  if (!finder) {
    fprintf(stderr, "stacksnap-symbolicate: out of memory\n");
    snap_json_free(doc);
    return 1;
  }
  snap__report_summary_t sum;
  char bad[512], shown[4 * sizeof bad];
  int rc = 0;
  if (snap__report_name(doc, finder, &sum, bad, sizeof bad) != 0) {
    /* The message names a place in the report, by its keys: escaped. */
    snap__text_escape(shown, sizeof shown, bad, strlen(bad));
    fprintf(stderr, "stacksnap-symbolicate: %s: %s\n", report, shown);
    rc = 1;
  }
  for (int i = 0; rc == 0; i++) {
    const char *unused = snap__symfinder_unused_binary(finder, i, &why);
    if (!unused)
      break;
    fprintf(stderr, "stacksnap-symbolicate: --binary %s not used: %s\n", unused,
            why);
  }
  if (rc == 0 && out_path) {
    FILE *out = strcmp(out_path, "-") == 0 ? stdout : fopen(out_path, "w");
    int werr = out ? snap_json_write_file(
                         snap_json_root(doc),
                         SNAP_JSON_PRETTY | SNAP_JSON_FINAL_NEWLINE, out)
                   : errno;
    if (out && out != stdout && fclose(out) != 0 && !werr)
      werr = errno;
    if (werr) {
      fprintf(stderr, "stacksnap-symbolicate: %s: %s\n", out_path,
              strerror(werr));
      rc = 1;
    }
  } else if (rc == 0 && snap__report_text(stdout, doc, &sum) != 0) {
    fprintf(stderr, "stacksnap-symbolicate: writing the text: %s\n",
            strerror(errno));
    rc = 1;
  }
  if (rc == 0)
    fprintf(stderr,
            "stacksnap-symbolicate: %zu frames, %zu named from %zu of %zu "
            "images\n",
            sum.frames, sum.named, sum.images_named, sum.images_used);
  snap__symfinder_free(finder);
  snap_json_free(doc);
  return rc;
}
