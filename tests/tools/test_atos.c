/*
 * test_atos.c — the lines stacksnap-symbolicate prints to name an Apple
 * report's frames on a Mac (tools/symbolicate/atos.c), on Linux.
 *
 * Oracles, from outside the code (docs/apple.md, [U3]..[U5]):
 * - atos(1): `atos [-o <binary-image-file> | <dSYM>] [-arch architecture]
 *   [-l <load-address>] [<address> ...]`; TN2151's worked example
 *   `atos -arch arm64 -o TheElements.app.dSYM/Contents/Resources/DWARF/
 *   TheElements -l 0x1000e4000 0x00000001000effdc` (the same numbers are
 *   the first case below, the pc without its leading zeros);
 * - TN2151's Spotlight query `mdfind "com_apple_xcode_dsym_uuids == <UUID>"`;
 * - /bin/sh itself: the printed lines are run by sh with atos and mdfind
 *   defined as functions that print their arguments, which must come back
 *   exactly as the words meant (quotes, spaces, $(...), newlines), and no
 *   command hidden in a report's name may run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atos.h"
#include "check.h"
#include "stacksnap.h"

#define UUID_LOWER "e3f22f87-0b68-3b06-a845-8402d70b8fe9"
#define UUID_UPPER "E3F22F87-0B68-3B06-A845-8402D70B8FE9"
#define DWARF ".dSYM/Contents/Resources/DWARF/"

/* Runs snap__atos_lines into a string (malloc'd; the caller frees). */
static char *lines(int *rc, const char *arch, const char *name,
                   const char *path, const char *uuid, uint64_t base,
                   const uint64_t *pcs, size_t n) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    abort();
  *rc = snap__atos_lines(f, arch, name, path, uuid, base, pcs, n);
  fclose(f);
  return buf;
}

static void expect(const char *what, const char *arch, const char *name,
                   const char *path, const char *uuid, uint64_t base,
                   const uint64_t *pcs, size_t n, const char *want) {
  int rc;
  char *got = lines(&rc, arch, name, path, uuid, base, pcs, n);
  CHECK_EQ(rc, 0);
  CHECK(strcmp(got, want) == 0, "%s:\n got:  [%s]\n want: [%s]", what, got,
        want);
  free(got);
}

static void expect_error(const char *what, int want_rc, const char *arch,
                         const char *name, const char *path, const char *uuid,
                         const uint64_t *pcs, size_t n) {
  int rc;
  char *got = lines(&rc, arch, name, path, uuid, 0x1000, pcs, n);
  CHECK(rc == want_rc, "%s: rc %d, want %d", what, rc, want_rc);
  CHECK(got[0] == '\0', "%s: wrote [%s]", what, got);
  free(got);
}

static void test_layouts(void) {
  const uint64_t pc[] = {0x1000effdcull};
  /* TN2151's example: an iOS app's executable, App.app/App. */
  expect("iOS app", "arm64", "TheElements",
         "/private/var/containers/Bundle/Application/"
         "3227EEF3-1F31-43C9-B436-36630DF855D2/TheElements.app/TheElements",
         UUID_LOWER, 0x1000e4000ull, pc, 1,
         "# TheElements arm64 " UUID_UPPER
         " /private/var/containers/Bundle/Application/"
         "3227EEF3-1F31-43C9-B436-36630DF855D2/TheElements.app/TheElements\n"
         "mdfind \"com_apple_xcode_dsym_uuids == " UUID_UPPER "\"\n"
         "atos -arch arm64 -o TheElements.app" DWARF "TheElements"
         " -l 0x1000e4000 0x1000effdc\n");

  /* macOS app with spaces: App.app/Contents/MacOS/App, quoted. */
  const uint64_t pcs3[] = {0x10a001000ull, 0x10a0020f0ull, 0x10a003ffeull};
  expect("macOS app", "x86_64", "My App",
         "/Applications/My App.app/Contents/MacOS/My App", UUID_UPPER,
         0x10a000000ull, pcs3, 3,
         "# My App x86_64 " UUID_UPPER
         " /Applications/My App.app/Contents/MacOS/My App\n"
         "mdfind \"com_apple_xcode_dsym_uuids == " UUID_UPPER "\"\n"
         "atos -arch x86_64 -o 'My App.app" DWARF "My App'"
         " -l 0x10a000000 0x10a001000 0x10a0020f0 0x10a003ffe\n");

  /* A framework, flat (iOS) and versioned (macOS); arm64e. */
  expect("iOS framework", "arm64e", NULL,
         "/var/containers/Bundle/Application/X/A.app/Frameworks/"
         "Foo.framework/Foo",
         UUID_UPPER, 0x104f80000ull, pc, 1,
         "# Foo arm64e " UUID_UPPER
         " /var/containers/Bundle/Application/X/A.app/Frameworks/"
         "Foo.framework/Foo\n"
         "mdfind \"com_apple_xcode_dsym_uuids == " UUID_UPPER "\"\n"
         "atos -arch arm64e -o Foo.framework" DWARF "Foo"
         " -l 0x104f80000 0x1000effdc\n");
  expect("macOS framework", "arm64", "Foo",
         "/Applications/A.app/Contents/Frameworks/Foo.framework/Versions/A/"
         "Foo",
         UUID_UPPER, 0x104f80000ull, pc, 1,
         "# Foo arm64 " UUID_UPPER
         " /Applications/A.app/Contents/Frameworks/Foo.framework/Versions/A/"
         "Foo\n"
         "mdfind \"com_apple_xcode_dsym_uuids == " UUID_UPPER "\"\n"
         "atos -arch arm64 -o Foo.framework" DWARF "Foo"
         " -l 0x104f80000 0x1000effdc\n");

  /* A loose dylib inside an app is its own product: libx.dylib.dSYM,
     not the app's. No path: the name alone. aarch64 is arm64. */
  expect("dylib", "arm64", "libx.dylib",
         "/var/containers/Bundle/Application/X/A.app/Frameworks/libx.dylib",
         UUID_UPPER, 0x1000ull, pc, 1,
         "# libx.dylib arm64 " UUID_UPPER
         " /var/containers/Bundle/Application/X/A.app/Frameworks/"
         "libx.dylib\n"
         "mdfind \"com_apple_xcode_dsym_uuids == " UUID_UPPER "\"\n"
         "atos -arch arm64 -o libx.dylib" DWARF "libx.dylib"
         " -l 0x1000 0x1000effdc\n");
  expect("no path", "aarch64", "libx.dylib", NULL, UUID_UPPER, 0x1000ull, pc, 1,
         "# libx.dylib arm64 " UUID_UPPER "\n"
         "mdfind \"com_apple_xcode_dsym_uuids == " UUID_UPPER "\"\n"
         "atos -arch arm64 -o libx.dylib" DWARF "libx.dylib"
         " -l 0x1000 0x1000effdc\n");
  /* An executable whose name is not its bundle's: its own name. */
  expect("renamed executable", "arm64", "Other", "/x/App.app/Other", NULL,
         0x1000ull, pc, 1,
         "# Other arm64 (no UUID: no dSYM can be matched to it) "
         "/x/App.app/Other\n"
         "atos -arch arm64 -o Other" DWARF "Other -l 0x1000 0x1000effdc\n");
}

static void test_refusals(void) {
  const uint64_t pc[] = {0x2000};
  expect_error("unknown arch", SNAP_EINVAL, "armv7", "a", NULL, UUID_UPPER, pc,
               1);
  expect_error("NULL arch", SNAP_EINVAL, NULL, "a", NULL, UUID_UPPER, pc, 1);
  expect_error("uuid with a quote", SNAP_EINVAL, "arm64", "a", NULL,
               UUID_UPPER "\"; touch /tmp/x; \"", pc, 1);
  expect_error("short uuid", SNAP_EINVAL, "arm64", "a", NULL,
               "E3F22F87-0B68-3B06-A845", pc, 1);
  expect_error("uuid not hex", SNAP_EINVAL, "arm64", "a", NULL,
               "G3F22F87-0B68-3B06-A845-8402D70B8FE9", pc, 1);
  expect_error("uuid dashes misplaced", SNAP_EINVAL, "arm64", "a", NULL,
               "E3F22F870-B68-3B06-A845-8402D70B8FE9", pc, 1);
  expect_error("no name", SNAP_EINVAL, "arm64", NULL, NULL, UUID_UPPER, pc, 1);
  expect_error("empty name", SNAP_EINVAL, "arm64", "", "/x/", UUID_UPPER, pc,
               1);
  expect_error("pcs NULL", SNAP_EINVAL, "arm64", "a", NULL, UUID_UPPER, NULL,
               2);
  /* No frames: nothing to run (atos without addresses reads stdin). */
  expect_error("no pcs", 0, "arm64", "a", NULL, UUID_UPPER, NULL, 0);
  CHECK_EQ(snap__atos_lines(NULL, "arm64", "a", NULL, NULL, 0, pc, 1),
           SNAP_EINVAL);

  /* A write that fails: /dev/full takes nothing. */
  FILE *full = fopen("/dev/full", "w");
  if (full) {
    CHECK_EQ(
        snap__atos_lines(full, "arm64", "a", NULL, UUID_UPPER, 0x1000, pc, 1),
        SNAP_EIO);
    CHECK_EQ(snap__shell_word(full, "x"), 0 /* buffered, not yet failed */);
    fclose(full);
  }
}

/* The quoting, judged by sh: the output run with atos and mdfind as
   functions that print each argument between brackets. */
static char *run_sh(const char *dir, const char *script_path) {
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "cd %s && /bin/sh -c 'atos() { for a; do printf \"[%%s]\" \"$a\"; "
           "done; echo; }; mdfind() { atos \"$@\"; }; . \"$0\"' %s",
           dir, script_path);
  FILE *p = popen(cmd, "r");
  if (!p)
    return NULL;
  static char out[8192];
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  pclose(p);
  return out;
}

static void test_shell(void) {
  char dir[] = "/tmp/test_atos_XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(0, "mkdtemp failed");
    return;
  }
  char marker[128], script[128];
  snprintf(marker, sizeof marker, "%s/pwned", dir);
  snprintf(script, sizeof script, "%s/lines.sh", dir);

  /* A name with a quote, $(...), a backtick and a command after a ';'
     (sh runs in dir: each would create dir/pwned); the path the same. */
  const char *name = "it's $(touch pwned) `touch pwned`; touch pwned";
  char path[512];
  snprintf(path, sizeof path, "/x/%s", name);
  const uint64_t pcs[] = {0x1234, 0xabcdef};
  FILE *f = fopen(script, "w");
  CHECK(f != NULL, "cannot write %s", script);
  if (!f)
    return;
  CHECK_EQ(snap__atos_lines(f, "arm64", NULL, path, UUID_LOWER, 0x1000, pcs, 2),
           0);
  fclose(f);

  char want[1024];
  snprintf(want, sizeof want,
           "[com_apple_xcode_dsym_uuids == " UUID_UPPER "]\n"
           "[-arch][arm64][-o][%s" DWARF "%s][-l][0x1000][0x1234][0xabcdef]\n",
           name, name);
  const char *got = run_sh(dir, script);
  CHECK(got && strcmp(got, want) == 0, "sh saw:\n[%s]\nwant:\n[%s]",
        got ? got : "(popen failed)", want);
  CHECK(access(marker, F_OK) != 0, "a command in the report ran");

  /* A control character in the dSYM's name (a newline would break the
     command's line, ESC or C1 reach the terminal inside the quotes): no
     line at all, and the caller says why. */
  static const char *const hostile[] = {"a\ntouch pwned", "a\x1b[2J",
                                        "a\xc2\x9b[31m", "a\r", "a\xff"};
  for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
    char *text = NULL;
    size_t text_len = 0;
    FILE *h = open_memstream(&text, &text_len);
    CHECK_EQ(snap__atos_lines(h, "arm64", hostile[i], NULL, UUID_LOWER, 0x1000,
                              pcs, 2),
             SNAP_EINVAL);
    fclose(h);
    CHECK(text_len == 0, "hostile name %zu: wrote [%s]", i, text);
    free(text);
  }

  /* snap__shell_word alone: plain words stay, others are quoted. */
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  snap__shell_word(m, "a-b_c.d/e:f,g@h%i+j=k");
  fputc(' ', m);
  snap__shell_word(m, "");
  fputc(' ', m);
  snap__shell_word(m, "a b");
  fputc(' ', m);
  snap__shell_word(m, "'");
  fputc(' ', m);
  snap__shell_word(m, "~x");
  fclose(m);
  CHECK(strcmp(buf, "a-b_c.d/e:f,g@h%i+j=k '' 'a b' ''\\''' '~x'") == 0,
        "shell words [%s]", buf);
  free(buf);

  unlink(marker);
  unlink(script);
  rmdir(dir);
}

int main(void) {
  test_layouts();
  test_refusals();
  test_shell();
  return check_result("test_atos");
}
