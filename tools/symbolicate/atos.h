/*
 * atos.h — the shell lines a Mac user runs to name one Apple image's frames
 * of a report: find the image's dSYM by its UUID with Spotlight, then
 * atos(1) with the image's load address and the frames' pcs.
 *
 * Pure text formatting for stacksnap-symbolicate (no Apple tool runs here:
 * the report may be read on Linux). The facts it follows are in
 * docs/apple.md ("Contract: naming an Apple report later", [U1]..[U5]).
 */
#ifndef SNAP_TOOLS_SYMBOLICATE_ATOS_H
#define SNAP_TOOLS_SYMBOLICATE_ATOS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes, for one image of an Apple report:
     # <name> <arch> <uuid> <path>
     mdfind "com_apple_xcode_dsym_uuids == <UUID>"
     atos -arch <arch> -o <Bundle>.dSYM/Contents/Resources/DWARF/<name> \
          -l 0x<base> 0x<pc> ...
   (the atos line is one line). arch: "arm64", "arm64e" or "x86_64" as atos
   spells them ("aarch64" is taken as arm64). image_name: the binary's file
   name (NULL: the last component of image_path). image_path may be NULL.
   uuid: LC_UUID in its 8-4-4-4-12 text form (either case; written
   uppercase, as Spotlight indexes it), or NULL/"" if the image has none —
   then no mdfind line is written and the comment says the dSYM cannot be
   matched. <Bundle> is Xcode's dSYM name, the product's: "App.app" for
   .../App.app/App and .../App.app/Contents/MacOS/App, "Foo.framework" for
   .../Foo.framework/Foo (or Versions/A/Foo), else the file name. Every
   word taken from the report is shell-quoted where it needs to be, and the
   comment line escapes control characters, so no report text can run as
   a command. n == 0 writes nothing (atos without addresses would wait
   for input).

   Returns 0, SNAP_EINVAL (out NULL, pcs NULL with n > 0, an arch atos does
   not know, a uuid that is not a UUID, no name at all, a dSYM name with
   a control character or invalid UTF-8), or SNAP_EIO when a
   write to out failed. [setup] */
int snap__atos_lines(FILE *out, const char *arch, const char *image_name,
                     const char *image_path, const char *uuid, uint64_t base,
                     const uint64_t *pcs, size_t n);

/* Writes s as one POSIX shell word: unchanged if it is made only of
   characters no shell treats specially ([A-Za-z0-9_@%+=:,./-], not
   empty), else in single quotes with each ' written as '\''. Returns 0 or
   SNAP_EIO. [setup] */
int snap__shell_word(FILE *out, const char *s);

#endif /* SNAP_TOOLS_SYMBOLICATE_ATOS_H */
