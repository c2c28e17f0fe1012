/*
 * symbol_files.c — which files name an image of a report, and naming from
 * them.
 *
 * Owns: reading candidate files whole into memory (a CLI: no mapping, so a
 * file cut on disk meanwhile cannot fault us), the search order by build
 * id, a cache of the files read and of the answer per image, and the
 * lookups (functions: src/platform/linux/elf_reader.c; file:line:
 * dwarf_lines.c).
 *
 * The rule: an image is named only from a file whose GNU build id is the
 * one the report recorded. A file of the same name from another build is
 * never used, and the status says so and which id it had. Search order
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
 * Must not: read a file larger than MAX_FILE, name from a file whose build
 * id differs, or exit: every failure is a status text.
 */
#define _POSIX_C_SOURCE 200809L /* fileno */
#include "symbol_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dwarf_lines.h"
#include "platform/linux/elf_reader.h"
#include "platform/platform.h"

#define MAX_FILE ((size_t)4 << 30) /* 4 GiB: debug files of big apps */

struct snap__symfile {
  char *path;
  uint8_t *data; /* the whole file while it is read */
  size_t size;
  bool parsed; /* elf holds symbols */
  snap__elf_t elf;
  char build_id[2 * 64 + 1];  /* "" if none */
  bool read;                  /* its bytes were read (it exists) */
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
};

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p)
    memcpy(p, s, n);
  return p;
}

/* Reads path whole. NULL data with f->why set when it cannot. */
static void read_whole(snap__symfile_t *f) {
  FILE *in = fopen(f->path, "rb");
  if (!in) {
    snprintf(f->why, sizeof f->why, "cannot open: %s", strerror(errno));
    return;
  }
  struct stat st;
  if (fstat(fileno(in), &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(f->why, sizeof f->why, "not a regular file");
    fclose(in);
    return;
  }
  if ((unsigned long long)st.st_size > MAX_FILE || st.st_size <= 0) {
    snprintf(f->why, sizeof f->why, "size %lld: not an ELF file we read",
             (long long)st.st_size);
    fclose(in);
    return;
  }
  size_t size = (size_t)st.st_size;
  uint8_t *data = malloc(size);
  if (!data || fread(data, 1, size, in) != size) {
    snprintf(f->why, sizeof f->why, "%s",
             data ? "read failed (cut short?)" : "out of memory");
    free(data);
    fclose(in);
    return;
  }
  fclose(in);
  f->data = data;
  f->size = size;
}

/* The file at path, read and parsed once (NULL only when out of memory;
   a file that cannot be read is returned with why set). */
static snap__symfile_t *file_at(snap__symfinder_t *fd, const char *path) {
  for (int i = 0; i < fd->n_files; i++)
    if (strcmp(fd->files[i]->path, path) == 0)
      return fd->files[i];
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
  fd->files[fd->n_files++] = f;
  read_whole(f);
  if (!f->data)
    return f;
  /* The build id is read even when the file has no symbols: it is what
     says whether the file is the image's at all. */
  const uint8_t *id;
  size_t id_len;
  if (snap__elf_build_id(f->data, f->size, &id, &id_len) == 0)
    snap__plat_build_id_text(id, id_len, f->build_id, sizeof f->build_id);
  f->parsed = snap__elf_parse(&f->elf, f->data, f->size) == 0;
  f->read = true;
  f->lines_error = snap__dwarf_lines_open(f->data, f->size, &f->lines);
  /* The line index owns what it returns; the symbols are copied out by
     detach: the file's bytes (most of it DWARF) are needed no more. */
  if (!f->parsed || snap__elf_detach(&f->elf) == 0) {
    free(f->data);
    f->data = NULL;
  }
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
  for (int i = 0; i < n; i++)
    if (!(fd->binaries[i] = file_at(fd, opts->binaries[i]))) {
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
} search_t;

static void note_tried(search_t *s, const snap__symfile_t *f) {
  size_t used = strlen(s->tried);
  if (used + 8 >= sizeof s->tried)
    return;
  if (f->build_id[0])
    snprintf(s->tried + used, sizeof s->tried - used, "%s%s has build id %s",
             used ? "; " : "", f->path, f->build_id);
  else
    snprintf(s->tried + used, sizeof s->tried - used, "%s%s has no build id",
             used ? "; " : "", f->path);
}

/* Offers f; true when the search is complete (names and lines found). */
static bool offer(search_t *s, snap__symfile_t *f) {
  if (!f || !f->read)
    return false; /* absent or unreadable: not worth a word */
  if (strcmp(f->build_id, s->build_id) != 0) {
    note_tried(s, f);
    return false;
  }
  s->identified = true;
  if (!s->out->names && has_names(f))
    s->out->names = f;
  if (!s->out->lines && f->lines)
    s->out->lines = f;
  return s->out->names && s->out->lines;
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Offers path if a file is there. */
static bool offer_path(search_t *s, const char *path) {
  if (!exists(path))
    return false;
  return offer(s, file_at(s->fd, path));
}

static bool offer_build_id_tree(search_t *s, const char *dir) {
  char path[4096];
  const char *id = s->build_id;
  if (strlen(id) < 3)
    return false;
  snprintf(path, sizeof path, "%s/.build-id/%.2s/%s.debug", dir, id, id + 2);
  return offer_path(s, path);
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
  if (strcmp(path, f->path) != 0 && offer_path(s, path))
    return true;
  snprintf(path, sizeof path, "%s/.debug/%s", dir, link);
  if (offer_path(s, path))
    return true;
  for (int i = 0; i < s->fd->opts.n_debug_dirs; i++) {
    snprintf(path, sizeof path, "%s%s/%s", s->fd->opts.debug_dirs[i], dir,
             link);
    if (offer_path(s, path))
      return true;
    snprintf(path, sizeof path, "%s/%s", s->fd->opts.debug_dirs[i], link);
    if (offer_path(s, path))
      return true;
  }
  if (!s->fd->opts.no_default_dirs) {
    snprintf(path, sizeof path, "/usr/lib/debug%s/%s", dir, link);
    if (offer_path(s, path))
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
  search_t s = {fd, build_id, out, false, ""};
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
  if (!done && path && path[0] == '/' && exists(path)) {
    at = file_at(fd, path);
    done = offer(&s, at);
  }
  if (!done && at && strcmp(at->build_id, build_id) == 0)
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
  if (!id[0])
    find_unverified(fd, p, out);
  else
    search(fd, p, id, out);
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
