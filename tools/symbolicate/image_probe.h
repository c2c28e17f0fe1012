/*
 * image_probe.h — what a report may name a file by, checked before any
 * file is read: a build id of plausible form, and a file's own build id
 * read in a few bounded pieces (its build-id note), never the file whole.
 */
#ifndef SNAP_TOOLS_IMAGE_PROBE_H
#define SNAP_TOOLS_IMAGE_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A build id as a report may give it: hex (either case) of 8 to 64 bytes
   (16 to 128 digits, even). GNU ld writes 20 (sha1) by default, 16 (md5,
   uuid) or 8 (fast); a Mach-O LC_UUID is 16 bytes, written 8-4-4-4-12
   (Apple reports are named on a Mac: atos.c checks their form). On true,
   out (at least 129 bytes) receives it in lowercase, as ELF build ids are
   compared and as the .build-id tree names them. */
#define SNAP__BUILD_ID_MIN_BYTES 8
#define SNAP__BUILD_ID_MAX_BYTES 64
bool snap__build_id_plausible(const char *id, char *out, size_t out_size);

/* The probe reads at most this many bytes of a file in all: the ELF
   header, its section and program headers and the notes they point to,
   each piece bounded (image_probe.c). */
#define SNAP__PROBE_MAX_READ ((size_t)1 << 20)

/* Reads len bytes at off into buf: 0, or -1 when it cannot (all of them). */
typedef int (*snap__probe_read_fn)(void *ctx, uint64_t off, void *buf,
                                   size_t len);

typedef struct snap__probe {
  uint8_t id[SNAP__BUILD_ID_MAX_BYTES];
  size_t id_len; /* 0: no build id found */
  size_t bytes;  /* bytes read, at most SNAP__PROBE_MAX_READ */
  bool capped;   /* a table or note was too big to read, and skipped */
} snap__probe_t;

/* The GNU build id of an ELF64 little-endian file of file_size bytes,
   found as the full reader finds it (snap__elf_build_id: SHT_NOTE
   sections, else PT_NOTE segments) but through read, in bounded pieces.
   0 with out->id_len > 0, or -1 (not ELF64 LE, no note, or only in a
   piece over the bounds: out->capped). */
int snap__probe_build_id(snap__probe_read_fn read, void *ctx,
                         uint64_t file_size, snap__probe_t *out);

#endif
