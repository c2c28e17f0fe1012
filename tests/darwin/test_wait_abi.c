/*
 * test_wait_abi.c — what an Apple thread stopped in a system call waits for
 * (src/platform/darwin/wait_abi.c), on Linux, from recorded register sets
 * and lock memory laid out as xnu, libplatform and libpthread write them.
 *
 * The process is a model: a few byte regions at Apple-looking addresses
 * (code holding the trap instructions, an os_unfair_lock, pthread mutexes
 * and a rwlock), and a thread table of (port name, 64-bit thread id). The
 * decoder sees them only through the callbacks, as on Apple.
 *
 * Oracle: every expected value comes from the written contract,
 * docs/apple.md, "Contract: what a blocked thread waits for"; each check
 * cites the fact ([W1]..[W15]) it follows from. None was taken from a run
 * of the decoder.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "platform/darwin/wait_abi.h"

/* ---- The model process ----------------------------------------------------
 */

typedef struct region {
  uintptr_t addr;
  unsigned char bytes[128];
  size_t size;
} region_t;

typedef struct thread {
  uint32_t port;
  uint64_t tid;
} thread_t;

typedef struct model {
  region_t regions[8];
  int nregions;
  thread_t threads[4];
  int nthreads;
  int reads; /* every read goes through the callback */
} model_t;

static bool m_read(void *ctx, uintptr_t addr, void *dst, size_t n) {
  model_t *m = ctx;
  m->reads++;
  for (int i = 0; i < m->nregions; i++) {
    region_t *r = &m->regions[i];
    if (addr >= r->addr && addr - r->addr <= r->size &&
        n <= r->size - (addr - r->addr)) {
      memcpy(dst, r->bytes + (addr - r->addr), n);
      return true;
    }
  }
  return false;
}

static bool m_port(void *ctx, uint32_t port, snap_thread_t *out) {
  model_t *m = ctx;
  for (int i = 0; i < m->nthreads; i++)
    if (m->threads[i].port == port) {
      *out = port;
      return true;
    }
  return false;
}

static bool m_tid(void *ctx, uint64_t tid, snap_thread_t *out) {
  model_t *m = ctx;
  for (int i = 0; i < m->nthreads; i++)
    if (m->threads[i].tid == tid) {
      *out = m->threads[i].port;
      return true;
    }
  return false;
}

static region_t *add_region(model_t *m, uintptr_t addr, size_t size) {
  region_t *r = &m->regions[m->nregions++];
  memset(r, 0, sizeof *r);
  r->addr = addr;
  r->size = size;
  return r;
}

static void put32(region_t *r, size_t off, uint32_t v) {
  memcpy(r->bytes + off, &v, sizeof v); /* both ABIs are little-endian */
}

static void put64(region_t *r, size_t off, uint64_t v) {
  memcpy(r->bytes + off, &v, sizeof v);
}

/* Addresses as an iOS process might have them. */
#define CODE 0x1b0d4c000u        /* libsystem_kernel's text */
#define PC_SVC (CODE + 0x14)     /* right after `svc #0x80` at CODE + 0x10 */
#define PC_SYSCALL (CODE + 0x42) /* right after `syscall` at CODE + 0x40 */
#define PC_RET (CODE + 0x24)     /* right after a `ret` */
#define LOCK 0x16f5a3a40u        /* an os_unfair_lock */
#define MUTEX 0x10482c100u       /* a pthread_mutex_t, 8-aligned */
#define MUTEX_ODD 0x10482c204u   /* a pthread_mutex_t at 4 mod 8 */
#define UMUTEX 0x10482c300u      /* a pthread_mutex_t in ulock mode */
#define RWLOCK 0x10482c400u      /* a pthread_rwlock_t */
#define COND 0x10482c500u        /* a pthread_cond_t */

/* The threads: the waiter, the holder, a bystander. Port names end in
   binary 11 as the kernel makes them [W8]. */
#define WAITER 0x0a07u
#define HOLDER 0x1503u
#define OTHER 0x2603u
#define WAITER_TID 0x9c3a1ull
#define HOLDER_TID 0x9c3f7ull
#define OTHER_TID 0x9c402ull
#define DEAD_TID 0x9c300ull /* a thread that exited */
#define DEAD_PORT 0x2207u

static model_t g_m;

static void model_reset(void) {
  memset(&g_m, 0, sizeof g_m);
  region_t *code = add_region(&g_m, CODE, 128);
  /* [W1] arm64 `svc #0x80` = 0xd4001001, little-endian. */
  put32(code, 0x10, 0xd4001001u);
  /* a `ret` (0xd65f03c0): not a trap */
  put32(code, 0x20, 0xd65f03c0u);
  /* [W1] x86_64 `syscall` = 0f 05. */
  code->bytes[0x40] = 0x0f;
  code->bytes[0x41] = 0x05;
  g_m.threads[0] = (thread_t){WAITER, WAITER_TID};
  g_m.threads[1] = (thread_t){HOLDER, HOLDER_TID};
  g_m.threads[2] = (thread_t){OTHER, OTHER_TID};
  g_m.nthreads = 3;
}

static snap__darwin_wait_env_t env(unsigned arch) {
  return (snap__darwin_wait_env_t){.arch = arch,
                                   .read = m_read,
                                   .thread_of_port = m_port,
                                   .thread_of_tid = m_tid,
                                   .ctx = &g_m};
}

/* A stopped arm64 thread: x16 and x0..x5 [W3][W4]. */
static snap__plat_wait_regs_t arm64(uintptr_t pc, int64_t x16, uint64_t x0,
                                    uint64_t x1, uint64_t x2, uint64_t x3,
                                    uint64_t x4, uint64_t x5) {
  return (snap__plat_wait_regs_t){.source = SNAP__WAIT_REGS_THREAD,
                                  .pc = pc,
                                  .nr = x16,
                                  .args = {x0, x1, x2, x3, x4, x5}};
}

/* A stopped x86_64 thread: rax, then rdi rsi rdx r10 r8 r9 [W3][W4]. */
#define x86 arm64

static snap_wait_t decode(unsigned arch, snap_thread_t waiter,
                          snap__plat_wait_regs_t r) {
  snap__darwin_wait_env_t e = env(arch);
  snap_wait_t w;
  memset(&w, 0xa5, sizeof w); /* every field must be written */
  w.size = sizeof w;
  snap__darwin_wait_abi_decode(&e, waiter, &r, &w);
  return w;
}

#define A64 SNAP__DARWIN_ARCH_ARM64
#define X64 SNAP__DARWIN_ARCH_X86_64

/* [W7] UL_UNFAIR_LOCK | ULF_NO_ERRNO, as libplatform passes it [W8]. */
#define OP_UNFAIR 0x01000002u
#define OP_COMPARE 0x01000001u /* UL_COMPARE_AND_WAIT | ULF_NO_ERRNO */

static void expect_none(snap_wait_t w, const char *what) {
  CHECK(w.kind == SNAP_WAIT_NONE, "%s: kind %u", what, w.kind);
  CHECK(w.owner_state == SNAP_OWNER_NONE, "%s: owner_state", what);
  CHECK(w.syscall == SNAP_WAIT_NO_SYSCALL, "%s: syscall %lld", what,
        (long long)w.syscall);
  CHECK(w.fd == -1 && w.address == 0 && w.owner == 0, "%s: fields", what);
  for (int i = 0; i < 6; i++)
    CHECK(w.args[i] == 0, "%s: args[%d]", what, i);
}

/* ---- os_unfair_lock ------------------------------------------------------ */

static void unfair_lock(void) {
  for (int waiters = 0; waiters < 2; waiters++) {
    model_reset();
    /* [W8] held by 0x1503: the word is the owner's port; a waiter clears
       OS_ULOCK_NOWAITERS_BIT (bit 0) before it waits. */
    uint32_t word = waiters ? (HOLDER & ~1u) : HOLDER;
    put32(add_region(&g_m, LOCK, 4), 0, word);
    /* [W8] __ulock_wait2(op, lock, current, timeout, 0), number 544 [W5] */
    snap_wait_t w =
        decode(A64, WAITER, arm64(PC_SVC, 544, OP_UNFAIR, LOCK, word, 0, 0, 0));
    CHECK(w.kind == SNAP_WAIT_UNFAIR_LOCK, "waiters %d: kind %u", waiters,
          w.kind);
    CHECK(w.owner_state == SNAP_OWNER_KNOWN, "waiters %d: owner_state %u",
          waiters, w.owner_state);
    CHECK_EQ(w.owner, HOLDER); /* [W8] value | 3 */
    CHECK_EQ(w.address, LOCK);
    CHECK_EQ(w.syscall, 544);
    CHECK_EQ(w.fd, -1);
    CHECK_EQ(w.args[0], OP_UNFAIR);
    CHECK_EQ(w.args[1], LOCK);
    CHECK_EQ(w.args[2], word);
    CHECK(g_m.reads > 0, "memory is read through the callback");

    /* [W8] older libplatform: __ulock_wait(op, lock, current, 0), 515. */
    w = decode(A64, WAITER, arm64(PC_SVC, 515, OP_UNFAIR, LOCK, word, 0, 0, 0));
    CHECK(w.kind == SNAP_WAIT_UNFAIR_LOCK && w.owner == HOLDER &&
              w.syscall == 515,
          "__ulock_wait: kind %u owner %#llx", w.kind,
          (unsigned long long)w.owner);

    /* x86_64: rax = 2 << 24 | 544 [W3]; op, lock, value in rdi rsi rdx. */
    w = decode(X64, WAITER,
               x86(PC_SYSCALL, 0x2000220, OP_UNFAIR, LOCK, word, 0, 0, 0));
    CHECK(w.kind == SNAP_WAIT_UNFAIR_LOCK &&
              w.owner_state == SNAP_OWNER_KNOWN && w.owner == HOLDER &&
              w.syscall == 544 && w.address == LOCK,
          "x86_64 waiters %d: kind %u owner %#llx syscall %lld", waiters,
          w.kind, (unsigned long long)w.owner, (long long)w.syscall);
  }
}

static void unfair_lock_owner_unknown(void) {
  struct {
    uint32_t word;
    snap_thread_t waiter;
    bool mapped;
    const char *why;
  } cases[] = {
      /* [W8] the kernel reads 0x1502 | 3 = the waiter itself */
      {HOLDER & ~1u, HOLDER, true, "the waiter's own port"},
      /* not one of the task's threads: exited, or never a thread */
      {DEAD_PORT & ~1u, WAITER, true, "a dead owner's port"},
      {0xdeadbeefu, WAITER, true, "garbage"},
      /* [W8] OS_ULOCK_ANONYMOUS_OWNER = MACH_PORT_DEAD */
      {0xffffffffu, WAITER, true, "the anonymous owner"},
      /* unlocked since the waiter went to sleep: nobody holds it */
      {0, WAITER, true, "an unlocked word"},
      /* the word is not readable (freed, unmapped) */
      {HOLDER, WAITER, false, "an unmapped word"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    model_reset();
    if (cases[i].mapped)
      put32(add_region(&g_m, LOCK, 4), 0, cases[i].word);
    snap_wait_t w =
        decode(A64, cases[i].waiter,
               arm64(PC_SVC, 544, OP_UNFAIR, LOCK, cases[i].word, 0, 0, 0));
    CHECK(w.kind == SNAP_WAIT_UNFAIR_LOCK, "%s: kind %u", cases[i].why, w.kind);
    CHECK(w.owner_state == SNAP_OWNER_UNKNOWN && w.owner == 0,
          "%s: owner_state %u owner %#llx", cases[i].why, w.owner_state,
          (unsigned long long)w.owner);
    CHECK_EQ(w.address, LOCK);
  }
}

/* [W7] UL_COMPARE_AND_WAIT: a word with no owner. */
static void compare_and_wait(void) {
  model_reset();
  put32(add_region(&g_m, LOCK, 4), 0, HOLDER);
  snap_wait_t w =
      decode(A64, WAITER, arm64(PC_SVC, 515, OP_COMPARE, LOCK, 1, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_FUTEX, "kind %u", w.kind);
  CHECK(w.owner_state == SNAP_OWNER_NONE && w.owner == 0, "no owner");
  CHECK_EQ(w.address, LOCK);
  CHECK_EQ(w.syscall, 515);
}

/* [W9] a pthread mutex in libpthread's ulock mode: sig 'MUTX', options
   with bit 14, the ulock word at offset 24 = (port & ~3) | waiters bit. */
static void ulock_mutex(void) {
  model_reset();
  region_t *r = add_region(&g_m, UMUTEX, 64);
  put64(r, 0, 0x4d555458u);
  put32(r, 12, 0x4000u | 0x2000u); /* ulock, mutex */
  uint32_t word = (HOLDER & 0xfffffffcu) | 1u;
  put32(r, 24, word);
  snap_wait_t w = decode(
      A64, WAITER, arm64(PC_SVC, 515, OP_UNFAIR, UMUTEX + 24, word, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_MUTEX, "kind %u", w.kind);
  CHECK(w.owner_state == SNAP_OWNER_KNOWN, "owner_state %u", w.owner_state);
  CHECK_EQ(w.owner, HOLDER); /* [W8] value | 3 */
  CHECK_EQ(w.address, UMUTEX);

  /* Without the ulock option it is not libpthread's: an unfair lock. */
  put32(r, 12, 0x2000u);
  w = decode(A64, WAITER,
             arm64(PC_SVC, 515, OP_UNFAIR, UMUTEX + 24, word, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_UNFAIR_LOCK && w.address == UMUTEX + 24 &&
            w.owner == HOLDER,
        "no ulock bit: kind %u", w.kind);
}

/* ---- psynch mutexes ------------------------------------------------------ */

/* A pthread_mutex_t at m [W9]: sig, and m_tid rounded up to 8 [W10]. */
static void put_mutex(uintptr_t m, uint64_t tid_now) {
  region_t *r = add_region(&g_m, m, 48);
  put64(r, 0, 0x4d555458u);
  put32(r, 12, 0x2000u);
  put64(r, ((m + 24 + 7) & ~(uintptr_t)7) - m, tid_now);
}

static void psynch_mutex(void) {
  struct {
    uintptr_t m;
    bool mapped;
    uint64_t now;  /* m_tid */
    uint64_t hint; /* the tid argument */
    snap_thread_t waiter;
    snap_thread_t owner; /* 0: unknown */
    const char *why;
  } cases[] = {
      /* [W10][W11] the owner's tid in m_tid, mapped to its port */
      {MUTEX, true, HOLDER_TID, HOLDER_TID, WAITER, HOLDER, "tid mapped"},
      /* [W10] byte alignment: m_tid at (m + 24 + 7) & ~7 = m + 28 */
      {MUTEX_ODD, true, HOLDER_TID, 0, WAITER, HOLDER, "misaligned mutex"},
      /* [W10] the hint is stale: the mutex names its holder now */
      {MUTEX, true, OTHER_TID, HOLDER_TID, WAITER, OTHER, "stale hint"},
      /* [W10] m_tid 0: not written yet; the hint names the owner */
      {MUTEX, true, 0, HOLDER_TID, WAITER, HOLDER, "tid not yet written"},
      /* [W10] being handed over (~0) and no hint: nobody named */
      {MUTEX, true, UINT64_MAX, 0, WAITER, 0, "switching"},
      /* [W10] m_tid ~0 names nobody: the hint does */
      {MUTEX, true, UINT64_MAX, HOLDER_TID, WAITER, HOLDER, "switching, hint"},
      /* unreadable mutex: the argument alone [W10] */
      {MUTEX, false, 0, HOLDER_TID, WAITER, HOLDER, "unmapped, hint"},
      /* [W11] a tid no live thread has */
      {MUTEX, true, DEAD_TID, HOLDER_TID, WAITER, 0, "dead owner"},
      {MUTEX, true, 0x123456789abcull, 0, WAITER, 0, "tid unmapped"},
      /* the waiter itself */
      {MUTEX, true, HOLDER_TID, HOLDER_TID, HOLDER, 0, "the waiter"},
      {MUTEX, true, 0, UINT64_MAX, WAITER, 0, "hint switching"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    model_reset();
    if (cases[i].mapped)
      put_mutex(cases[i].m, cases[i].now);
    /* [W10] __psynch_mutexwait(mutex, mgen, ugen, tid, flags), 301 [W5] */
    snap_wait_t w = decode(A64, cases[i].waiter,
                           arm64(PC_SVC, 301, cases[i].m, 0x1c3, 0x100,
                                 cases[i].hint, 0x2000, 0x6b));
    CHECK(w.kind == SNAP_WAIT_MUTEX, "%s: kind %u", cases[i].why, w.kind);
    CHECK(w.owner_state ==
              (cases[i].owner ? SNAP_OWNER_KNOWN : SNAP_OWNER_UNKNOWN),
          "%s: owner_state %u", cases[i].why, w.owner_state);
    CHECK(w.owner == cases[i].owner, "%s: owner %#llx, expected %#llx",
          cases[i].why, (unsigned long long)w.owner,
          (unsigned long long)cases[i].owner);
    CHECK(w.address == cases[i].m, "%s: address", cases[i].why);
    CHECK(w.syscall == 301 && w.args[3] == cases[i].hint && w.args[5] == 0x6b,
          "%s: syscall %lld", cases[i].why, (long long)w.syscall);
  }
  /* x86_64: rax 2 << 24 | 301, the tid in r10 (args[3]) [W3][W4]. */
  model_reset();
  put_mutex(MUTEX, 0);
  snap_wait_t w = decode(
      X64, WAITER,
      x86(PC_SYSCALL, 0x200012d, MUTEX, 0x1c3, 0x100, HOLDER_TID, 0x2000, 0));
  CHECK(w.kind == SNAP_WAIT_MUTEX && w.owner_state == SNAP_OWNER_KNOWN &&
            w.owner == HOLDER && w.syscall == 301 && w.address == MUTEX,
        "x86_64 mutexwait: kind %u owner %#llx", w.kind,
        (unsigned long long)w.owner);
}

/* [W12] a rwlock: rw_tid names the writer while held for writing. */
static void rwlock(void) {
  for (int held = 0; held < 2; held++) {
    model_reset();
    region_t *r = add_region(&g_m, RWLOCK, 64);
    put64(r, 0, 0x52574c4bu);
    put64(r, 24, held ? HOLDER_TID : 0);
    /* __psynch_rw_wrlock(rwlock, lgenval, ugenval, rw_wc, flags), 307 */
    snap_wait_t w =
        decode(A64, WAITER, arm64(PC_SVC, 307, RWLOCK, 0x302, 0x100, 0, 0, 0));
    CHECK(w.kind == SNAP_WAIT_RWLOCK, "kind %u", w.kind);
    CHECK(w.owner_state == (held ? SNAP_OWNER_KNOWN : SNAP_OWNER_UNKNOWN),
          "held %d: owner_state %u", held, w.owner_state);
    CHECK_EQ(w.owner, held ? HOLDER : 0);
    CHECK_EQ(w.address, RWLOCK);
    CHECK_EQ(w.syscall, 307);
  }
  /* [W12] not a rwlock's signature: rw_tid is not believed */
  model_reset();
  region_t *g = add_region(&g_m, RWLOCK, 64);
  put64(g, 0, 0x4d555458u);
  put64(g, 24, HOLDER_TID);
  snap_wait_t w =
      decode(A64, WAITER, arm64(PC_SVC, 307, RWLOCK, 0x302, 0x100, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_RWLOCK && w.owner_state == SNAP_OWNER_UNKNOWN &&
            w.owner == 0,
        "bad signature: owner_state %u", w.owner_state);
  /* 306 psynch_rw_rdlock waits the same way [W12]. */
  w = decode(A64, WAITER, arm64(PC_SVC, 306, RWLOCK, 0x302, 0x100, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_RWLOCK && w.address == RWLOCK, "rdlock");
}

/* ---- Kinds without an owner --------------------------------------------- */

static void no_owner_kinds(void) {
  model_reset();
  snap_wait_t w;
  /* [W13] __psynch_cvwait(cv, ...), 305 */
  w = decode(A64, WAITER, arm64(PC_SVC, 305, COND, 0x100, 0, MUTEX, 0, 0));
  CHECK(w.kind == SNAP_WAIT_CONDVAR && w.address == COND &&
            w.owner_state == SNAP_OWNER_NONE && w.syscall == 305,
        "cvwait: kind %u", w.kind);

  /* [W6] semaphore_wait_trap: x16 = -36 (a 64-bit mov of -36) */
  w = decode(A64, WAITER, arm64(PC_SVC, -36, 0x1c03, 0, 0, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_SEMAPHORE && w.syscall == -36 &&
            w.owner_state == SNAP_OWNER_NONE && w.address == 0 &&
            w.args[0] == 0x1c03,
        "semaphore_wait_trap arm64: kind %u syscall %lld", w.kind,
        (long long)w.syscall);
  /* [W3] only x16's low 32 bits count: 0x00000000ffffffdc is -36 too */
  w = decode(A64, WAITER, arm64(PC_SVC, 0xffffffdcll, 0x1c03, 0, 0, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_SEMAPHORE && w.syscall == -36, "low word: kind %u",
        w.kind);
  /* [W3][W6] x86_64: rax = 1 << 24 | 36 */
  w = decode(X64, WAITER, x86(PC_SYSCALL, 0x1000024, 0x1c03, 0, 0, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_SEMAPHORE && w.syscall == -36,
        "semaphore_wait_trap x86_64: kind %u syscall %lld", w.kind,
        (long long)w.syscall);
  /* [W6] semaphore_timedwait_trap, -38 */
  w = decode(A64, WAITER, arm64(PC_SVC, -38, 0x1c03, 1, 0, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_SEMAPHORE && w.syscall == -38, "timedwait");

  /* [W5] read(7, buf, n): 3 */
  w = decode(A64, WAITER, arm64(PC_SVC, 3, 7, 0x16f5a3000, 512, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_IO && w.fd == 7 && w.syscall == 3 &&
            w.address == 0 && w.owner_state == SNAP_OWNER_NONE,
        "read arm64: kind %u fd %d", w.kind, w.fd);
  w = decode(X64, WAITER,
             x86(PC_SYSCALL, 0x2000003, 7, 0x7ff7b000, 512, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_IO && w.fd == 7 && w.syscall == 3,
        "read x86_64: kind %u fd %d", w.kind, w.fd);
  /* [W3] a BSD number is x16's low 16 bits */
  w = decode(A64, WAITER, arm64(PC_SVC, 0x10003, 7, 0, 512, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_IO && w.fd == 7 && w.syscall == 3,
        "x16 0x10003: kind %u syscall %lld", w.kind, (long long)w.syscall);
  /* [W5] recvfrom_nocancel, 403 */
  w = decode(A64, WAITER, arm64(PC_SVC, 403, 9, 0x16f5a3000, 512, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_IO && w.fd == 9, "recvfrom_nocancel");

  /* [W14] nanosleep: __semwait_signal(clock_sem, 0, 1, 1, sec, nsec) */
  w = decode(A64, WAITER, arm64(PC_SVC, 334, 0x1d03, 0, 1, 1, 2, 500000000));
  CHECK(w.kind == SNAP_WAIT_SLEEP && w.syscall == 334, "nanosleep: kind %u",
        w.kind);
  /* [W14] with a mutex_sem: semaphore_timedwait_signal, a semaphore */
  w = decode(A64, WAITER, arm64(PC_SVC, 423, 0x1d03, 0x1e03, 1, 1, 2, 0));
  CHECK(w.kind == SNAP_WAIT_SEMAPHORE && w.syscall == 423,
        "semwait with mutex_sem: kind %u", w.kind);
  /* [W14] no timeout: a semaphore wait */
  w = decode(A64, WAITER, arm64(PC_SVC, 334, 0x1d03, 0, 0, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_SEMAPHORE, "semwait no timeout: kind %u", w.kind);
  /* [W6] mach_wait_until, -90 */
  w = decode(A64, WAITER, arm64(PC_SVC, -90, 123456789, 0, 0, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_SLEEP && w.syscall == -90, "mach_wait_until");

  /* [W15] kevent_id 375, workq_kernreturn 368, poll 230: POLL */
  static const int64_t polls[] = {375, 374, 369, 363, 368, 230, 93};
  for (size_t i = 0; i < sizeof polls / sizeof polls[0]; i++) {
    w = decode(A64, WAITER, arm64(PC_SVC, polls[i], 3, 0, 0, 0, 0, 0));
    CHECK(w.kind == SNAP_WAIT_POLL && w.fd == -1, "%lld: kind %u",
          (long long)polls[i], w.kind);
  }
  /* [W15] mach_msg2_trap -47: other */
  w = decode(A64, WAITER, arm64(PC_SVC, -47, 0, 0, 0, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_OTHER && w.syscall == -47, "mach_msg2: kind %u",
        w.kind);
  /* [W5] wait4, 7: another call */
  w = decode(A64, WAITER, arm64(PC_SVC, 7, 1234, 0, 0, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_OTHER && w.syscall == 7 && w.fd == -1, "wait4");
  /* [W3] the platform call 0x80000000 and the indirect call 0: other,
     the register as it was */
  w = decode(A64, WAITER, arm64(PC_SVC, 0x80000000ll, 0, 0, 0, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_OTHER && w.syscall == 0x80000000ll,
        "platform call: kind %u", w.kind);
  w = decode(A64, WAITER, arm64(PC_SVC, 0, 3, 7, 0, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_OTHER && w.syscall == 0 && w.fd == -1,
        "indirect: kind %u", w.kind);
  /* [W3] x86_64 class 3 (machine-dependent): other */
  w = decode(X64, WAITER, x86(PC_SYSCALL, 0x3000003, 0, 0, 0, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_OTHER, "mdep: kind %u", w.kind);
}

/* ---- Not in a system call ----------------------------------------------- */

static void not_in_call(void) {
  model_reset();
  put32(add_region(&g_m, LOCK, 4), 0, HOLDER);
  /* [W2] pc after a `ret`, not after the trap */
  expect_none(
      decode(A64, WAITER, arm64(PC_RET, 544, OP_UNFAIR, LOCK, HOLDER, 0, 0, 0)),
      "pc after ret");
  /* pc at the trap (not yet executed) */
  expect_none(decode(A64, WAITER,
                     arm64(PC_SVC - 4, 544, OP_UNFAIR, LOCK, HOLDER, 0, 0, 0)),
              "pc at svc");
  /* unreadable code */
  expect_none(
      decode(A64, WAITER, arm64(0x1000, 544, OP_UNFAIR, LOCK, HOLDER, 0, 0, 0)),
      "pc unmapped");
  expect_none(
      decode(A64, WAITER, arm64(0, 544, OP_UNFAIR, LOCK, HOLDER, 0, 0, 0)),
      "pc 0");
  /* [W1] an x86_64 thread whose pc follows arm64's svc bytes */
  expect_none(decode(X64, WAITER,
                     x86(PC_SVC, 0x2000220, OP_UNFAIR, LOCK, HOLDER, 0, 0, 0)),
              "x86_64 after svc");
  /* [W3] x86_64: a returned call holds its result in rax (class 0) */
  expect_none(decode(X64, WAITER, x86(PC_SYSCALL, 0, 7, 0, 0, 0, 0, 0)),
              "x86_64 returned");
  /* No registers, or registers from the kernel (Linux's syscall file) */
  snap__plat_wait_regs_t r =
      arm64(PC_SVC, 544, OP_UNFAIR, LOCK, HOLDER, 0, 0, 0);
  r.source = SNAP__WAIT_REGS_NONE;
  expect_none(decode(A64, WAITER, r), "source none");
  r.source = SNAP__WAIT_REGS_KERNEL;
  expect_none(decode(A64, WAITER, r), "source kernel");
  /* An architecture the decoder does not know (its pc after a syscall) */
  expect_none(
      decode(7, WAITER,
             x86(PC_SYSCALL, 0x2000220, OP_UNFAIR, LOCK, HOLDER, 0, 0, 0)),
      "unknown arch");
}

/* ---- A wait that ended after the suspension (issue 23) ------------------
   thread_suspend parks a thread only on its way back to user space, so a
   wait that ends while it is held runs to its return and writes its
   results into the saved state: x0 = the result, x1 = rval[1] (0) on
   success, x0 = errno on error; pc still follows the svc, x16 is kept
   (docs/apple.md, [W16]). Before the check, the first case below decoded
   as a futex at address 0 and the second as a mutex at 0x1c3. */

static void ended_after_suspend(void) {
  model_reset();
  uint32_t word = HOLDER & ~1u;
  put32(add_region(&g_m, LOCK, 4), 0, word);
  put_mutex(MUTEX, HOLDER_TID);
  /* __ulock_wait2 returned 0 with ULF_NO_ERRNO: x0 = 0, x1 = 0. */
  snap_wait_t w = decode(A64, WAITER, arm64(PC_SVC, 544, 0, 0, word, 0, 0, 0));
  expect_none(w, "ulock_wait2 returned 0");
  /* ... returned -ETIMEDOUT (ULF_NO_ERRNO: a negative result). */
  w = decode(A64, WAITER, arm64(PC_SVC, 544, (uint64_t)-60, 0, word, 0, 0, 0));
  expect_none(w, "ulock_wait2 returned -ETIMEDOUT");
  /* __psynch_mutexwait returned its updated generation in x0, 0 in x1. */
  w = decode(A64, WAITER,
             arm64(PC_SVC, 301, 0x1c3, 0, 0x100, HOLDER_TID, 0x2000, 0));
  expect_none(w, "psynch_mutexwait returned");
  /* psynch_cvwait and rwlock calls return a 32-bit value too. */
  w = decode(A64, WAITER, arm64(PC_SVC, 305, 0x80, 0, 0, 0, 0, 0));
  expect_none(w, "psynch_cvwait returned");
  w = decode(A64, WAITER, arm64(PC_SVC, 307, 0x40, 0, 0, 0, 0, 0));
  expect_none(w, "psynch_rw_wrlock returned");
  /* sem_wait returned 0. */
  w = decode(A64, WAITER, arm64(PC_SVC, 271, 0, 0, 0, 0, 0, 0));
  expect_none(w, "sem_wait returned");
  /* Still waiting: the same calls with their arguments decode as before
     (the address arguments lie above the 4 GiB page zero [W16]). */
  w = decode(A64, WAITER, arm64(PC_SVC, 544, OP_UNFAIR, LOCK, word, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_UNFAIR_LOCK && w.address == LOCK &&
            w.owner == HOLDER,
        "still waiting: kind %u", w.kind);
  w = decode(A64, WAITER,
             arm64(PC_SVC, 301, MUTEX, 0x1c3, 0x100, HOLDER_TID, 0x2000, 0));
  CHECK(w.kind == SNAP_WAIT_MUTEX && w.address == MUTEX && w.owner == HOLDER,
        "still waiting: mutex kind %u", w.kind);
  /* A call without an address argument is unchanged: read(fd, ...). */
  w = decode(A64, WAITER, arm64(PC_SVC, 3, 7, 0x16f5a3000, 512, 0, 0, 0));
  CHECK(w.kind == SNAP_WAIT_IO && w.fd == 7, "read: kind %u", w.kind);
  /* x86_64 is told by rax already: the return overwrites the number. */
  w = decode(X64, WAITER, x86(PC_SYSCALL, 0, 0, LOCK, word, 0, 0, 0));
  expect_none(w, "x86_64 ulock returned (rax 0)");
}

int main(void) {
  ended_after_suspend();
  unfair_lock();
  unfair_lock_owner_unknown();
  compare_and_wait();
  ulock_mutex();
  psynch_mutex();
  rwlock();
  no_owner_kinds();
  not_in_call();
  return check_result("test_wait_abi");
}
