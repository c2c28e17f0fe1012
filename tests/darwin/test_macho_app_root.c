/*
 * test_macho_app_root.c — which directory tree is "the app"
 * (snap__macho_app_root, src/platform/darwin/macho_ranges.c), on Linux,
 * over the executable paths the real layouts give: an iOS device app, the
 * simulator's, a macOS app, an app extension on each, Mac Catalyst, a
 * command-line tool, and paths that only look like bundles.
 */
#include <string.h>

#include "check.h"
#include "platform/darwin/macho_ranges.h"

static void expect(const char *exe, const char *root) {
  char buf[512];
  bool ok = snap__macho_app_root(exe, buf, sizeof buf);
  CHECK(ok && strcmp(buf, root) == 0, "%s -> %s (want %s)", exe,
        ok ? buf : "(false)", root);
}

int main(void) {
  /* iOS device: the app's directory holds Frameworks/ and PlugIns/. */
  expect("/private/var/containers/Bundle/Application/"
         "5B2C0E71-1D3A-4F5B-9C1E-2E7F3A9D4C11/MyApp.app/MyApp",
         "/private/var/containers/Bundle/Application/"
         "5B2C0E71-1D3A-4F5B-9C1E-2E7F3A9D4C11/MyApp.app/");
  /* An extension is part of its app (frameworks live in App.app/Frameworks). */
  expect("/private/var/containers/Bundle/Application/5B2C/MyApp.app/PlugIns/"
         "Share.appex/Share",
         "/private/var/containers/Bundle/Application/5B2C/MyApp.app/");
  /* Simulator. */
  expect("/Users/dev/Library/Developer/CoreSimulator/Devices/9F1E/data/"
         "Containers/Bundle/Application/77AA/MyApp.app/MyApp",
         "/Users/dev/Library/Developer/CoreSimulator/Devices/9F1E/data/"
         "Containers/Bundle/Application/77AA/MyApp.app/");
  /* macOS: the executable is in Contents/MacOS, frameworks in
     Contents/Frameworks; the bundle is the root. */
  expect("/Applications/My App.app/Contents/MacOS/My App",
         "/Applications/My App.app/");
  expect("/Applications/My App.app/Contents/PlugIns/Widget.appex/Contents/"
         "MacOS/Widget",
         "/Applications/My App.app/");
  /* Mac Catalyst, built from Xcode. */
  expect("/Users/dev/Library/Developer/Xcode/DerivedData/MyApp-abc/Build/"
         "Products/Debug-maccatalyst/MyApp.app/Contents/MacOS/MyApp",
         "/Users/dev/Library/Developer/Xcode/DerivedData/MyApp-abc/Build/"
         "Products/Debug-maccatalyst/MyApp.app/");
  /* A command-line tool: its directory. */
  expect("/usr/local/bin/tool", "/usr/local/bin/");
  /* ".app/" that is not a bundle name: a directory called exactly ".app". */
  expect("/opt/.app/bin/tool", "/opt/.app/bin/");
  /* No directory at all. */
  expect("tool", "");
  /* Too small a buffer is an answer, not a truncation. */
  char tiny[8];
  CHECK(!snap__macho_app_root("/Applications/X.app/Contents/MacOS/X", tiny,
                              sizeof tiny),
        "truncated root accepted");
  return check_result("test_macho_app_root");
}
