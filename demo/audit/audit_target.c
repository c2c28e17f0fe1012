/*
 * audit_target.c — the demo_audit test's subject: a program whose
 * sensitive calls are known in advance, run under libstacksnap_audit.so.
 *
 * It opens the file named by argv[1] (under STACKSNAP_AUDIT_PREFIX) from
 * two distinct call sites, the first one twice through one call site, and
 * resolves "localhost" once. So the report must show exactly three sites,
 * with counts 2, 1 and 1, each naming the function below that made the
 * call. Those functions are exported and noinline so that nm lists them
 * and each is its own frame.
 *
 * Exits 0 when every call did what it should, 1 otherwise (a hook that
 * broke a call would show here, not only in the report).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

int audit_read_settings(const char *path);
int audit_read_profile(const char *path);
int audit_resolve_server(void);

NOINLINE int audit_read_settings(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return 1;
  char c;
  int rc = read(fd, &c, 1) == 1 ? 0 : 1;
  close(fd);
  KEEP_FRAME();
  return rc;
}

NOINLINE int audit_read_profile(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return 1;
  int rc = fgetc(f) == EOF;
  fclose(f);
  KEEP_FRAME();
  return rc;
}

NOINLINE int audit_resolve_server(void) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo("localhost", NULL, &hints, &res);
  if (rc == 0)
    freeaddrinfo(res);
  KEEP_FRAME();
  /* A machine without a localhost entry is not the hook's fault: the call
     was made, and that is what is audited. */
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: audit_target FILE\n");
    return 2;
  }
  int bad = 0;
  /* One call site, twice (volatile: the compiler must not unroll the loop
     into two call sites). */
  for (volatile int i = 0; i < 2; i++)
    bad |= audit_read_settings(argv[1]);
  bad |= audit_read_profile(argv[1]);
  bad |= audit_resolve_server();
  return bad;
}
