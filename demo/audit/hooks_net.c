/*
 * hooks_net.c — the interposed network and name-resolution functions:
 * connect, sendto and sendmsg with a destination (a datagram to a peer),
 * getaddrinfo and the gethostbyname family.
 *
 * Each hook calls the real function outside the guard (an NSS module
 * opening /etc/hosts inside getaddrinfo is the program's call too, and is
 * recorded as such), then records the call with its peer or host as the
 * resource and its result: "ok", the errno, the EAI_* code, or h_errno.
 * connect, sendto and sendmsg are async-signal-safe, and so is what their
 * hooks run (the peer is formatted by hand); the name lookups are not,
 * and their hooks may use snprintf.
 * Must not: change the call's result or errno; record a call the library
 * itself made. A missing real function fails as the call would (ENOSYS,
 * EAI_SYSTEM, NO_RECOVERY), never crashes.
 */
#include "audit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#define RESOURCE_CHARS 512

/* Text appended at out[*len], within size (one byte kept for the NUL);
   what does not fit is cut. By hand, as every formatter here: connect,
   sendto and sendmsg are async-signal-safe, and snprintf and inet_ntop
   are not. */
static void add(char *out, size_t size, size_t *len, const char *s, size_t n) {
  for (size_t i = 0; i < n && *len + 1 < size; i++)
    out[(*len)++] = s[i];
  out[*len] = '\0';
}

static void add_str(char *out, size_t size, size_t *len, const char *s) {
  add(out, size, len, s, strlen(s));
}

static void add_dec(char *out, size_t size, size_t *len, unsigned v) {
  char d[SNAP__DEC_MAX];
  add(out, size, len, d, snap__dec_u64(d, v));
}

static void add_ipv4(char *out, size_t size, size_t *len,
                     const unsigned char *a) {
  for (int i = 0; i < 4; i++) {
    if (i)
      add(out, size, len, ".", 1);
    add_dec(out, size, len, a[i]);
  }
}

/* RFC 5952, as inet_ntop writes it: lowercase hex without leading zeros,
   the longest run of two or more zero groups (the first of equals) as
   "::", and the IPv4-mapped and -compatible forms with a dotted tail. */
static void add_ipv6(char *out, size_t size, size_t *len,
                     const unsigned char *a) {
  unsigned g[8];
  for (int i = 0; i < 8; i++)
    g[i] = (unsigned)a[2 * i] << 8 | a[2 * i + 1];
  int best = -1, best_len = 0;
  for (int i = 0; i < 8;) {
    int j = i;
    while (j < 8 && g[j] == 0)
      j++;
    if (j - i > best_len && j - i >= 2) {
      best = i;
      best_len = j - i;
    }
    i = j > i ? j : i + 1;
  }
  /* ::ffff:a.b.c.d and ::a.b.c.d (glibc's test: ::1 stays hex) */
  bool v4 = best == 0 && (best_len == 6 || (best_len == 5 && g[5] == 0xffff));
  int groups = v4 ? 6 : 8;
  for (int i = 0; i < groups; i++) {
    if (i == best) {
      add(out, size, len, "::", 2);
      i += best_len - 1;
      continue;
    }
    if (i && i != best + best_len)
      add(out, size, len, ":", 1);
    char h[4];
    int n = 0;
    for (int shift = 12; shift >= 0; shift -= 4)
      if (n || (g[i] >> shift) & 15 || shift == 0)
        h[n++] = "0123456789abcdef"[(g[i] >> shift) & 15];
    add(out, size, len, h, (size_t)n);
  }
  if (v4) {
    if (best + best_len < 6)
      add(out, size, len, ":", 1);
    add_ipv4(out, size, len, a + 12);
  }
}

/* The peer addr names: "1.2.3.4:443", "[::1]:80", "unix:/run/x.sock",
   "unix:@abstract", or "family N". [signal-safe] */
static void describe_peer(const struct sockaddr *sa, socklen_t slen, char *out,
                          size_t size) {
  size_t len = 0;
  out[0] = '\0';
  if (!sa || slen < (socklen_t)sizeof(sa_family_t)) {
    add_str(out, size, &len, "(no address)");
  } else if (sa->sa_family == AF_INET &&
             slen >= (socklen_t)sizeof(struct sockaddr_in)) {
    const struct sockaddr_in *in = (const void *)sa;
    add_ipv4(out, size, &len, (const unsigned char *)&in->sin_addr);
    add(out, size, &len, ":", 1);
    add_dec(out, size, &len, ntohs(in->sin_port));
  } else if (sa->sa_family == AF_INET6 &&
             slen >= (socklen_t)sizeof(struct sockaddr_in6)) {
    const struct sockaddr_in6 *in6 = (const void *)sa;
    add(out, size, &len, "[", 1);
    add_ipv6(out, size, &len, (const unsigned char *)&in6->sin6_addr);
    add(out, size, &len, "]:", 2);
    add_dec(out, size, &len, ntohs(in6->sin6_port));
  } else if (sa->sa_family == AF_UNIX) {
    const struct sockaddr_un *un = (const void *)sa;
    size_t max = (size_t)slen - offsetof(struct sockaddr_un, sun_path);
    if (max > sizeof un->sun_path)
      max = sizeof un->sun_path;
    bool abstract = max > 0 && un->sun_path[0] == '\0';
    /* An abstract name starts with a NUL and is not NUL-terminated. */
    add_str(out, size, &len, abstract ? "unix:@" : "unix:");
    add(out, size, &len, un->sun_path + abstract,
        abstract ? max - 1 : strnlen(un->sun_path, max));
  } else {
    add_str(out, size, &len, "family ");
    add_dec(out, size, &len, sa->sa_family);
  }
}

/* Records a call on resource, unless this thread was inside the library.
   Keeps errno. */
static void after(bool mine, int fn, const char *resource, int result,
                  int result_errno) {
  int err = errno;
  if (!mine || !atomic_load_explicit(&audit_ready, memory_order_acquire))
    return;
  audit_check_process();
  int prev = audit_enter();
  audit_record_call(fn, resource, NULL, result, result_errno);
  audit_leave(prev);
  errno = err;
}

/* after() for a call on a peer: the peer is described only when the call
   is recorded. failed: the call failed, and errno says why. */
static void after_peer(bool mine, int fn, const struct sockaddr *addr,
                       socklen_t len, bool failed) {
  int err = errno;
  if (!mine || !atomic_load_explicit(&audit_ready, memory_order_acquire))
    return;
  audit_check_process();
  int prev = audit_enter();
  char peer[RESOURCE_CHARS];
  describe_peer(addr, len, peer, sizeof peer);
  audit_record_call(fn, peer, NULL, failed ? err : 0, 0);
  audit_leave(prev);
  errno = err;
}

#define LOOKUP(name)                                                           \
  bool mine = audit_mine();                                                    \
  name##_fn real = real_##name();

/* ---- Sockets ---------------------------------------------------------------
 */

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);
typedef ssize_t (*sendto_fn)(int, const void *, size_t, int,
                             const struct sockaddr *, socklen_t);
typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);
AUDIT_REAL(connect_fn, connect)
AUDIT_REAL(sendto_fn, sendto)
AUDIT_REAL(sendmsg_fn, sendmsg)

AUDIT_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len) {
  LOOKUP(connect)
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  int rc = real(fd, addr, len);
  after_peer(mine, FN_connect, addr, len, rc != 0);
  return rc;
}

/* A datagram to a peer named in the call (a connected socket's sends name
   none, and their peer was recorded by connect). */
AUDIT_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
                            const struct sockaddr *addr, socklen_t len) {
  LOOKUP(sendto)
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  ssize_t rc = real(fd, buf, n, flags, addr, len);
  if (addr && len > 0)
    after_peer(mine, FN_sendto, addr, len, rc < 0);
  return rc;
}

AUDIT_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
  LOOKUP(sendmsg)
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  ssize_t rc = real(fd, msg, flags);
  if (msg && msg->msg_name && msg->msg_namelen > 0)
    after_peer(mine, FN_sendmsg, msg->msg_name, msg->msg_namelen, rc < 0);
  return rc;
}

/* ---- Names -----------------------------------------------------------------
 */

typedef int (*getaddrinfo_fn)(const char *, const char *,
                              const struct addrinfo *, struct addrinfo **);
typedef struct hostent *(*gethostbyname_fn)(const char *);
typedef struct hostent *(*gethostbyname2_fn)(const char *, int);
typedef int (*gethostbyname_r_fn)(const char *, struct hostent *, char *,
                                  size_t, struct hostent **, int *);
typedef int (*gethostbyname2_r_fn)(const char *, int, struct hostent *, char *,
                                   size_t, struct hostent **, int *);
AUDIT_REAL(getaddrinfo_fn, getaddrinfo)
AUDIT_REAL(gethostbyname_fn, gethostbyname)
AUDIT_REAL(gethostbyname2_fn, gethostbyname2)
AUDIT_REAL(gethostbyname_r_fn, gethostbyname_r)
AUDIT_REAL(gethostbyname2_r_fn, gethostbyname2_r)

AUDIT_EXPORT int getaddrinfo(const char *node, const char *service,
                             const struct addrinfo *hints,
                             struct addrinfo **res) {
  LOOKUP(getaddrinfo)
  if (!real) {
    errno = ENOSYS;
    return EAI_SYSTEM;
  }
  int rc = real(node, service, hints, res);
  if (mine) {
    int err = errno;
    char host[RESOURCE_CHARS];
    snprintf(host, sizeof host, "%s%s%s", node ? node : "(null)",
             service ? ":" : "", service ? service : "");
    after(mine, FN_getaddrinfo, host, rc, rc == EAI_SYSTEM ? err : 0);
    errno = err; /* snprintf may have set it */
  }
  return rc;
}

AUDIT_EXPORT struct hostent *gethostbyname(const char *name) {
  LOOKUP(gethostbyname)
  if (!real) {
    h_errno = NO_RECOVERY;
    return NULL;
  }
  struct hostent *h = real(name);
  if (mine)
    after(mine, FN_gethostbyname, name ? name : "(null)", h ? 0 : h_errno, 0);
  return h;
}

AUDIT_EXPORT struct hostent *gethostbyname2(const char *name, int af) {
  LOOKUP(gethostbyname2)
  if (!real) {
    h_errno = NO_RECOVERY;
    return NULL;
  }
  struct hostent *h = real(name, af);
  if (mine)
    after(mine, FN_gethostbyname2, name ? name : "(null)", h ? 0 : h_errno, 0);
  return h;
}

/* The reentrant forms' result: their return value is an errno (ERANGE: a
   buffer too small, which callers retry), *herr the lookup's outcome. */
static int r_result(int rc, struct hostent **result, int *herr) {
  if (rc == 0 && result && *result)
    return 0;
  return herr && *herr ? *herr : NETDB_INTERNAL;
}

AUDIT_EXPORT int gethostbyname_r(const char *name, struct hostent *ret,
                                 char *buf, size_t size,
                                 struct hostent **result, int *herr) {
  LOOKUP(gethostbyname_r)
  if (!real)
    return ENOSYS;
  int rc = real(name, ret, buf, size, result, herr);
  if (mine)
    after(mine, FN_gethostbyname_r, name ? name : "(null)",
          r_result(rc, result, herr), 0);
  return rc;
}

AUDIT_EXPORT int gethostbyname2_r(const char *name, int af, struct hostent *ret,
                                  char *buf, size_t size,
                                  struct hostent **result, int *herr) {
  LOOKUP(gethostbyname2_r)
  if (!real)
    return ENOSYS;
  int rc = real(name, af, ret, buf, size, result, herr);
  if (mine)
    after(mine, FN_gethostbyname2_r, name ? name : "(null)",
          r_result(rc, result, herr), 0);
  return rc;
}
