/*
 * main.c — stacksnap-symbolicate: names the frames of reports from a
 * stripped build, later, from the debug files of exactly that build.
 *
 *   stacksnap-symbolicate [OPTIONS] REPORT|DIR|- ...
 *
 * REPORT: a lag report (schema stacksnap.lag/2) or any JSON of the same
 * frame and image shape; DIR: every *.json file directly in it (sorted by
 * name; not its subdirectories); "-": standard input (once). Without -o
 * each named report is printed as text (report_text.c; with more than one,
 * each after a "==> NAME <==" line); with -o it is written back as JSON
 * with the names filled in: -o FILE (or "-" for standard output) when the
 * run has one report named as a file, else -o DIR, an existing directory
 * that gets each report under its own file name (a run of many reports
 * with -o FILE or -o - is refused: usage). Each image is named only from a
 * file whose build id is the one the report recorded (symbol_files.c says
 * where it looks); what named each image, or why nothing did, is in the
 * output either way. Apple reports are not named here: the text gives the
 * atos lines to run on a Mac.
 *
 * Per report, one line on standard error says what happened: "named"
 * (frames and images named), "skipped" (a file of a directory that is not
 * a regular file, or is JSON but not a report: a directory may hold other
 * JSON) or "failed" (cannot be read, not JSON, not a report when named
 * explicitly, not of the shape, output not written), with the reason.
 *
 * Writing -o FILE is atomic: a temporary file beside it, created with
 * O_EXCL|O_NOFOLLOW|O_CLOEXEC and mode 0600, written, fsync'ed and renamed
 * over FILE (then the directory fsync'ed): FILE is the old or the new
 * report, never a part; a symlink at FILE is replaced, not followed.
 *
 * The reports are untrusted input (docs/security-cli.md): their build ids
 * must be hex, a file one names by path is read only when its build-id
 * note is the image's, the files read whole stay within --max-memory
 * (default 4096 MiB), and the text output and every message escape what a
 * terminal would act on (text_escape.c), file names from a directory too.
 *
 * Exit status: 0 when every report was named or skipped (whether or not
 * every image could be named: the output says which were); 1 when any
 * failed; 2 on bad usage (the message says which mistake), before any
 * report is read.
 *
 * Owns: the command line, the list of reports, reading each (at most
 * SNAP_JSON_DEFAULT_MAX_INPUT bytes) and writing the results. A program,
 * not the library: it may print, exit and ignore SIGPIPE (so a closed
 * pipe is a write error, exit 1, not a kill).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_NOFOLLOW, getrandom, asprintf */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf_lines.h"
#include "json.h"
#include "report_names.h"
#include "report_text.h"
#include "stacksnap.h"
#include "symbol_files.h"
#include "text_escape.h"

#define PROG "stacksnap-symbolicate"
#define MAX_LIST 64 /* --debug-dir and --binary each */

static const char USAGE[] =
    "usage: " PROG " [OPTIONS] REPORT|DIR|- ...\n"
    "Names the frames of stacksnap reports from the debug files of the\n"
    "build that wrote them (matched by GNU build id).\n"
    "\n"
    "  REPORT            a report (JSON); - reads standard input\n"
    "  DIR               every *.json file directly in DIR\n"
    "  --debug-dir DIR   a tree with DIR/.build-id/xx/rest.debug "
    "(repeatable)\n"
    "  --binary FILE     an unstripped or debug file to use for the image\n"
    "                    with its build id (repeatable)\n"
    "  --no-default-dirs do not look in /usr/lib/debug\n"
    "  --max-memory MIB  read symbol files of at most MIB MiB in all\n"
    "                    (default 4096)\n"
    "  -o OUT            write each report back as JSON, names filled in:\n"
    "                    a file (- for standard output) for one report,\n"
    "                    an existing directory for several; default: text\n"
    "  -h, --help        this text\n"
    "  --version         the versions of stacksnap, yyjson and libdw\n"
    "\n"
    "Per report, standard error says: named, skipped (with why) or failed\n"
    "(with why). Exit status: 0 none failed, 1 some failed, 2 bad usage.\n";

/* A usage mistake: the message, a pointer to --help, exit 2. */
static int usage_error(const char *fmt, const char *arg) {
  char shown[1024];
  snap__text_escape(shown, sizeof shown, arg ? arg : "", arg ? strlen(arg) : 0);
  fprintf(stderr, PROG ": ");
  fprintf(stderr, fmt, shown);
  fprintf(stderr, " (see " PROG " --help)\n");
  return 2;
}

/* ---- The reports of the run --------------------------------------------- */

typedef struct item {
  char *path;    /* as given, or DIR/name */
  bool from_dir; /* found in a directory: non-reports are skipped */
} item_t;

typedef struct list {
  item_t *v;
  size_t n, cap;
} list_t;

static bool push(list_t *l, char *path, bool from_dir) {
  if (!path)
    return false;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    item_t *v = realloc(l->v, cap * sizeof *v);
    if (!v) {
      free(path);
      return false;
    }
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = (item_t){path, from_dir};
  return true;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.json names directly in dir, sorted, appended to l. -1 with errno
   when the directory cannot be read. */
static int list_dir(const char *dir, list_t *l) {
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0 ||
        e->d_name[0] == '.')
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      char **v = realloc(names, cap * sizeof *v);
      if (!v) {
        rc = -1;
        errno = ENOMEM;
        break;
      }
      names = v;
    }
    if (!(names[n] = strdup(e->d_name))) {
      rc = -1;
      errno = ENOMEM;
      break;
    }
    n++;
  }
  closedir(d);
  if (n)
    qsort(names, n, sizeof *names, by_name);
  size_t dl = strlen(dir);
  bool slash = dl && dir[dl - 1] == '/';
  for (size_t i = 0; i < n; i++) {
    char *p = NULL;
    if (rc == 0 &&
        asprintf(&p, "%s%s%s", dir, slash ? "" : "/", names[i]) < 0) {
      p = NULL;
      errno = ENOMEM;
    }
    if (rc == 0 && !push(l, p, true))
      rc = -1;
    free(names[i]);
  }
  free(names);
  return rc;
}

/* ---- Reading ------------------------------------------------------------ */

/* Reads all of fd (at most max bytes). NULL with *why set when it cannot. */
static char *read_all(int fd, size_t max, size_t *len, const char **why) {
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      *why = "out of memory";
      return NULL;
    }
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      *why = strerror(errno);
      free(buf);
      return NULL;
    }
    n += (size_t)got;
    if (got == 0) {
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

/* Opens a report. A file found in a directory must be a regular file
   (stat first, O_NONBLOCK: a FIFO there cannot hang the run); one named on
   the command line may be a pipe (<(...)). -1 with why, and *skip when it
   is a directory's non-regular file. */
static int open_report(const item_t *it, char *why, size_t why_size,
                       bool *skip) {
  *skip = false;
  if (strcmp(it->path, "-") == 0 && !it->from_dir)
    return STDIN_FILENO;
  struct stat st;
  if (it->from_dir && (stat(it->path, &st) != 0 || !S_ISREG(st.st_mode))) {
    snprintf(why, why_size, "not a regular file");
    *skip = true;
    return -1;
  }
  int fd = open(it->path, O_RDONLY | O_NOCTTY | O_CLOEXEC |
                              (it->from_dir ? O_NONBLOCK : 0));
  if (fd < 0) {
    snprintf(why, why_size, "cannot open: %s", strerror(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode) ||
      (it->from_dir && !S_ISREG(st.st_mode))) {
    snprintf(why, why_size, "%s",
             S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
    *skip = it->from_dir;
    close(fd);
    return -1;
  }
  return fd;
}

/* ---- Writing -o atomically ---------------------------------------------- */

/* Writes root to target through a temporary file in its directory (see
   the head comment). 0, or -1 with why. */
static int write_atomic(const char *target, const snap_json_t *root, char *why,
                        size_t why_size) {
  const char *slash = strrchr(target, '/');
  const char *base = slash ? slash + 1 : target;
  char dir[4096], tmp[4096 + 64];
  if (slash) {
    size_t dl = slash == target ? 1 : (size_t)(slash - target);
    if (dl >= sizeof dir) {
      snprintf(why, why_size, "path too long");
      return -1;
    }
    memcpy(dir, target, dl);
    dir[dl] = '\0';
  } else {
    strcpy(dir, ".");
  }
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
    unsigned char r[6];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
      snprintf(why, why_size, "getrandom: %s", strerror(errno));
      return -1;
    }
    snprintf(tmp, sizeof tmp, "%s/.%.200s.%02x%02x%02x%02x%02x%02x.tmp", dir,
             base, r[0], r[1], r[2], r[3], r[4], r[5]);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) {
      snprintf(why, why_size, "cannot create a temporary file in %s: %s", dir,
               strerror(errno));
      return -1;
    }
  }
  if (fd < 0) {
    snprintf(why, why_size, "no free temporary name in %s", dir);
    return -1;
  }
  FILE *out = fdopen(fd, "w");
  int err = out ? snap_json_write_file(
                      root, SNAP_JSON_PRETTY | SNAP_JSON_FINAL_NEWLINE, out)
                : errno;
  if (!err && fsync(fd) != 0)
    err = errno;
  if (out ? fclose(out) != 0 && !err : close(fd) != 0 && !err)
    err = errno;
  if (!err && rename(tmp, target) != 0)
    err = errno;
  if (err) {
    unlink(tmp);
    snprintf(why, why_size, "cannot write %s: %s", target, strerror(err));
    return -1;
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)fsync(dfd); /* the rename itself to disk; best effort */
    close(dfd);
  }
  return 0;
}

/* ---- One report --------------------------------------------------------- */

enum { NAMED, SKIPPED, FAILED };

typedef struct run {
  snap__symfinder_t *finder;
  const char *out; /* -o, or NULL */
  bool out_dir;    /* -o names a directory */
  bool many;       /* more than one report may come: headers */
  list_t written;  /* outputs written so far (-o DIR) */
} run_t;

/* Says what happened to the report at path: "named: ...", "skipped: why",
   "failed: why", escaped. */
static void say(const char *path, const char *what, const char *detail) {
  char p[1024], d[2048];
  snap__text_escape(p, sizeof p, path, strlen(path));
  snap__text_escape(d, sizeof d, detail, strlen(detail));
  fprintf(stderr, PROG ": %s: %s: %s\n", strcmp(path, "-") ? p : "(stdin)",
          what, d);
}

static int one(run_t *run, const item_t *it) {
  char why[1024];
  bool skip;
  int fd = open_report(it, why, sizeof why, &skip);
  if (fd < 0) {
    say(it->path, skip ? "skipped" : "failed", why);
    return skip ? SKIPPED : FAILED;
  }
  size_t len = 0;
  const char *rwhy = NULL;
  char *text = read_all(fd, SNAP_JSON_DEFAULT_MAX_INPUT, &len, &rwhy);
  if (fd != STDIN_FILENO)
    close(fd);
  if (!text) {
    say(it->path, "failed", rwhy);
    return FAILED;
  }
  snap_json_error_t err;
  snap_json_doc_t *doc = snap_json_parse(text, len, 0, &err);
  free(text);
  if (!doc) {
    /* A *.json that is not JSON is a broken file, wherever it is. */
    snprintf(why, sizeof why, "not JSON: %s", err.message);
    say(it->path, "failed", why);
    return FAILED;
  }
  /* A report is an object with an array of images; other JSON in a
     directory (a trace, a config) is skipped, named explicitly it fails. */
  snap_json_t *root = snap_json_root(doc);
  if (!snap_json_is(snap_json_get(root, "images"), SNAP_JSON_ARRAY)) {
    snprintf(why, sizeof why, "not a stacksnap report (%s)",
             snap_json_is(root, SNAP_JSON_OBJECT) ? "no \"images\" array"
                                                  : "not a JSON object");
    snap_json_free(doc);
    say(it->path, it->from_dir ? "skipped" : "failed", why);
    return it->from_dir ? SKIPPED : FAILED;
  }
  snap__report_summary_t sum;
  char bad[512];
  if (snap__report_name(doc, run->finder, &sum, bad, sizeof bad) != 0) {
    snap_json_free(doc);
    say(it->path, "failed", bad);
    return FAILED;
  }
  char target[4096 + 256] = "";
  int rc = NAMED;
  if (run->out && run->out_dir) {
    const char *slash = strrchr(it->path, '/');
    size_t ol = strlen(run->out);
    snprintf(target, sizeof target, "%s%s%s", run->out,
             ol && run->out[ol - 1] == '/' ? "" : "/",
             slash ? slash + 1 : it->path);
    for (size_t i = 0; i < run->written.n; i++)
      if (strcmp(run->written.v[i].path, target) == 0) {
        snprintf(why, sizeof why,
                 "its output %s was written by an earlier report of this "
                 "run (same file name)",
                 target);
        rc = FAILED;
      }
  } else if (run->out) {
    snprintf(target, sizeof target, "%s", run->out);
  }
  if (rc == FAILED) {
    /* why says it */
  } else if (run->out && strcmp(run->out, "-") == 0) {
    int werr = snap_json_write_file(
        root, SNAP_JSON_PRETTY | SNAP_JSON_FINAL_NEWLINE, stdout);
    if (werr) {
      snprintf(why, sizeof why, "writing standard output: %s", strerror(werr));
      rc = FAILED;
    }
  } else if (run->out) {
    if (write_atomic(target, root, why, sizeof why) != 0)
      rc = FAILED;
    else if (run->out_dir)
      push(&run->written, strdup(target), false);
  } else {
    if (run->many) {
      char p[1024];
      snap__text_escape(p, sizeof p, it->path, strlen(it->path));
      printf("==> %s <==\n", p);
    }
    if (snap__report_text(stdout, doc, &sum) != 0 || fflush(stdout) != 0) {
      snprintf(why, sizeof why, "writing the text: %s", strerror(errno));
      rc = FAILED;
    }
  }
  snap_json_free(doc);
  if (rc == FAILED) {
    say(it->path, "failed", why);
    return FAILED;
  }
  snprintf(why, sizeof why, "%zu frames, %zu named from %zu of %zu images%s%s",
           sum.frames, sum.named, sum.images_named, sum.images_used,
           target[0] && strcmp(target, "-") ? " -> " : "",
           target[0] && strcmp(target, "-") ? target : "");
  say(it->path, "named", why);
  return NAMED;
}

/* ---- The command line --------------------------------------------------- */

int main(int argc, char **argv) {
  const char *dirs[MAX_LIST], *bins[MAX_LIST];
  int n_dirs = 0, n_bins = 0;
  const char *out = NULL;
  bool no_default = false, options = true;
  unsigned long long max_mib = 0;
  const char **args = calloc((size_t)argc + 1, sizeof *args);
  int n_args = 0, rc = 0;
  list_t items = {0};
  run_t run = {0};
  if (!args)
    return 1;
/* Every way out frees what was taken (ASan's leak check runs the
   mistakes too). */
#define FINISH(x)                                                              \
  do {                                                                         \
    rc = (x);                                                                  \
    goto out;                                                                  \
  } while (0)
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool takes = options &&
                 (strcmp(a, "--debug-dir") == 0 || strcmp(a, "--binary") == 0 ||
                  strcmp(a, "--max-memory") == 0 || strcmp(a, "-o") == 0);
    if (takes && i + 1 >= argc)
      FINISH(usage_error("option '%s' needs an argument", a));
    if (!options || (a[0] != '-' || strcmp(a, "-") == 0)) {
      args[n_args++] = a;
    } else if (strcmp(a, "--") == 0) {
      options = false;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(USAGE, stdout);
      FINISH(fflush(stdout) == 0 ? 0 : 1);
    } else if (strcmp(a, "--version") == 0) {
      printf(PROG " (stacksnap %s)\n%s\n%s\n", snap_version(),
             snap_json_reader_version(), snap__dwarf_lines_version());
      FINISH(fflush(stdout) == 0 ? 0 : 1);
    } else if (strcmp(a, "--debug-dir") == 0) {
      if (n_dirs == MAX_LIST)
        FINISH(usage_error("more than 64 --debug-dir", NULL));
      dirs[n_dirs++] = argv[++i];
    } else if (strcmp(a, "--binary") == 0) {
      if (n_bins == MAX_LIST)
        FINISH(usage_error("more than 64 --binary", NULL));
      bins[n_bins++] = argv[++i];
    } else if (strcmp(a, "--no-default-dirs") == 0) {
      no_default = true;
    } else if (strcmp(a, "--max-memory") == 0) {
      char *end;
      const char *v = argv[++i];
      errno = 0;
      max_mib = strtoull(v, &end, 10);
      if (errno || end == v || *end || v[0] == '-' || max_mib == 0 ||
          max_mib > (1ULL << 40))
        FINISH(usage_error("--max-memory '%s': not a number of MiB from 1 "
                           "to 2^40",
                           v));
    } else if (strcmp(a, "-o") == 0) {
      if (out)
        FINISH(usage_error("-o given twice ('%s' is the second)", argv[i + 1]));
      out = argv[++i];
    } else {
      FINISH(usage_error("unknown option '%s'", a));
    }
  }
  if (n_args == 0)
    FINISH(usage_error("no report given%s", NULL));
  int stdin_uses = 0;
  for (int i = 0; i < n_args; i++)
    stdin_uses += strcmp(args[i], "-") == 0;
  if (stdin_uses > 1)
    FINISH(usage_error("'-' (standard input) given more than once%s", NULL));

  /* Directories become their reports; whether the run is "many" is
     decided by the command line, not by what a directory holds today. */
  bool many = n_args > 1, failed_listing = false;
  for (int i = 0; i < n_args; i++) {
    struct stat st;
    if (strcmp(args[i], "-") != 0 && stat(args[i], &st) == 0 &&
        S_ISDIR(st.st_mode)) {
      many = true;
      if (list_dir(args[i], &items) != 0) {
        say(args[i], "failed", strerror(errno));
        failed_listing = true;
      }
    } else if (!push(&items, strdup(args[i]), false)) {
      fprintf(stderr, PROG ": out of memory\n");
      FINISH(1);
    }
  }
  bool out_dir = false;
  if (out && strcmp(out, "-") != 0) {
    struct stat st;
    out_dir = stat(out, &st) == 0 && S_ISDIR(st.st_mode);
  }
  if (out && many && !out_dir)
    FINISH(usage_error("-o '%s' with several reports: -o must name an "
                       "existing directory (each report is written there "
                       "under its own file name)",
                       out));
  if (out_dir && stdin_uses)
    FINISH(usage_error("-o names a directory, but a report is standard "
                       "input: write it with -o FILE%s",
                       NULL));
  signal(SIGPIPE, SIG_IGN);

  snap__symfind_opts_t opts = {dirs,   n_dirs,     bins,
                               n_bins, no_default, max_mib << 20};
  run = (run_t){.out = out, .out_dir = out_dir, .many = many};
  run.finder = snap__symfinder_new(&opts);
  if (!run.finder) {
    fprintf(stderr, PROG ": out of memory\n");
    FINISH(1);
  }
  size_t counts[3] = {0, 0, 0};
  for (size_t i = 0; i < items.n; i++)
    counts[one(&run, &items.v[i])]++;
  const char *why;
  for (int i = 0;; i++) {
    const char *unused = snap__symfinder_unused_binary(run.finder, i, &why);
    if (!unused)
      break;
    fprintf(stderr, PROG ": --binary %s not used: %s\n", unused, why);
  }
  if (many)
    fprintf(stderr, PROG ": %zu reports: %zu named, %zu skipped, %zu failed\n",
            items.n, counts[NAMED], counts[SKIPPED], counts[FAILED]);
  rc = counts[FAILED] || failed_listing ? 1 : 0;
out:
  snap__symfinder_free(run.finder);
  for (size_t i = 0; i < items.n; i++)
    free(items.v[i].path);
  free(items.v);
  for (size_t i = 0; i < run.written.n; i++)
    free(run.written.v[i].path);
  free(run.written.v);
  free(args);
  return rc;
#undef FINISH
}
