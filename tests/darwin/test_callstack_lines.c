/*
 * test_callstack_lines.c — the parser of Apple's call-stack lines
 * (src/platform/darwin/callstack_lines.c), on Linux.
 *
 * Two sources of lines:
 *  - lines as Apple prints them (+[NSThread callStackSymbols], exception
 *    backtraces, backtrace_symbols): Objective-C methods with categories,
 *    mangled Swift and C++, images whose names hold spaces or run past the
 *    35-column field, unknown images ("???"), no symbol ("0x0 + <address>",
 *    "<image> + <offset from the image base>", older Libc's "0x<image
 *    base> + <offset>"), "<redacted>" and the image UUID Libc prints in
 *    its place;
 *  - lines we format with Libc's own format string, "%-4d%-35s 0x%016lx %s
 *    + %lu", over the same names, at every index width.
 * And lines that are not in the layout, which must be rejected whole.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "platform/darwin/callstack_lines.h"

typedef struct expect {
  const char *line;
  unsigned long index;
  const char *image; /* NULL: "???" */
  uint64_t addr;
  const char *symbol; /* NULL: no name */
  uint64_t offset;
} expect_t;

/* As printed on devices and Macs (64-bit: 16 hex digits). */
static const expect_t printed[] = {
    {"0   CoreFoundation                      0x00007fff204a16af "
     "__exceptionPreprocess + 242",
     0, "CoreFoundation", 0x00007fff204a16afull, "__exceptionPreprocess", 242},
    {"1   libobjc.A.dylib                     0x00007fff201d93c9 "
     "objc_exception_throw + 48",
     1, "libobjc.A.dylib", 0x00007fff201d93c9ull, "objc_exception_throw", 48},
    {"2   CoreFoundation                      0x00007fff2051fc8b "
     "-[NSObject(NSObject) __retain_OA] + 0",
     2, "CoreFoundation", 0x00007fff2051fc8bull,
     "-[NSObject(NSObject) __retain_OA]", 0},
    {"3   UIKitCore                           0x00000001a1f2f5d8 "
     "-[UIApplication _run] + 1012",
     3, "UIKitCore", 0x00000001a1f2f5d8ull, "-[UIApplication _run]", 1012},
    {"4   MyApp                               0x0000000102a5c1e4 "
     "$s5MyApp11ContentViewV4bodyQrvg + 120",
     4, "MyApp", 0x0000000102a5c1e4ull, "$s5MyApp11ContentViewV4bodyQrvg", 120},
    {"5   libc++abi.dylib                     0x00000001a0e8f2c0 "
     "_ZSt11__terminatePFvvE + 16",
     5, "libc++abi.dylib", 0x00000001a0e8f2c0ull, "_ZSt11__terminatePFvvE", 16},
    {"6   ???                                 0x0000000000000000 0x0 + 0", 6,
     NULL, 0, NULL, 0},
    {"7   dyld                                0x0000000100b6d4d0 start + 444",
     7, "dyld", 0x0000000100b6d4d0ull, "start", 444},
    /* No image, no symbol: the offset is the address itself, in decimal. */
    {"8   ???                                 0x000000010a8e3f2c 0x0 + "
     "4472061740",
     8, NULL, 0x000000010a8e3f2cull, NULL, 4472061740ull},
    /* An image with spaces in its name. */
    {"9   Google Chrome Framework             0x0000000110d2a8b5 ChromeMain + "
     "261",
     9, "Google Chrome Framework", 0x0000000110d2a8b5ull, "ChromeMain", 261},
    /* A name longer than the 35-column field: one space, then the address. */
    {"10  com.apple.AppSupport.SomeVeryLongFramework 0x00000001a2b3c4d5 "
     "-[Foo bar:baz:] + 8",
     10, "com.apple.AppSupport.SomeVeryLongFramework", 0x00000001a2b3c4d5ull,
     "-[Foo bar:baz:]", 8},
    /* The image is known but no symbol: Libc today prints the image's own
       name with the offset from the image base (gen/backtrace.c)... */
    {"11  MyApp                               0x0000000102a60010 MyApp + "
     "65552",
     11, "MyApp", 0x0000000102a60010ull, NULL, 65552},
    /* ... cut to 35 characters, as the image column is... */
    {"11  com.apple.AppSupport.SomeVeryLongFr 0x00000001a2b3c4d5 "
     "com.apple.AppSupport.SomeVeryLongFr + 8",
     11, "com.apple.AppSupport.SomeVeryLongFr", 0x00000001a2b3c4d5ull, NULL, 8},
    /* ... and older Libc printed "0x<dli_saddr>" there. */
    {"11  MyApp                               0x0000000102a60010 0x102a50000 + "
     "65552",
     11, "MyApp", 0x0000000102a60010ull, NULL, 65552},
    /* Older iOS hides private shared-cache names. */
    {"12  UIKitCore                           0x00000001a1f2f5d8 <redacted> + "
     "1012",
     12, "UIKitCore", 0x00000001a1f2f5d8ull, NULL, 1012},
    /* Libc today prints the image's UUID in place of "<redacted>", with the
       offset from the image base: no function name either. */
    {"12  UIKitCore                           0x00000001a1f2f5d8 "
     "8A9C1F2E-3B4D-3E5F-9A1B-2C3D4E5F6A7B + 9876",
     12, "UIKitCore", 0x00000001a1f2f5d8ull, NULL, 9876},
    {"12  UIKitCore                           0x00000001a1f2f5d8 "
     "8a9c1f2e-3b4d-3e5f-9a1b-2c3d4e5f6a7b + 9876",
     12, "UIKitCore", 0x00000001a1f2f5d8ull, NULL, 9876},
    /* Demangled Swift as some tools print it: spaces, '#', dots. */
    {"13  MyApp                               0x0000000102a5c1e4 closure #1 in "
     "ContentView.body.getter + 120",
     13, "MyApp", 0x0000000102a5c1e4ull,
     "closure #1 in ContentView.body.getter", 120},
    /* '+' inside a name, not " + ". */
    {"14  libc++.1.dylib                      0x00000001a0e8f2c0 "
     "std::__1::basic_string<char>::operator+=(char) + 16",
     14, "libc++.1.dylib", 0x00000001a0e8f2c0ull,
     "std::__1::basic_string<char>::operator+=(char)", 16},
    /* A class method ("+[") and a trailing newline. */
    {"15  Foundation                          0x00000001a30b1c2c +[NSThread "
     "callStackSymbols] + 28\n",
     15, "Foundation", 0x00000001a30b1c2cull, "+[NSThread callStackSymbols]",
     28},
    /* An image whose name starts with a digit. */
    {"16  1Password 7                         0x0000000104c0ffee main + 64", 16,
     "1Password 7", 0x0000000104c0ffeeull, "main", 64},
    /* %-4d leaves no space after a four-digit index. */
    {"1000libsystem_kernel.dylib            0x00000001d8f2a1c4 mach_msg_trap + "
     "8",
     1000, "libsystem_kernel.dylib", 0x00000001d8f2a1c4ull, "mach_msg_trap", 8},
};

static const char *const rejected[] = {
    "",
    "garbage",
    "   ",
    /* no index */
    "UIKitCore                           0x00000001a1f2f5d8 -[A b] + 1",
    /* an address that is not 16 (or 8) digits */
    "3   UIKitCore                           0x1234 -[UIApplication _run] + 1",
    /* no offset */
    "3   UIKitCore                           0x00000001a1f2f5d8 "
    "-[UIApplication _run]",
    /* an offset that is not decimal */
    "3   UIKitCore                           0x00000001a1f2f5d8 "
    "-[UIApplication _run] + 0x10",
    /* no image */
    "3   0x00000001a1f2f5d8 -[UIApplication _run] + 1",
    /* no symbol */
    "3   UIKitCore                           0x00000001a1f2f5d8  + 12",
    /* an offset that overflows */
    "3   UIKitCore                           0x00000001a1f2f5d8 f + "
    "999999999999999999999999",
    /* the atos layout, which is not this one */
    "-[UIApplication _run] (in UIKitCore) + 1012",
};

static void check_line(const expect_t *e) {
  snap__cs_line_t l;
  bool ok = snap__cs_line_parse(e->line, strlen(e->line), &l);
  CHECK(ok, "not parsed: %s", e->line);
  if (!ok)
    return;
  CHECK(l.index == e->index, "index %lu in %s", l.index, e->line);
  if (e->image)
    CHECK(l.image && l.image_len == strlen(e->image) &&
              memcmp(l.image, e->image, l.image_len) == 0,
          "image '%.*s' in %s", (int)l.image_len, l.image ? l.image : "",
          e->line);
  else
    CHECK(l.image == NULL, "image not ??? in %s", e->line);
  CHECK((uint64_t)l.addr == e->addr, "addr %#llx in %s",
        (unsigned long long)l.addr, e->line);
  if (e->symbol)
    CHECK(l.symbol && l.symbol_len == strlen(e->symbol) &&
              memcmp(l.symbol, e->symbol, l.symbol_len) == 0,
          "symbol '%.*s' in %s", (int)l.symbol_len, l.symbol ? l.symbol : "",
          e->line);
  else
    CHECK(l.symbol == NULL, "symbol '%.*s' should be unknown in %s",
          (int)l.symbol_len, l.symbol ? l.symbol : "", e->line);
  CHECK((uint64_t)l.offset == e->offset, "offset %llu in %s",
        (unsigned long long)l.offset, e->line);
}

/* Names that merely look like the placeholders are names. */
static const expect_t lookalikes[] = {
    /* A function named like another image. */
    {"3   MyApp                               0x0000000102a60010 UIKitCore + "
     "16",
     3, "MyApp", 0x0000000102a60010ull, "UIKitCore", 16},
    /* UUID-like but not 8-4-4-4-12 hex. */
    {"3   MyApp                               0x0000000102a60010 "
     "8A9C1F2E-3B4D-3E5F-9A1B-2C3D4E5F6A7G + 16",
     3, "MyApp", 0x0000000102a60010ull, "8A9C1F2E-3B4D-3E5F-9A1B-2C3D4E5F6A7G",
     16},
    {"3   MyApp                               0x0000000102a60010 "
     "8A9C1F2E3B4D-3E5F-9A1B-2C3D4E5F6A7B- + 16",
     3, "MyApp", 0x0000000102a60010ull, "8A9C1F2E3B4D-3E5F-9A1B-2C3D4E5F6A7B-",
     16},
    /* The image's name with something after it. */
    {"3   MyApp                               0x0000000102a60010 MyAppMain + "
     "16",
     3, "MyApp", 0x0000000102a60010ull, "MyAppMain", 16},
};

/* Libc's format, for every name above and index widths 1 to 4. */
static void check_formatted(void) {
  static const unsigned long indexes[] = {0, 7, 42, 511, 1000, 4095};
  for (size_t i = 0; i < sizeof printed / sizeof printed[0]; i++) {
    const expect_t *e = &printed[i];
    if (!e->symbol || !e->image)
      continue;
    for (size_t k = 0; k < sizeof indexes / sizeof indexes[0]; k++) {
      /* "%-4d" then a name that starts with a digit is ambiguous from
         index 1000 on ("10001Password 7"): Apple's layout cannot say where
         the index ends. The provider never asks past SNAP_MAX_FRAMES. */
      if (indexes[k] >= 1000 && e->image[0] >= '0' && e->image[0] <= '9')
        continue;
      char line[512];
      snprintf(line, sizeof line, "%-4lu%-35s 0x%016llx %s + %llu", indexes[k],
               e->image, (unsigned long long)e->addr, e->symbol,
               (unsigned long long)e->offset);
      expect_t f = *e;
      f.line = line;
      f.index = indexes[k];
      check_line(&f);
    }
  }
}

/* The symbol's address is the line's address minus the offset: what the
   provider hands the core. */
static void check_symbol_address(void) {
  const char *line = "3   UIKitCore                           "
                     "0x00000001a1f2f5d8 -[UIApplication _run] + 1012";
  snap__cs_line_t l;
  CHECK(snap__cs_line_parse(line, strlen(line), &l), "parse");
  CHECK(l.addr - l.offset == (uintptr_t)0x00000001a1f2f1e4ull,
        "symbol address %#llx", (unsigned long long)(l.addr - l.offset));
}

/* The parser reads only the length it was given. */
static void check_length_bound(void) {
  const char *line = "7   dyld                                "
                     "0x0000000100b6d4d0 start + 444";
  size_t len = strlen(line);
  for (size_t n = 0; n < len; n++) {
    char buf[128];
    memcpy(buf, line, n);
    memset(buf + n, '9', sizeof buf - n); /* digits past the end */
    snap__cs_line_t l;
    bool ok = snap__cs_line_parse(buf, n, &l);
    if (ok)
      CHECK(l.offset < 444 || n == len, "truncated at %zu read past it", n);
  }
}

int main(void) {
  for (size_t i = 0; i < sizeof printed / sizeof printed[0]; i++)
    check_line(&printed[i]);
  for (size_t i = 0; i < sizeof lookalikes / sizeof lookalikes[0]; i++)
    check_line(&lookalikes[i]);
  for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++) {
    snap__cs_line_t l;
    CHECK(!snap__cs_line_parse(rejected[i], strlen(rejected[i]), &l),
          "accepted: '%s'", rejected[i]);
  }
  check_formatted();
  check_symbol_address();
  check_length_bound();
  return check_result("test_callstack_lines");
}
