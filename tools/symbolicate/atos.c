/*
 * atos.c — the Spotlight and atos(1) lines that name one Apple image's
 * frames on a Mac (see atos.h for the exact output).
 *
 * Algorithm: check the arch against the names atos takes (-arch), the UUID
 * against the 8-4-4-4-12 form and uppercase it (Spotlight's
 * com_apple_xcode_dsym_uuids holds it so), derive the dSYM's name the way
 * Xcode names it ($(FULL_PRODUCT_NAME).dSYM: the .app/.framework bundle
 * around the binary, or the binary's own file name), then write a comment,
 * the mdfind line and the atos line: -arch, -o <dSYM>/Contents/Resources/
 * DWARF/<name>, -l <load address> and the pcs, all in hex with 0x.
 *
 * Everything here comes from a report, which may be hostile: words that go
 * into a command are shell-quoted, the UUID (inside double quotes) is
 * checked to be hex and dashes only, and the comment line escapes control
 * characters, so that a newline in a path cannot end the comment and start
 * a command.
 *
 * Must not: run or look for any tool (the report may be read on Linux),
 * allocate, or write a partial line without reporting the failure.
 */
#include "atos.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "stacksnap.h"
#include "text_escape.h"

typedef struct writer {
  FILE *f;
  bool failed;
} writer_t;

static void put(writer_t *w, const char *s) {
  if (!w->failed && fputs(s, w->f) == EOF)
    w->failed = true;
}

static void putn(writer_t *w, const char *s, size_t n) {
  if (!w->failed && n && fwrite(s, 1, n, w->f) != n)
    w->failed = true;
}

static void put_hex(writer_t *w, uint64_t v) {
  if (!w->failed && fprintf(w->f, "0x%" PRIx64, v) < 0)
    w->failed = true;
}

/* Characters that mean nothing to sh, bash or zsh in an unquoted word. */
static bool shell_plain(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || strchr("_@%+=:,./-", c) != NULL;
}

/* s[0..n) as one shell word (see snap__shell_word). */
static void put_word(writer_t *w, const char *s, size_t n) {
  bool plain = n > 0;
  for (size_t i = 0; i < n && plain; i++)
    plain = shell_plain((unsigned char)s[i]);
  if (plain) {
    putn(w, s, n);
    return;
  }
  /* Inside single quotes every character is literal but the quote itself,
     which closes, is written escaped, and reopens. */
  put(w, "'");
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\'') {
      putn(w, s + run, i - run);
      put(w, "'\\''");
      run = i + 1;
    }
  }
  putn(w, s + run, n - run);
  put(w, "'");
}

int snap__shell_word(FILE *out, const char *s) {
  if (!out || !s)
    return SNAP_EINVAL;
  writer_t w = {out, false};
  put_word(&w, s, strlen(s));
  return w.failed ? SNAP_EIO : 0;
}

/* Text for a comment line: control characters (a newline would end the
   comment; C1 and ESC would reach the terminal) escaped as the rest of
   the text is (text_escape.c); everything else, UTF-8 included, as it
   is. In pieces: no allocation. */
static void put_comment_text(writer_t *w, const char *s) {
  char buf[256];
  size_t len = strlen(s);
  while (len > 0) {
    /* The longest head whose escape fits (a UTF-8 sequence is 4 bytes at
       most, an escape 6). */
    size_t take = len < 60 ? len : 60;
    while (take < len && take > 0 && ((unsigned char)s[take] & 0xC0) == 0x80)
      take--;
    if (take == 0)
      take = len < 4 ? len : 4;
    size_t n = snap__text_escape(buf, sizeof buf, s, take);
    putn(w, buf, n);
    s += take, len -= take;
  }
}

/* atos's -arch names for the architectures a report can carry. */
static const char *atos_arch(const char *arch) {
  static const char *const known[] = {"arm64", "arm64e", "x86_64"};
  if (!arch)
    return NULL;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(arch, known[i]) == 0)
      return known[i];
  if (strcmp(arch, "aarch64") == 0) /* the Linux spelling of arm64 */
    return "arm64";
  return NULL;
}

/* uuid in 8-4-4-4-12 hex (either case) into up[37], uppercase. */
static bool uuid_upper(const char *uuid, char up[37]) {
  if (strlen(uuid) != 36)
    return false;
  for (size_t i = 0; i < 36; i++) {
    char c = uuid[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-')
        return false;
    } else if (c >= 'a' && c <= 'f') {
      c = (char)(c - 'a' + 'A');
    } else if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
    up[i] = c;
  }
  up[36] = '\0';
  return true;
}

/* Whether component c[0..len) is name followed by ext. */
static bool comp_is(const char *c, size_t len, const char *name,
                    const char *ext) {
  size_t n = strlen(name), e = strlen(ext);
  return len == n + e && memcmp(c, name, n) == 0 && memcmp(c + n, ext, e) == 0;
}

static bool comp_eq(const char *c, size_t len, const char *s) {
  return len == strlen(s) && memcmp(c, s, len) == 0;
}

/* The dSYM bundle's name without ".dSYM" into *b, *blen: Xcode names a dSYM
   after the product ($(FULL_PRODUCT_NAME).dSYM), so App.app.dSYM for the
   executable of App.app (iOS App.app/App, macOS App.app/Contents/MacOS/App,
   likewise .appex and .xpc), Foo.framework.dSYM for Foo.framework/Foo or
   Foo.framework/Versions/A/Foo, and the file's own name otherwise. */
static void dsym_bundle(const char *path, const char *name, const char **b,
                        size_t *blen) {
  *b = name;
  *blen = strlen(name);
  if (!path)
    return;
  /* The last five components of path, innermost first: comp[0] is the
     file itself. */
  const char *comp[5];
  size_t clen[5], k = 0;
  const char *end = path + strlen(path);
  while (k < 5 && end > path) {
    const char *start = end;
    while (start > path && start[-1] != '/')
      start--;
    comp[k] = start;
    clen[k] = (size_t)(end - start);
    k++;
    end = start > path ? start - 1 : start;
  }
  static const char *const app_ext[] = {".app", ".appex", ".xpc"};
  for (size_t i = 0; i < sizeof app_ext / sizeof app_ext[0]; i++) {
    const char *ext = app_ext[i];
    size_t at = 0;
    if (k >= 2 && comp_is(comp[1], clen[1], name, ext))
      at = 1; /* iOS: App.app/App */
    else if (k >= 4 && comp_eq(comp[1], clen[1], "MacOS") &&
             comp_eq(comp[2], clen[2], "Contents") &&
             comp_is(comp[3], clen[3], name, ext))
      at = 3; /* macOS: App.app/Contents/MacOS/App */
    if (at) {
      *b = comp[at], *blen = clen[at];
      return;
    }
  }
  if (k >= 2 && comp_is(comp[1], clen[1], name, ".framework")) {
    *b = comp[1], *blen = clen[1]; /* Foo.framework/Foo */
  } else if (k >= 4 && comp_eq(comp[2], clen[2], "Versions") &&
             comp_is(comp[3], clen[3], name, ".framework")) {
    *b = comp[3], *blen = clen[3]; /* Foo.framework/Versions/A/Foo */
  }
}

int snap__atos_lines(FILE *out, const char *arch, const char *image_name,
                     const char *image_path, const char *uuid, uint64_t base,
                     const uint64_t *pcs, size_t n) {
  if (!out || (n && !pcs))
    return SNAP_EINVAL;
  const char *a = atos_arch(arch);
  if (!a)
    return SNAP_EINVAL;
  const char *name = image_name;
  if (!name && image_path) {
    const char *slash = strrchr(image_path, '/');
    name = slash ? slash + 1 : image_path;
  } else if (name && strrchr(name, '/')) {
    name = strrchr(name, '/') + 1;
  }
  if (!name || !name[0])
    return SNAP_EINVAL;
  char up[37];
  bool has_uuid = uuid && uuid[0];
  if (has_uuid && !uuid_upper(uuid, up))
    return SNAP_EINVAL;
  if (n == 0)
    return 0;
  const char *bundle;
  size_t blen;
  dsym_bundle(image_path, name, &bundle, &blen);
  char dsym[4096];
  if (blen >= sizeof dsym)
    return SNAP_EINVAL;
  int len = snprintf(dsym, sizeof dsym, "%.*s.dSYM/Contents/Resources/DWARF/%s",
                     (int)blen, bundle, name);
  if (len < 0 || (size_t)len >= sizeof dsym)
    return SNAP_EINVAL; /* a name longer than any file system allows */

  /* A control character in a command would reach the terminal inside
     the quotes (ESC, C1) or break the line: no dSYM is named so. */
  if (snap__text_escape(NULL, 0, dsym, (size_t)len) != (size_t)len)
    return SNAP_EINVAL;

  writer_t w = {out, false};
  put(&w, "# ");
  put_comment_text(&w, name);
  put(&w, " ");
  put(&w, a);
  put(&w, " ");
  put(&w, has_uuid ? up : "(no UUID: no dSYM can be matched to it)");
  if (image_path) {
    put(&w, " ");
    put_comment_text(&w, image_path);
  }
  put(&w, "\n");
  if (has_uuid) {
    /* TN2151's Spotlight query; the UUID is hex and dashes only, so the
       double quotes hold nothing the shell expands. */
    put(&w, "mdfind \"com_apple_xcode_dsym_uuids == ");
    put(&w, up);
    put(&w, "\"\n");
  }

  put(&w, "atos -arch ");
  put(&w, a);
  put(&w, " -o ");
  put_word(&w, dsym, (size_t)len);
  put(&w, " -l ");
  put_hex(&w, base);
  for (size_t i = 0; i < n; i++) {
    put(&w, " ");
    put_hex(&w, pcs[i]);
  }
  put(&w, "\n");
  if (!w.failed && fflush(out) == EOF)
    w.failed = true;
  return w.failed || ferror(out) ? SNAP_EIO : 0;
}
