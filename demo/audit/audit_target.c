/*
 * audit_target.c — the audit tests' own subject: a program whose
 * sensitive calls are known in advance, run under libstacksnap_audit.so
 * by test_audit.py. Each mode is one situation the audit must get right:
 *
 *   basic FILE         opens FILE from one call site twice, fopens it
 *                      once, resolves "localhost" once: three records
 *                      (counts 2, 1, 1), each named for its function here
 *   probe DIR          calls each hooked file function once on files in
 *                      DIR (some there, some not), and prints what each
 *                      call returned: "<function> <path> <ok|ERRNAME>"
 *   net                connects (one accepted, one refused, one to an
 *                      abstract unix name nobody listens on), sends a
 *                      datagram with sendto and with sendmsg, resolves
 *                      "localhost" with gethostbyname and _r; prints
 *                      "<function> <peer or host> <ok|ERRNAME>" for each
 *   threads FILE N     opens FILE N times from one call site on the main
 *                      thread and on 4 more at once; prints the 5 thread
 *                      ids
 *   fork A B N         opens A N times, forks; the child opens B N times
 *                      and exits; the parent waits and opens A N times
 *                      more. Prints "child <pid>".
 *   exit FILE N        opens FILE N times, then _exit(7)
 *   term FILE N        opens FILE N times, prints "ready", and waits to
 *                      be killed
 *   close-stderr FILE N
 *                      closes 0, 1 and 2, then opens FILE N times (the
 *                      descriptors it gets are the closed ones) and
 *                      writes "mine\n" into the last one
 *   sigmalloc FILE N   mallocs and frees in a loop while a 1 ms timer's
 *                      SIGALRM handler (audit_on_alarm) calls access(FILE)
 *                      each time it lands, until it has N times; prints N
 *   exec FILE N SELF   8 threads open FILE N times each; execv of a
 *                      missing file fails (the process goes on), FILE is
 *                      opened once more, then SELF (this program) is
 *                      exec'd as "noop". Prints the 8 thread ids first.
 *   noop               makes no call
 *   clone A B N        opens A N times; a raw clone(SIGCHLD) child (no
 *                      fork handlers run) opens B N times and _exits; the
 *                      parent waits, opens A N times more. Prints
 *                      "child <pid>".
 *   wait-open FILE N   prints its pid, waits for a line on stdin, then
 *                      opens FILE N times
 *   vfork A B N SELF   opens A N times; a vfork child opens B N times and
 *                      execs SELF as "noop"; the parent waits, opens A N
 *                      times more
 *   many DIR N         opens DIR/0 .. DIR/N-1 (missing: ENOENT) from one
 *                      call site: N resources, N records wanted
 *
 * The functions that make the calls are exported and noinline so that nm
 * lists them and each is its own frame. Exits 0 when every call did what
 * it should (a hook that broke a call shows here), 1 otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

int audit_read_settings(const char *path);
int audit_read_profile(const char *path);
int audit_resolve_server(void);
int audit_open_n(const char *path, int n);
int audit_probe(const char *dir);
int audit_net(void);
void audit_on_alarm(int sig);
int audit_malloc_loop(int n);

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

/* Opens path n times from one call site; 0 when every open worked. */
NOINLINE int audit_open_n(const char *path, int n) {
  int bad = 0;
  for (volatile int i = 0; i < n; i++) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
      bad = 1;
    else
      close(fd);
  }
  KEEP_FRAME();
  return bad;
}

static void said(const char *fn, const char *path, int failed) {
  printf("%s %s %s\n", fn, path, failed ? strerrorname_np(errno) : "ok");
}

/* Each hooked file function once; relative paths from inside dir. */
NOINLINE int audit_probe(const char *dir) {
  if (chdir(dir) != 0)
    return 1;
  struct stat st;
  int fd;
  said("stat", "present", stat("present", &st) != 0);
  said("lstat", "missing", lstat("missing", &st) != 0);
  said("access", "present", access("present", R_OK) != 0);
  fd = open("missing", O_RDONLY);
  said("open", "missing", fd < 0);
  fd = creat("created", 0600);
  said("creat", "created", fd < 0);
  if (fd >= 0)
    close(fd);
  int dfd = open(".", O_RDONLY | O_DIRECTORY);
  said("open", ".", dfd < 0);
  fd = openat(dfd, "present", O_RDONLY);
  said("openat", "present", fd < 0);
  if (fd >= 0)
    close(fd);
  said("fstatat", "missing", fstatat(dfd, "missing", &st, 0) != 0);
  said("faccessat", "present", faccessat(dfd, "present", R_OK, 0) != 0);
  close(dfd);
  FILE *f = fopen("../probe/./present", "r");
  said("fopen", "../probe/./present", f == NULL);
  if (f && !freopen("present", "r", f))
    f = NULL;
  said("freopen", "present", f == NULL);
  if (f)
    fclose(f);
  KEEP_FRAME();
  return 0;
}

static const char *herr_name(int h) {
  switch (h) {
  case HOST_NOT_FOUND: return "HOST_NOT_FOUND";
  case TRY_AGAIN: return "TRY_AGAIN";
  case NO_RECOVERY: return "NO_RECOVERY";
  case NO_DATA: return "NO_DATA";
  default: return "NETDB_INTERNAL";
  }
}

static struct sockaddr_in loopback(int type, int *fd) {
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  *fd = socket(AF_INET, type, 0);
  if (*fd < 0 || bind(*fd, (struct sockaddr *)&a, len) != 0 ||
      getsockname(*fd, (struct sockaddr *)&a, &len) != 0)
    a.sin_port = 0;
  return a;
}

static void said_peer(const char *fn, const struct sockaddr_in *a, int failed) {
  char ip[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
  printf("%s %s:%u %s\n", fn, ip, ntohs(a->sin_port),
         failed ? strerrorname_np(errno) : "ok");
}

/* Each network hook once; 1 when the sockets could not be set up. */
NOINLINE int audit_net(void) {
  int ls, us, c;
  struct sockaddr_in tcp = loopback(SOCK_STREAM, &ls);
  struct sockaddr_in udp = loopback(SOCK_DGRAM, &us);
  if (!tcp.sin_port || !udp.sin_port || listen(ls, 4) != 0)
    return 1;
  c = socket(AF_INET, SOCK_STREAM, 0);
  said_peer("connect", &tcp,
            connect(c, (struct sockaddr *)&tcp, sizeof tcp) != 0);
  close(c);
  close(ls); /* now nobody listens there: refused */
  c = socket(AF_INET, SOCK_STREAM, 0);
  said_peer("connect", &tcp,
            connect(c, (struct sockaddr *)&tcp, sizeof tcp) != 0);
  close(c);
  c = socket(AF_INET, SOCK_DGRAM, 0);
  said_peer("sendto", &udp,
            sendto(c, "x", 1, 0, (struct sockaddr *)&udp, sizeof udp) != 1);
  struct iovec iov = {.iov_base = "y", .iov_len = 1};
  struct msghdr msg = {.msg_name = &udp,
                       .msg_namelen = sizeof udp,
                       .msg_iov = &iov,
                       .msg_iovlen = 1};
  said_peer("sendmsg", &udp, sendmsg(c, &msg, 0) != 1);
  close(c);
  close(us);
  struct sockaddr_un un = {.sun_family = AF_UNIX};
  int n = snprintf(un.sun_path + 1, sizeof un.sun_path - 1,
                   "stacksnap-audit-%d", (int)getpid());
  c = socket(AF_UNIX, SOCK_STREAM, 0);
  int failed = connect(c, (struct sockaddr *)&un,
                       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                                   (size_t)n)) != 0;
  printf("connect unix:@%s %s\n", un.sun_path + 1,
         failed ? strerrorname_np(errno) : "ok");
  close(c);
  struct hostent *h = gethostbyname("localhost");
  printf("gethostbyname localhost %s\n", h ? "ok" : herr_name(h_errno));
  struct hostent he, *res = NULL;
  char buf[4096];
  int herr = 0;
  int rc = gethostbyname_r("localhost", &he, buf, sizeof buf, &res, &herr);
  printf("gethostbyname_r localhost %s\n",
         rc == 0 && res ? "ok" : herr_name(herr));
  KEEP_FRAME();
  return 0;
}

static const char *volatile g_alarm_path;
static volatile sig_atomic_t g_alarms;
static volatile sig_atomic_t g_alarms_wanted;

/* Where the signal landed is part of the stack the hook captures: inside
   malloc, most of the time. */
NOINLINE void audit_on_alarm(int sig) {
  (void)sig;
  /* A tick that lands after the loop saw the count reached, before the
     timer is off, calls nothing: exactly n calls (seen: 301 of 300). */
  if (g_alarms >= g_alarms_wanted)
    return;
  int saved = errno;
  if (access(g_alarm_path, R_OK) == 0)
    g_alarms++;
  errno = saved;
  KEEP_FRAME();
}

/* Mallocs and frees until the handler has run n times; 0 when it did. */
NOINLINE int audit_malloc_loop(int n) {
  g_alarms_wanted = n;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = audit_on_alarm;
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGALRM, &sa, NULL) != 0)
    return 1;
  struct itimerval it = {{0, 1000}, {0, 1000}};
  if (setitimer(ITIMER_REAL, &it, NULL) != 0)
    return 1;
  void *keep[64] = {0};
  for (uint32_t i = 0; g_alarms < n; i++) {
    size_t at = (i * 2654435761u) >> 26; /* 0..63 */
    free(keep[at]);
    keep[at] = malloc(16 + (i * 40503u) % 4096);
    if (!keep[at])
      return 1;
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  for (int i = 0; i < 64; i++)
    free(keep[i]);
  KEEP_FRAME();
  return 0;
}

typedef struct opener {
  const char *path;
  int n, tid, bad;
} opener_t;

static void *opener(void *arg) {
  opener_t *o = arg;
  o->tid = (int)syscall(SYS_gettid);
  o->bad = audit_open_n(o->path, o->n);
  return NULL;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  int bad = 0;
  if (strcmp(mode, "basic") == 0 && argc == 3) {
    /* One call site, twice (volatile: the compiler must not unroll the
       loop into two call sites). */
    for (volatile int i = 0; i < 2; i++)
      bad |= audit_read_settings(argv[2]);
    bad |= audit_read_profile(argv[2]);
    bad |= audit_resolve_server();
  } else if (strcmp(mode, "probe") == 0 && argc == 3) {
    bad |= audit_probe(argv[2]);
  } else if (strcmp(mode, "net") == 0 && argc == 2) {
    bad |= audit_net();
  } else if (strcmp(mode, "threads") == 0 && argc == 4) {
    opener_t o[5];
    pthread_t t[4];
    for (int i = 0; i < 5; i++)
      o[i] = (opener_t){.path = argv[2], .n = atoi(argv[3])};
    for (int i = 0; i < 4; i++)
      if (pthread_create(&t[i], NULL, opener, &o[i + 1]) != 0)
        return 1;
    opener(&o[0]);
    for (int i = 0; i < 4; i++)
      pthread_join(t[i], NULL);
    for (int i = 0; i < 5; i++) {
      printf("%d\n", o[i].tid);
      bad |= o[i].bad;
    }
  } else if (strcmp(mode, "fork") == 0 && argc == 5) {
    int n = atoi(argv[4]);
    bad |= audit_open_n(argv[2], n);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0)
      exit(audit_open_n(argv[3], n));
    printf("child %d\n", (int)child);
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      bad = 1;
    bad |= audit_open_n(argv[2], n);
  } else if (strcmp(mode, "exit") == 0 && argc == 4) {
    audit_open_n(argv[2], atoi(argv[3]));
    _exit(7);
  } else if (strcmp(mode, "term") == 0 && argc == 4) {
    bad |= audit_open_n(argv[2], atoi(argv[3]));
    printf("ready\n");
    fflush(stdout);
    for (;;)
      pause();
  } else if (strcmp(mode, "sigmalloc") == 0 && argc == 4) {
    g_alarm_path = argv[2];
    bad |= audit_malloc_loop(atoi(argv[3]));
    printf("%d\n", (int)g_alarms);
  } else if (strcmp(mode, "exec") == 0 && argc == 5) {
    opener_t o[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
      o[i] = (opener_t){.path = argv[2], .n = atoi(argv[3])};
      if (pthread_create(&t[i], NULL, opener, &o[i]) != 0)
        return 1;
    }
    for (int i = 0; i < 8; i++) {
      pthread_join(t[i], NULL);
      printf("%d\n", o[i].tid);
      bad |= o[i].bad;
    }
    fflush(stdout);
    char *args[] = {argv[0], "noop", NULL};
    if (execv("/nonexistent/audit-target", args) != -1 || errno != ENOENT)
      return 1;
    bad |= audit_open_n(argv[2], 1);
    if (bad)
      return 1;
    execv(argv[4], args);
    return 1;
  } else if (strcmp(mode, "noop") == 0 && argc == 2) {
    return 0;
  } else if (strcmp(mode, "clone") == 0 && argc == 5) {
    int n = atoi(argv[4]);
    bad |= audit_open_n(argv[2], n);
    fflush(stdout);
    /* No fork handlers: the kernel's clone, as a sandbox or a language
       runtime makes it. The child runs on a copy of this stack. */
    long child = syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
    if (child == 0)
      _exit(audit_open_n(argv[3], n));
    printf("child %ld\n", child);
    int status;
    if (child < 0 || waitpid((pid_t)child, &status, 0) != child ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      bad = 1;
    bad |= audit_open_n(argv[2], n);
  } else if (strcmp(mode, "wait-open") == 0 && argc == 4) {
    printf("%d\n", (int)getpid());
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin))
      return 1;
    bad |= audit_open_n(argv[2], atoi(argv[3]));
  } else if (strcmp(mode, "vfork") == 0 && argc == 6) {
    int n = atoi(argv[4]);
    bad |= audit_open_n(argv[2], n);
    char *args[] = {argv[0], "noop", NULL};
    pid_t child = vfork();
    if (child == 0) {
      audit_open_n(argv[3], n);
      execv(argv[5], args);
      _exit(127);
    }
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      bad = 1;
    bad |= audit_open_n(argv[2], n);
  } else if (strcmp(mode, "many") == 0 && argc == 4) {
    char path[4096];
    for (int i = 0; i < atoi(argv[3]); i++) {
      snprintf(path, sizeof path, "%s/%d", argv[2], i);
      if (audit_open_n(path, 1) == 0) /* must be missing */
        bad = 1;
    }
  } else if (strcmp(mode, "close-stderr") == 0 && argc == 4) {
    close(0);
    close(1);
    close(2);
    int n = atoi(argv[3]), fd = -1;
    for (int i = 0; i < n; i++) {
      if (fd >= 0)
        close(fd);
      fd = open(argv[2], O_WRONLY | O_APPEND);
      bad |= fd < 0;
    }
    if (fd >= 0 && write(fd, "mine\n", 5) != 5)
      bad = 1;
  } else {
    fprintf(stderr,
            "usage: audit_target basic FILE | probe DIR | net | threads FILE N "
            "| fork A B N "
            "| exit FILE N | term FILE N | close-stderr FILE N "
            "| sigmalloc FILE N | exec FILE N SELF | noop | clone A B N "
            "| wait-open FILE N | vfork A B N SELF | many DIR N\n");
    return 2;
  }
  fflush(stdout);
  return bad;
}
