/*
 * symbol_files.c — which files name an image of a report, and naming from
 * them.
 *
 * Owns: reading candidate files whole into memory (a CLI: no mapping, so a
 * file cut on disk meanwhile cannot fault us), the search order by build
 * id, a cache of the files met (by device and inode: probed, or read)
 * and of the answer per image, the memory budget of the files read, and
 * the lookups (functions: src/platform/linux/elf_functions.c; file:line:
 * dwarf_lines.c, elfutils' libdw over the bytes read, so that libdw never
 * opens a file by a name a report gave).
 *
 * A report is hostile (docs/security.md, "Reports as untrusted input"):
 * its build id must be plausible hex (image_probe.c) before it becomes
 * part of a path, and a file it leads to (its image path, the debuglinks
 * beside it, the .build-id tree) is opened only if stat says it is a
 * regular file, then O_NONBLOCK (a FIFO cannot hang us) and checked again
 * with fstat, and is read whole only when its build-id note, probed in a
 * few bounded reads, is the image's. Of such a file whose id differs
 * nothing is said (the output must not tell a report's author whether
 * /home/x/.ssh/id_ed25519.debug exists); only files the user named
 * (--binary) or keeps (the .build-id trees) are reported with their id.
 * Spellings of one file (/lib/./x.so, //lib/x.so) share one probe and
 * one read.
 *
 * The rule: an image is named only from a file whose GNU build id is the
 * one the report recorded. A file of the same name from another build is
 * never used, and the status says so and which id it had (of a file the
 * user named or keeps; of one a report led to, nothing). Search order
 * (the first match wins; the file at the image's path last, as a running
 * system may have replaced it since the report was written):
 *   1. --binary files, by their build id;
 *   2. DIR/.build-id/xx/yyyy.debug under each --debug-dir, then
 *      /usr/lib/debug (gdb's and debuginfod's layout);
 *   3. the file at the image's path;
 *   4. that file's .gnu_debuglink name in its directory, its .debug/,
 *      each --debug-dir and /usr/lib/debug + its directory.
 * A match that has no function symbols (a stripped file) still counts for
 * the image's identity; its names then come from the next match that has
 * them (a debug file), and file:line from whichever has .debug_line.
 *
 * Must not: read a file larger than MAX_FILE, read more than the budget
 * (opts.max_bytes) in all, name from a file whose build id differs, or
 * exit: every failure is a status text.
 */
#define _POSIX_C_SOURCE 200809L /* pread */
#include "symbol_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf_lines.h"
#include "image_probe.h"
#include "platform/linux/elf_reader.h"
#include "platform/platform.h"

#define MAX_FILE ((size_t)4 << 30) /* 4 GiB: debug files of big apps */

struct snap__symfile {
  char *path;        /* the first spelling it was found by */
  bool has_identity; /* dev and ino are its (it could be opened) */
  dev_t dev;         /* its identity: every spelling of it is this file */
  ino_t ino;
  bool user;     /* named by the user (--binary): reported even if not used */
  uint8_t *data; /* the whole file, if detach failed */
  bool parsed;   /* elf holds symbols */
  snap__elf_t elf;
  char build_id[2 * 64 + 1];  /* "" if none; the probe's until read */
  bool read;                  /* its bytes were read and parsed */
  snap__dwarf_lines_t *lines; /* NULL if none */
  int lines_error;            /* why there are none (SNAP_DWL_*) */
  char why[256];              /* why it could not be read, or "" */
};

typedef struct found_entry {
  char *path, *build_id;
  snap__symfound_t found;
} found_entry_t;

struct snap__symfinder {
  snap__symfind_opts_t opts;
  snap__symfile_t **files; /* every file read, by path */
  int n_files, cap_files;
  snap__symfile_t **binaries; /* the --binary ones, in order */
  bool *binary_used;
  found_entry_t *found;
  int n_found, cap_found;
  uint64_t budget, used; /* bytes of files read whole: the cap, so far */
};

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p)
    memcpy(p, s, n);
  return p;
}

/* Opens path for reading as a regular file of at least an ELF header's
   size. stat first: opening a device has effects of its own (a tape
   rewinds, a watchdog arms), so only what is a regular file is opened;
   then O_NONBLOCK (a FIFO swapped in meanwhile cannot block the open),
   O_NOCTTY, O_CLOEXEC, and fstat on the descriptor decides. -1 with why
   set. */
static int open_regular(const char *path, struct stat *st, char *why,
                        size_t why_size) {
  if (stat(path, st) != 0) {
    snprintf(why, why_size, "cannot open: %s", strerror(errno));
    return -1;
  }
  int fd = S_ISREG(st->st_mode)
               ? open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
               : -1;
  if (fd < 0 && S_ISREG(st->st_mode)) {
    snprintf(why, why_size, "cannot open: %s", strerror(errno));
    return -1;
  }
  if (fd < 0 || fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
    snprintf(why, why_size, "not a regular file");
    if (fd >= 0)
      close(fd);
    return -1;
  }
  if ((unsigned long long)st->st_size > MAX_FILE || st->st_size < 64) {
    snprintf(why, why_size, "size %lld: not an ELF file we read",
             (long long)st->st_size);
    close(fd);
    return -1;
  }
  return fd;
}

static int pread_all(int fd, uint64_t off, void *buf, size_t len) {
  uint8_t *p = buf;
  while (len > 0) {
    ssize_t n = pread(fd, p, len, (off_t)off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    p += n, off += (uint64_t)n, len -= (size_t)n;
  }
  return 0;
}

static int probe_read(void *ctx, uint64_t off, void *buf, size_t len) {
  return pread_all(*(int *)ctx, off, buf, len);
}

/* The file already read with this identity, or NULL. */
static snap__symfile_t *cached(const snap__symfinder_t *fd,
                               const struct stat *st) {
  for (int i = 0; i < fd->n_files; i++)
    if (fd->files[i]->has_identity && fd->files[i]->dev == st->st_dev &&
        fd->files[i]->ino == st->st_ino)
      return fd->files[i];
  return NULL;
}

/* A new cache entry for path (NULL when out of memory). */
static snap__symfile_t *new_file(snap__symfinder_t *fd, const char *path,
                                 const struct stat *st) {
  if (fd->n_files == fd->cap_files) {
    int cap = fd->cap_files ? 2 * fd->cap_files : 16;
    snap__symfile_t **v = realloc(fd->files, (size_t)cap * sizeof *v);
    if (!v)
      return NULL;
    fd->files = v;
    fd->cap_files = cap;
  }
  snap__symfile_t *f = calloc(1, sizeof *f);
  if (!f || !(f->path = dup_str(path))) {
    free(f);
    return NULL;
  }
  if (st) {
    f->has_identity = true;
    f->dev = st->st_dev;
    f->ino = st->st_ino;
  }
  fd->files[fd->n_files++] = f;
  return f;
}

/* Reads the open file whole into f and parses it, within the budget (f->why
   says why not). Closes file. */
static void load(snap__symfinder_t *fd, snap__symfile_t *f, int file,
                 const struct stat *st) {
  size_t size = (size_t)st->st_size;
  if (size > fd->budget - fd->used) {
    snprintf(f->why, sizeof f->why,
             "its %llu MiB would pass the memory budget for "
             "symbol files (%llu of %llu MiB used; --max-memory)",
             (unsigned long long)(size >> 20),
             (unsigned long long)(fd->used >> 20),
             (unsigned long long)(fd->budget >> 20));
    close(file);
    return;
  }
  uint8_t *data = malloc(size);
  if (!data || pread_all(file, 0, data, size) != 0) {
    snprintf(f->why, sizeof f->why, "%s",
             data ? "read failed (cut short?)" : "out of memory");
    free(data);
    close(file);
    return;
  }
  close(file);
  fd->used += size;
  f->build_id[0] = '\0';
  /* The build id is read even when the file has no symbols: it is what
     says whether the file is the image's at all (the probe's, if any, is
     replaced: the full reader decides). */
  const uint8_t *id;
  size_t id_len;
  if (snap__elf_build_id(data, size, &id, &id_len) == 0)
    snap__plat_build_id_text(id, id_len, f->build_id, sizeof f->build_id);
  f->parsed = snap__elf_parse(&f->elf, data, size) == 0;
  f->read = true;
  /* The symbols are copied out by detach; libdw reads the file's bytes
     in place (and its compressed debug sections inflated, within what is
     left of the budget): they stay while there is a line index. */
  uint64_t inflated = 0;
  f->lines_error = snap__dwarf_lines_open(data, size, fd->budget - fd->used,
                                          &inflated, &f->lines);
  if (f->lines)
    fd->used += inflated;
  if (f->parsed && !f->lines)
    (void)snap__elf_detach(&f->elf);
  if (f->lines || (f->parsed && !f->elf.owned))
    f->data = data;
  else
    free(data);
}

/* A --binary file, read and parsed once (NULL only when out of memory; a
   file that cannot be read is returned with why set). */
static snap__symfile_t *user_file(snap__symfinder_t *fd, const char *path) {
  struct stat st;
  char why[sizeof((snap__symfile_t *)0)->why];
  int file = open_regular(path, &st, why, sizeof why);
  snap__symfile_t *f = file >= 0 ? cached(fd, &st) : NULL;
  if (f) {
    close(file);
  } else {
    if (!(f = new_file(fd, path, file >= 0 ? &st : NULL))) {
      if (file >= 0)
        close(file);
      return NULL;
    }
    if (file >= 0)
      load(fd, f, file, &st);
    else
      snprintf(f->why, sizeof f->why, "%s", why);
  }
  f->user = true;
  return f;
}

snap__symfinder_t *snap__symfinder_new(const snap__symfind_opts_t *opts) {
  snap__symfinder_t *fd = calloc(1, sizeof *fd);
  if (!fd)
    return NULL;
  fd->opts = *opts;
  int n = opts->n_binaries;
  fd->binaries = calloc(n ? (size_t)n : 1, sizeof *fd->binaries);
  fd->binary_used = calloc(n ? (size_t)n : 1, sizeof *fd->binary_used);
  if (!fd->binaries || !fd->binary_used) {
    snap__symfinder_free(fd);
    return NULL;
  }
  fd->budget = opts->max_bytes ? opts->max_bytes : SNAP__SYMFILES_BUDGET;
  for (int i = 0; i < n; i++)
    if (!(fd->binaries[i] = user_file(fd, opts->binaries[i]))) {
      snap__symfinder_free(fd);
      return NULL;
    }
  return fd;
}

void snap__symfinder_free(snap__symfinder_t *fd) {
  if (!fd)
    return;
  for (int i = 0; i < fd->n_files; i++) {
    snap__symfile_t *f = fd->files[i];
    if (f->parsed)
      snap__elf_free(&f->elf);
    snap__dwarf_lines_close(f->lines);
    free(f->data);
    free(f->path);
    free(f);
  }
  for (int i = 0; i < fd->n_found; i++) {
    free(fd->found[i].path);
    free(fd->found[i].build_id);
  }
  free(fd->found);
  free(fd->files);
  free(fd->binaries);
  free(fd->binary_used);
  free(fd);
}

static bool has_names(const snap__symfile_t *f) {
  return f && f->parsed && f->elf.nsyms > 0;
}

/* A search in progress: what matched so far, and what was tried. */
typedef struct search {
  snap__symfinder_t *fd;
  const char *build_id;
  snap__symfound_t *out;
  bool identified; /* some file with the image's build id was seen */
  char tried[768]; /* files of another build, for the status */
  char over[320];  /* a matching file not read: the budget */
} search_t;

/* A file of another build, for the status: only one the user named or
   keeps (path and build id are the user's to know), never one a report
   led to. */
static void note_tried(search_t *s, const char *path, const char *build_id) {
  size_t used = strlen(s->tried);
  if (used + 8 >= sizeof s->tried)
    return;
  if (build_id[0])
    snprintf(s->tried + used, sizeof s->tried - used, "%s%s has build id %s",
             used ? "; " : "", path, build_id);
  else
    snprintf(s->tried + used, sizeof s->tried - used, "%s%s has no build id",
             used ? "; " : "", path);
}

/* Offers f; true when the search is complete (names and lines found). */
static bool offer(search_t *s, snap__symfile_t *f) {
  if (!f || !f->read)
    return false; /* absent or unreadable: not worth a word */
  if (strcmp(f->build_id, s->build_id) != 0) {
    if (f->user)
      note_tried(s, f->path, f->build_id);
    return false;
  }
  s->identified = true;
  if (!s->out->names && has_names(f))
    s->out->names = f;
  if (!s->out->lines && f->lines)
    s->out->lines = f;
  return s->out->names && s->out->lines;
}

/* Offers the file at path, if one is there whose build-id note (probed)
   is the image's: only then is it read. kept: in a tree the user keeps
   (a .build-id tree), so a file of another build there is worth a word;
   otherwise (a path from the report) nothing is said of it. Each file is
   probed once, however many images or spellings name it (the cache holds
   what the probe found). *at (if not NULL) receives the file when it is
   the image's. */
static bool offer_path(search_t *s, const char *path, bool kept,
                       snap__symfile_t **at) {
  struct stat st;
  char why[256];
  int file = open_regular(path, &st, why, sizeof why);
  if (file < 0)
    return false;
  snap__symfile_t *f = cached(s->fd, &st);
  if (!f) {
    if (!(f = new_file(s->fd, path, &st))) {
      close(file);
      return false;
    }
    snap__probe_t probe;
    if (snap__probe_build_id(probe_read, &file, (uint64_t)st.st_size, &probe) ==
        0)
      snap__plat_build_id_text(probe.id, probe.id_len, f->build_id,
                               sizeof f->build_id);
  }
  /* Probed only, and this image's: read it now (load closes file). */
  if (!f->user && !f->read && !f->why[0] &&
      strcmp(f->build_id, s->build_id) == 0) {
    load(s->fd, f, file, &st);
    file = -1;
  }
  if (file >= 0)
    close(file);
  if (strcmp(f->build_id, s->build_id) != 0) {
    if (f->user ? f->read : kept)
      note_tried(s, f->user ? f->path : path, f->build_id);
    return false;
  }
  if (!f->read) { /* its note is this image's, but the budget said no */
    if (!s->over[0])
      snprintf(s->over, sizeof s->over, "%s: %s", f->path, f->why);
    return false;
  }
  if (at)
    *at = f;
  return offer(s, f);
}

static bool offer_build_id_tree(search_t *s, const char *dir) {
  char path[4096];
  const char *id = s->build_id;
  if (strlen(id) < 3)
    return false;
  snprintf(path, sizeof path, "%s/.build-id/%.2s/%s.debug", dir, id, id + 2);
  return offer_path(s, path, true, NULL);
}

static bool offer_debuglink(search_t *s, const snap__symfile_t *f) {
  if (!f || !f->parsed || !f->elf.debuglink)
    return false;
  const char *link = f->elf.debuglink;
  if (strchr(link, '/'))
    return false; /* a debuglink is a base name; anything else is hostile */
  char dir[4096], path[8192];
  snprintf(dir, sizeof dir, "%s", f->path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    return false;
  *slash = '\0';
  snprintf(path, sizeof path, "%s/%s", dir, link);
  if (strcmp(path, f->path) != 0 && offer_path(s, path, false, NULL))
    return true;
  snprintf(path, sizeof path, "%s/.debug/%s", dir, link);
  if (offer_path(s, path, false, NULL))
    return true;
  for (int i = 0; i < s->fd->opts.n_debug_dirs; i++) {
    snprintf(path, sizeof path, "%s%s/%s", s->fd->opts.debug_dirs[i], dir,
             link);
    if (offer_path(s, path, false, NULL))
      return true;
    snprintf(path, sizeof path, "%s/%s", s->fd->opts.debug_dirs[i], link);
    if (offer_path(s, path, false, NULL))
      return true;
  }
  if (!s->fd->opts.no_default_dirs) {
    snprintf(path, sizeof path, "/usr/lib/debug%s/%s", dir, link);
    if (offer_path(s, path, false, NULL))
      return true;
  }
  return false;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* No build id in the report: only the user's word (a --binary of the same
   base name) names the image. */
static void find_unverified(snap__symfinder_t *fd, const char *path,
                            snap__symfound_t *out) {
  for (int i = 0; i < fd->opts.n_binaries; i++) {
    snap__symfile_t *b = fd->binaries[i];
    if (strcmp(base_name(b->path), base_name(path)) == 0 && has_names(b)) {
      fd->binary_used[i] = true;
      out->names = b;
      out->lines = b->lines ? b : NULL;
      snprintf(out->status, sizeof out->status,
               "named from %s (--binary; the report has no build id to "
               "check it against)",
               b->path);
      return;
    }
  }
  snprintf(out->status, sizeof out->status,
           "not named: the report has no build id for it (pass --binary "
           "with its file to name it unchecked)");
}

static void search(snap__symfinder_t *fd, const char *path,
                   const char *build_id, snap__symfound_t *out) {
  search_t s = {fd, build_id, out, false, "", ""};
  bool done = false;
  for (int i = 0; i < fd->opts.n_binaries && !done; i++) {
    bool was = s.identified;
    done = offer(&s, fd->binaries[i]);
    if (s.identified && !was)
      fd->binary_used[i] = true;
  }
  for (int i = 0; i < fd->opts.n_debug_dirs && !done; i++)
    done = offer_build_id_tree(&s, fd->opts.debug_dirs[i]);
  if (!done && !fd->opts.no_default_dirs)
    done = offer_build_id_tree(&s, "/usr/lib/debug");
  snap__symfile_t *at = NULL;
  if (!done && path && path[0] == '/')
    done = offer_path(&s, path, false, &at);
  if (!done && at)
    done = offer_debuglink(&s, at);

  if (out->names || out->lines) {
    int n = snprintf(out->status, sizeof out->status, "named from %s%s",
                     out->names ? out->names->path : "(no symbols)",
                     out->names && !out->names->elf.from_symtab
                         ? " (exported functions only: no .symtab)"
                         : "");
    if (out->lines && out->lines != out->names && n > 0 &&
        (size_t)n < sizeof out->status)
      snprintf(out->status + n, sizeof out->status - (size_t)n,
               ", lines from %s", out->lines->path);
    else if (!out->lines && n > 0 && (size_t)n < sizeof out->status)
      snprintf(out->status + n, sizeof out->status - (size_t)n,
               " (no file:line: %s)",
               snap__dwarf_lines_strerror(out->names->lines_error));
    size_t used = strlen(out->status);
    if (s.tried[0] && used < sizeof out->status)
      snprintf(out->status + used, sizeof out->status - used,
               "; not used, of another build than %s: %s", build_id, s.tried);
  } else if (s.over[0]) {
    snprintf(out->status, sizeof out->status,
             "not named: the file with build id %s was not read: %s", build_id,
             s.over);
  } else if (s.identified) {
    snprintf(out->status, sizeof out->status,
             "not named: the files with build id %s have no symbols (a "
             "stripped file; its debug file was not found)%s%s%s",
             build_id, s.tried[0] ? " (" : "", s.tried, s.tried[0] ? ")" : "");
  } else {
    snprintf(out->status, sizeof out->status,
             "not named: no file with build id %s%s%s%s", build_id,
             s.tried[0] ? " (" : "", s.tried, s.tried[0] ? ")" : "");
  }
}

void snap__symfind(snap__symfinder_t *fd, const char *path,
                   const char *build_id, snap__symfound_t *out) {
  memset(out, 0, sizeof *out);
  const char *p = path ? path : "", *id = build_id ? build_id : "";
  for (int i = 0; i < fd->n_found; i++)
    if (strcmp(fd->found[i].path, p) == 0 &&
        strcmp(fd->found[i].build_id, id) == 0) {
      *out = fd->found[i].found;
      return;
    }
  char plain[2 * SNAP__BUILD_ID_MAX_BYTES + 1];
  if (!id[0])
    find_unverified(fd, p, out);
  else if (!snap__build_id_plausible(id, plain, sizeof plain))
    snprintf(out->status, sizeof out->status,
             "not named: its build_id is not a build id (hex of %d to %d "
             "bytes): refused, no file looked for",
             SNAP__BUILD_ID_MIN_BYTES, SNAP__BUILD_ID_MAX_BYTES);
  else
    search(fd, p, plain, out);
  if (fd->n_found == fd->cap_found) {
    int cap = fd->cap_found ? 2 * fd->cap_found : 16;
    found_entry_t *v = realloc(fd->found, (size_t)cap * sizeof *v);
    if (!v)
      return; /* not cached: found again next time */
    fd->found = v;
    fd->cap_found = cap;
  }
  found_entry_t *e = &fd->found[fd->n_found];
  e->path = dup_str(p);
  e->build_id = dup_str(id);
  if (!e->path || !e->build_id) {
    free(e->path);
    free(e->build_id);
    return;
  }
  e->found = *out;
  fd->n_found++;
}

void snap__symname(const snap__symfound_t *found, uint64_t vaddr,
                   snap__symname_t *out) {
  memset(out, 0, sizeof *out);
  if (found->names) {
    const snap__elf_sym_t *s = snap__elf_find(&found->names->elf, vaddr, NULL);
    if (s) {
      out->function = s->name;
      out->function_start = s->addr;
    }
  }
  snap__dwarf_line_t line;
  if (found->lines &&
      snap__dwarf_lines_lookup(found->lines->lines, vaddr, &line) ==
          SNAP_DWL_OK &&
      line.line > 0) {
    out->file = line.file;
    out->line = line.line;
    snap__dwarf_inline_t in[SNAP__SYMNAME_MAX_INLINED];
    size_t n = snap__dwarf_lines_inlined(found->lines->lines, vaddr, in,
                                         SNAP__SYMNAME_MAX_INLINED);
    out->n_inlined =
        n < SNAP__SYMNAME_MAX_INLINED ? n : SNAP__SYMNAME_MAX_INLINED;
    for (size_t i = 0; i < out->n_inlined; i++) {
      out->inlined[i].function = in[i].function;
      out->inlined[i].file = in[i].file;
      out->inlined[i].line = in[i].line;
    }
  }
}

const char *snap__symfinder_unused_binary(const snap__symfinder_t *fd, int i,
                                          const char **why) {
  for (int k = 0; k < fd->opts.n_binaries; k++) {
    if (fd->binary_used[k])
      continue;
    if (i-- == 0) {
      const snap__symfile_t *b = fd->binaries[k];
      if (why)
        *why = b->why[0]        ? b->why
               : b->build_id[0] ? "its build id is no image's in the report"
                                : "it has no build id";
      return b->path;
    }
  }
  return NULL;
}
