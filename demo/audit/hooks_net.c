/*
 * hooks_net.c — the interposed network and name-resolution functions:
 * connect, sendto and sendmsg with a destination (a datagram to a peer),
 * getaddrinfo and the gethostbyname family.
 *
 * Each hook calls the real function outside the guard (an NSS module
 * opening /etc/hosts inside getaddrinfo is the program's call too, and is
 * recorded as such), then records the call with its peer or host as the
 * resource and its result: "ok", the errno, the EAI_* code, or h_errno.
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

/* The peer addr names: "1.2.3.4:443", "[::1]:80", "unix:/run/x.sock",
   "unix:@abstract", or "family N". */
static void describe_peer(const struct sockaddr *sa, socklen_t len, char *out,
                          size_t size) {
  char ip[INET6_ADDRSTRLEN];
  if (!sa || len < (socklen_t)sizeof(sa_family_t)) {
    snprintf(out, size, "(no address)");
  } else if (sa->sa_family == AF_INET &&
             len >= (socklen_t)sizeof(struct sockaddr_in)) {
    const struct sockaddr_in *in = (const void *)sa;
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    snprintf(out, size, "%s:%u", ip, ntohs(in->sin_port));
  } else if (sa->sa_family == AF_INET6 &&
             len >= (socklen_t)sizeof(struct sockaddr_in6)) {
    const struct sockaddr_in6 *in6 = (const void *)sa;
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
    snprintf(out, size, "[%s]:%u", ip, ntohs(in6->sin6_port));
  } else if (sa->sa_family == AF_UNIX) {
    const struct sockaddr_un *un = (const void *)sa;
    size_t max = (size_t)len - offsetof(struct sockaddr_un, sun_path);
    if (max > sizeof un->sun_path)
      max = sizeof un->sun_path;
    bool abstract = max > 0 && un->sun_path[0] == '\0';
    /* An abstract name starts with a NUL and is not NUL-terminated. */
    snprintf(out, size, "unix:%s%.*s", abstract ? "@" : "",
             (int)(abstract ? max - 1 : strnlen(un->sun_path, max)),
             un->sun_path + abstract);
  } else {
    snprintf(out, size, "family %d", sa->sa_family);
  }
}

/* Records a call on resource, unless this thread was inside the library.
   Keeps errno. */
static void after(bool mine, int fn, const char *resource, int result,
                  int result_errno) {
  int err = errno;
  if (!mine || !atomic_load_explicit(&audit_ready, memory_order_acquire) ||
      !audit_enter())
    return;
  audit_record_call(fn, resource, NULL, result, result_errno);
  audit_leave();
  errno = err;
}

/* after() for a call on a peer: the peer is described only when the call
   is recorded. failed: the call failed, and errno says why. */
static void after_peer(bool mine, int fn, const struct sockaddr *addr,
                       socklen_t len, bool failed) {
  int err = errno;
  if (!mine || !atomic_load_explicit(&audit_ready, memory_order_acquire) ||
      !audit_enter())
    return;
  char peer[RESOURCE_CHARS];
  describe_peer(addr, len, peer, sizeof peer);
  audit_record_call(fn, peer, NULL, failed ? err : 0, 0);
  audit_leave();
  errno = err; /* describing the peer may have set it */
}

#define LOOKUP(name)                                                           \
  bool mine = audit_enter();                                                   \
  name##_fn real = real_##name();                                              \
  if (mine)                                                                    \
    audit_leave();

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
