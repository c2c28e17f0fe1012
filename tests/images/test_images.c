/*
 * test_images.c — the image table: executable ranges agree with the dynamic
 * linker's dladdr (the oracle), build ids agree with binutils' readelf -n
 * (the vdso's too, copied out of memory into a file), app-or-system follows
 * the prefix rule, and the table follows dlopen/dlclose of a library built
 * for this test.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "check.h"
#include "stacksnap.h"

#ifndef TEST_LIB_PATH
#error "TEST_LIB_PATH must name the test library"
#endif

#ifndef TEST_READELF
#error "TEST_READELF must name binutils' readelf"
#endif

static int g_data[64] = {1}; /* in the executable's data segment */

/* The build id `readelf -n` prints for a copy of FILE, into out. A copy
   made by this process: under qemu-user (-L sysroot) the guest's
   /lib/libc.so.6 is the sysroot's, while readelf, a host program, would
   read the host's. */
static bool readelf_build_id(const char *file, char *out, size_t size) {
  char copy[] = "/tmp/snap_images_copy.XXXXXX";
  int fd = mkstemp(copy);
  FILE *in = fopen(file, "rb");
  bool copied = fd >= 0 && in;
  char buf[65536];
  for (size_t n; copied && (n = fread(buf, 1, sizeof buf, in)) > 0;)
    copied = write(fd, buf, n) == (ssize_t)n;
  if (in)
    fclose(in);
  if (fd >= 0)
    close(fd);
  char cmd[4200], line[512];
  snprintf(cmd, sizeof cmd, "'%s' -n '%s' 2>/dev/null", TEST_READELF, copy);
  FILE *p = popen(cmd, "r");
  bool found = false;
  while (p && fgets(line, sizeof line, p)) {
    const char *at = strstr(line, "Build ID: ");
    if (at && !found) {
      snprintf(out, size, "%s", at + 10);
      out[strcspn(out, "\r\n ")] = '\0';
      found = true;
    }
  }
  if (p)
    pclose(p);
  unlink(copy);
  return copied && found;
}

/* The vdso has no file: its image is copied out of memory into one, and
   readelf reads that. Where there is no vdso (or it has no build id
   note), nothing is claimed. */
static void check_vdso(void) {
  uintptr_t ehdr = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  if (!ehdr)
    return;
  const ElfW(Ehdr) *eh = (const void *)ehdr;
  const ElfW(Phdr) *ph = (const void *)(ehdr + eh->e_phoff);
  uintptr_t text = 0, bias = 0, end = 0;
  bool has_text = false;
  for (int i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
      bias = ehdr - ph[i].p_vaddr;
    if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
      text = ph[i].p_vaddr;
      has_text = true;
    }
  }
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > end)
      end = ph[i].p_offset + ph[i].p_filesz;
  /* The section headers too (LLVM's readelf refuses a file without them),
     when they lie in the pages the segments already span: the kernel maps
     the whole vdso image. */
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t sh_end = eh->e_shoff + (uintptr_t)eh->e_shnum * eh->e_shentsize;
  if (sh_end > end && sh_end <= (end + page - 1) / page * page)
    end = sh_end;
  snap_image_info_t info = {.size = sizeof info};
  if (!has_text || snap_image_lookup(bias + text, &info) != SNAP_OK)
    return; /* a vdso the loader does not list (qemu-user's) */
  char path[] = "/tmp/snap_vdso.XXXXXX", want[200];
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  if (fd < 0)
    return;
  bool written = write(fd, (const void *)ehdr, end) == (ssize_t)end;
  close(fd);
  bool has = written && readelf_build_id(path, want, sizeof want);
  unlink(path);
  if (!has) {
    CHECK(info.build_id == NULL, "vdso: build id %s where readelf sees none",
          info.build_id);
    return;
  }
  CHECK(info.build_id && strcmp(info.build_id, want) == 0,
        "vdso build id %s, readelf -n says %s",
        info.build_id ? info.build_id : "-", want);
  printf("vdso %s: build id %s\n", info.name, want);
}

int main(void) {
  snap_image_info_t info = {.size = sizeof info};

  /* Our own code: in the main executable, which is the app by default. */
  CHECK_EQ(snap_image_lookup((uintptr_t)main, &info), SNAP_OK);
  Dl_info dl;
  CHECK(dladdr((void *)main, &dl) && dl.dli_fbase, "dladdr(main)");
  CHECK_EQ(info.base, (uintptr_t)dl.dli_fbase);
  CHECK(info.in_app, "main is in the app");
  CHECK(snap_is_app_address((uintptr_t)main), "main is an app address");
  CHECK(info.start <= (uintptr_t)main && (uintptr_t)main < info.end,
        "range holds main");

  /* libc: a system image, base as dladdr says. Its own strlen, looked up in
     libc.so.6: under ASan/TSan the plain symbol is the sanitizer's copy,
     linked into the test executable. */
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  uintptr_t libc_fn = libc ? (uintptr_t)dlsym(libc, "strlen") : 0;
  CHECK(libc_fn != 0, "libc's strlen");
  CHECK_EQ(snap_image_lookup(libc_fn, &info), SNAP_OK);
  CHECK(dladdr((void *)libc_fn, &dl) && dl.dli_fbase, "dladdr(strlen)");
  CHECK_EQ(info.base, (uintptr_t)dl.dli_fbase);
  CHECK(!info.in_app, "libc is not the app");
  CHECK(!snap_is_app_address(libc_fn), "libc is not app code");
  CHECK(strstr(info.name, "libc") != NULL, "libc's name: %s", info.name);

  /* The build id, as binutils' readelf -n prints it for the same file
     (the oracle), and an extent that holds the image's data too. */
  CHECK_EQ(snap_image_lookup((uintptr_t)main, &info), SNAP_OK);
  char want[200];
  CHECK(readelf_build_id(info.path, want, sizeof want), "readelf -n %s",
        info.path);
  CHECK(info.build_id && strcmp(info.build_id, want) == 0,
        "build id %s, readelf -n says %s", info.build_id ? info.build_id : "-",
        want);
  CHECK(info.base + info.image_size >= (uintptr_t)&g_data + sizeof g_data &&
            (uintptr_t)&g_data >= info.base,
        "extent [0x%zx, +0x%zx) does not hold the image's data", info.base,
        info.image_size);
  CHECK_EQ(snap_image_lookup(libc_fn, &info), SNAP_OK);
  CHECK(readelf_build_id(info.path, want, sizeof want), "readelf -n %s",
        info.path);
  CHECK(info.build_id && strcmp(info.build_id, want) == 0,
        "libc build id %s, readelf -n says %s",
        info.build_id ? info.build_id : "-", want);
  check_vdso();

  /* Not code at all. */
  int local;
  CHECK_EQ(snap_image_lookup((uintptr_t)&local, &info), SNAP_EINVAL);
  CHECK_EQ(snap_image_lookup(0, &info), SNAP_EINVAL);
  CHECK_EQ(snap_image_lookup((uintptr_t)main, NULL), SNAP_EINVAL);
  CHECK(!snap_is_app_address(0), "0");

  /* dlopen: the new library is found, and is app code (it sits next to
     the test executable); dlclose: gone. */
  void *h = dlopen(TEST_LIB_PATH, RTLD_NOW);
  CHECK(h != NULL, "dlopen %s: %s", TEST_LIB_PATH, dlerror());
  if (h) {
    void *fn = dlsym(h, "snap_test_lib_function");
    CHECK(fn != NULL, "dlsym");
    CHECK_EQ(snap_image_lookup((uintptr_t)fn, &info), SNAP_OK);
    CHECK(strstr(info.path, "libsnap_test_images") != NULL, "path %s",
          info.path);
    CHECK(info.in_app, "a library in the app's tree is app code");
    CHECK(snap_is_app_address((uintptr_t)fn), "and snap_is_app_address");

    /* Prefixes: only libc's directory is the app now. */
    const char *libc_dir[] = {"/lib", "/usr/lib"};
    CHECK_EQ(snap_set_app_image_prefixes(libc_dir, 2), SNAP_OK);
    CHECK(!snap_is_app_address((uintptr_t)fn), "prefix rule: not app");
    CHECK(snap_is_app_address(libc_fn), "prefix rule: libc is");
    CHECK_EQ(snap_set_app_image_prefixes(NULL, 0), SNAP_OK);
    CHECK(snap_is_app_address((uintptr_t)fn), "default rule restored");

    uintptr_t addr = (uintptr_t)fn;
    CHECK_EQ(dlclose(h), 0);
    CHECK_EQ(snap_image_lookup(addr, &info), SNAP_EINVAL);
    CHECK(!snap_is_app_address(addr), "unloaded");
  }

  /* Bad prefixes. */
  const char *bad[] = {"/ok", NULL};
  const char *empty[] = {""};
  CHECK_EQ(snap_set_app_image_prefixes(bad, 2), SNAP_EINVAL);
  CHECK_EQ(snap_set_app_image_prefixes(empty, 1), SNAP_EINVAL);
  CHECK_EQ(snap_set_app_image_prefixes(NULL, 3), SNAP_EINVAL);
  CHECK_EQ(snap_set_app_image_prefixes(bad, -1), SNAP_EINVAL);
  CHECK_EQ(snap_set_app_image_prefixes(bad, 65), SNAP_EINVAL);
  CHECK(snap_is_app_address((uintptr_t)main), "failed calls change nothing");
  return check_result("test_images");
}
