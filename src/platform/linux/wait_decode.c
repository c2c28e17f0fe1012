/*
 * wait_decode.c — what a Linux thread waited for, and who holds it
 * (snap__plat_wait_decode, platform.h), for glibc's locks.
 *
 * Input: the registers taken with a sample (the kernel's syscall file for
 * a quiet sample, or the stopped thread's registers from the signal's
 * ucontext) and the stack sampled with them.
 *
 * 1. In which system call. KERNEL: the kernel said. THREAD: the pc must be
 *    AT this architecture's system-call instruction: the kernel moved it
 *    back there to restart the call after our handler (SA_RESTART; a
 *    futex lock wait, a read, a condition wait restart), with the number
 *    back in its register and the arguments intact. A pc right AFTER the
 *    instruction is a call that returned (our signal cut a sleep or a
 *    poll short: EINTR); on aarch64 x8 still holds its number, so its kind
 *    is known, but x0 holds the result, so no argument is kept; on x86_64
 *    rax holds the result and nothing is known. The instruction is read
 *    here, through snap__plat_read, not in the stopped window.
 * 2. What kind. A futex wait is told apart by the libc function on the
 *    stack (frames 0..7 against the bounds of glibc's own entry points,
 *    found once with dlsym in libc's handle and the symbol's size):
 *    pthread_mutex_* -> mutex; pthread_rwlock_* -> rwlock;
 *    pthread_cond_* -> condvar; sem_* -> semaphore. Where an entry point
 *    tail-calls a local slow path (robust mutexes, timed mutex locks,
 *    sem_wait) none is on the stack, and pthread_cond_wait takes its
 *    mutex back through a local function; then the memory must agree
 *    field by field (a mutex's word, __owner and __kind with lll_lock's
 *    wait value 2; a robust mutex's __kind, __lock and __owner; a
 *    semaphore's value, waiters and private flag) or it is a raw futex.
 * FUTEX_LOCK_PI is a priority-inheritance mutex wherever called. Other calls by
 * number: read/write/recv... -> io (fd = first argument), nanosleep -> sleep,
 * poll/epoll/select -> poll.
 * 3. Who holds it (glibc's layouts, identical on x86_64 and aarch64 for
 *    the fields read; nptl/pthread_mutex_lock.c, nptl/pthread_rwlock_common.c,
 *    sysdeps/nptl/bits/struct_mutex.h, struct_rwlock.h):
 *    - mutex (normal, recursive, error-checking, adaptive; robust): the
 *      futex word is __lock at offset 0 of pthread_mutex_t; __owner (int,
 *      offset 8) is the holder's TID, __kind (int, offset 16) the type.
 *      A robust mutex also keeps the TID in __lock (FUTEX_TID_MASK).
 *    - priority-inheritance mutex: the futex word holds the owner's TID
 *      (the kernel's PI futex protocol, FUTEX_TID_MASK).
 *    - rwlock held for writing: __cur_writer (offset 24) is the writer's
 *      TID; waiters sleep on __wrphase_futex (offset 8) or
 *      __writers_futex (offset 12), so both bases are tried and an owner
 *      is kept only when exactly one reads as a plausible rwlock.
 *    - condition variables, semaphores, raw futexes: no owner, never a
 *      guessed one.
 *    An owner is accepted only if it is a live thread of this process
 *    (tgkill with signal 0) other than the waiter; otherwise unknown.
 *
 * Must not: run in the stopped window (dlsym, /proc, tgkill), read the
 * lock's memory any other way than snap__plat_read (it may be garbage,
 * or freed), or guess an owner for a kind that has none.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h> /* SYS_futex, SYS_flock */

#include "platform/linux/linux.h"

/* The futex commands (linux/futex.h), without the private and clock
   flags. */
#define FUTEX_CMD_MASK 0x7f
#define FUTEX_WAIT 0
#define FUTEX_LOCK_PI 6
#define FUTEX_TRYLOCK_PI 8
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_LOCK_PI2 13
#define FUTEX_PRIVATE 128
#define FUTEX_TID_MASK 0x3fffffffu

/* glibc's pthread_mutex_t and pthread_rwlock_t fields read here. */
#define MUTEX_OWNER_OFF 8
#define MUTEX_KIND_OFF 16
#define MUTEX_KIND_ROBUST 16
#define MUTEX_KIND_PI 32
#define MUTEX_KIND_PP 64
#define MUTEX_KIND_PSHARED 128
#define MUTEX_KIND_ELISION 256
#define MUTEX_KIND_NO_ELISION 512
#define RWLOCK_CUR_WRITER_OFF 24
#define RWLOCK_SHARED_OFF 28
_Static_assert(RWLOCK_SHARED_OFF == RWLOCK_CUR_WRITER_OFF + 4,
               "rwlock_writer reads __cur_writer and __shared as one pair");

/* ---- glibc's entry points, by kind --------------------------------------- */

typedef struct entry {
  const char *name;
  uint8_t kind; /* SNAP_WAIT_* */
} entry_t;

static const entry_t k_entries[] = {
    {"pthread_mutex_lock", SNAP_WAIT_MUTEX},
    {"pthread_mutex_timedlock", SNAP_WAIT_MUTEX},
    {"pthread_mutex_clocklock", SNAP_WAIT_MUTEX},
    {"pthread_rwlock_rdlock", SNAP_WAIT_RWLOCK},
    {"pthread_rwlock_wrlock", SNAP_WAIT_RWLOCK},
    {"pthread_rwlock_timedrdlock", SNAP_WAIT_RWLOCK},
    {"pthread_rwlock_timedwrlock", SNAP_WAIT_RWLOCK},
    {"pthread_rwlock_clockrdlock", SNAP_WAIT_RWLOCK},
    {"pthread_rwlock_clockwrlock", SNAP_WAIT_RWLOCK},
    {"pthread_cond_wait", SNAP_WAIT_CONDVAR},
    {"pthread_cond_timedwait", SNAP_WAIT_CONDVAR},
    {"pthread_cond_clockwait", SNAP_WAIT_CONDVAR},
    {"sem_wait", SNAP_WAIT_SEMAPHORE},
    {"sem_timedwait", SNAP_WAIT_SEMAPHORE},
    {"sem_clockwait", SNAP_WAIT_SEMAPHORE},
};
#define N_ENTRIES (sizeof k_entries / sizeof k_entries[0])

typedef struct range {
  uintptr_t lo, hi;
} range_t;

static range_t g_ranges[N_ENTRIES];
static atomic_int g_ranges_state; /* 0 not looked up, 1 filling, 2 done */

/* [lo, hi) of a function of libc (or, before glibc 2.34, libpthread), by
   its own symbol table entry: dlsym in the library's handle finds the
   library's definition even where a sanitizer interposes the name. */
static range_t lookup(const char *name) {
  static const char *const libs[] = {"libc.so.6", "libpthread.so.0"};
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
    void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
      continue;
    void *fn = dlsym(h, name);
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    range_t r = {0, 0};
    if (fn && dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) && sym &&
        sym->st_size > 0) {
      r.lo = (uintptr_t)fn;
      r.hi = r.lo + sym->st_size;
    }
    dlclose(h);
    if (r.lo)
      return r;
  }
  return (range_t){0, 0};
}

static void fill(range_t *r) {
  for (size_t i = 0; i < N_ENTRIES; i++)
    r[i] = lookup(k_entries[i].name);
}

/* Looked up once, by the first caller to claim the table; a caller that
   finds it being filled (or a forked child of that moment, where it stays
   so) looks up its own copy. No lock a forked child could inherit held;
   libc is never unloaded, so the bounds stay true. */
static const range_t *ranges(range_t *local) {
  int st = atomic_load_explicit(&g_ranges_state, memory_order_acquire);
  if (st == 2)
    return g_ranges;
  int unclaimed = 0;
  if (st == 0 &&
      atomic_compare_exchange_strong(&g_ranges_state, &unclaimed, 1)) {
    fill(g_ranges);
    atomic_store_explicit(&g_ranges_state, 2, memory_order_release);
    return g_ranges;
  }
  fill(local);
  return local;
}

/* The kind of the first frame (innermost first) inside one of glibc's
   entry points; SNAP_WAIT_FUTEX when none is. Frame 0 is exact, the rest
   are return addresses (looked up at pc - 1: the call). */
static unsigned kind_from_stack(const uintptr_t *pcs, int n) {
  range_t local[N_ENTRIES];
  const range_t *r = ranges(local);
  for (int f = 0; f < n && f < 8; f++) {
    uintptr_t pc = pcs[f] - (f > 0);
    for (size_t i = 0; i < N_ENTRIES; i++)
      if (pc >= r[i].lo && pc < r[i].hi)
        return k_entries[i].kind;
  }
  return SNAP_WAIT_FUTEX;
}

/* ---- Owners ----------------------------------------------------------- */

/* A live thread of this process other than the waiter. */
static bool live_other(int64_t tid, snap_thread_t waiter) {
  return tid > 0 && (uint64_t)tid != waiter && snap__linux_tid_ok(tid) &&
         snap__linux_thread_alive((int)tid);
}

static bool read_u32(uintptr_t addr, uint32_t *v) {
  return addr && snap__plat_read(addr, v, sizeof *v);
}

/* The fields of a pthread_mutex_t read here, in one checked read (each
   read is a system call). */
typedef struct mutex_words {
  uint32_t word, owner, kind;
} mutex_words_t;

static bool read_mutex(uintptr_t m, mutex_words_t *mw) {
  uint32_t v[MUTEX_KIND_OFF / 4 + 1];
  if (!m || !snap__plat_read(m, v, sizeof v))
    return false;
  mw->word = v[0];
  mw->owner = v[MUTEX_OWNER_OFF / 4];
  mw->kind = v[MUTEX_KIND_OFF / 4];
  return true;
}

/* __kind is a type (0..3) with known flags, and says shared exactly when
   the futex was waited on as shared; robust mutexes always wait as shared
   (the kernel's robust-list cleanup wakes without the private flag). */
static bool kind_ok(uint32_t kind, bool private_futex) {
  if ((kind & ~3u) & ~(uint32_t)(MUTEX_KIND_ROBUST | MUTEX_KIND_PI |
                                 MUTEX_KIND_PP | MUTEX_KIND_PSHARED |
                                 MUTEX_KIND_ELISION | MUTEX_KIND_NO_ELISION))
    return false;
  return (kind & MUTEX_KIND_ROBUST) ||
         !(kind & MUTEX_KIND_PSHARED) == private_futex;
}

/* The holder of a pthread_mutex_t whose futex word is its __lock, or 0. */
static int64_t mutex_owner(const mutex_words_t *mw, bool private_futex,
                           snap_thread_t waiter) {
  if (!kind_ok(mw->kind, private_futex) || mw->word == 0)
    return 0; /* not a mutex; or unlocked since: nobody holds it now */
  if (live_other((int32_t)mw->owner, waiter))
    return (int32_t)mw->owner;
  /* Robust and PI mutexes keep the TID in the word itself (__owner is
     written just after the word is taken). */
  if ((mw->kind & (MUTEX_KIND_ROBUST | MUTEX_KIND_PI)) &&
      live_other(mw->word & FUTEX_TID_MASK, waiter))
    return mw->word & FUTEX_TID_MASK;
  return 0;
}

/* Whether the words are a normal (not robust, not PI) pthread_mutex_t
   taken by lll_lock: the wait on it carries 2 ("locked, with waiters");
   its word is 0..2, its __kind a type with known flags whose sharing
   matches the wait's, its __owner 0 or a TID. For the waits whose entry
   point is not on the stack: pthread_mutex_timedlock tail-calls its slow
   path, and pthread_cond_wait takes its mutex back through an internal
   function (then the stack names the condition variable). */
static bool looks_like_mutex(const mutex_words_t *mw, bool private_futex) {
  return mw->word <= 2 && mw->owner <= FUTEX_TID_MASK &&
         !(mw->kind & (MUTEX_KIND_ROBUST | MUTEX_KIND_PI)) &&
         kind_ok(mw->kind, private_futex);
}

/* Robust mutexes are locked by an internal function that
   pthread_mutex_lock tail-calls (__pthread_mutex_lock_full), so no entry
   point is on the stack. Such a word is a robust mutex only when its
   fields agree: __kind says robust (with known flags), and __lock's TID
   and __owner name the same thread. Whether that thread is a live one
   other than the waiter is mutex_owner's question. */
static bool is_robust_mutex(const mutex_words_t *mw) {
  return (mw->kind & MUTEX_KIND_ROBUST) && kind_ok(mw->kind, false) &&
         mw->owner != 0 && (mw->word & FUTEX_TID_MASK) == mw->owner;
}

/* sem_wait tail-calls its slow path too. glibc's sem_t on 64-bit targets
   (sysdeps/nptl/internaltypes.h, struct new_sem): a 64-bit word, the value
   in its low half (the futex word, waited on with the value it expects,
   0) and the waiters in its high half (this waiter counts), then `private`:
   LLL_PRIVATE (0) or LLL_SHARED (128), and the wait's op carries
   FUTEX_PRIVATE_FLAG ^ private (lowlevellock-futex.h, __lll_private_flag;
   seen: private 0, op 0x189). */
static bool looks_like_semaphore(uintptr_t w, uint64_t op, uint64_t val) {
  uint32_t v[3];
  return w % 8 == 0 && snap__plat_read(w, v, sizeof v) && v[0] == val &&
         v[1] >= 1 && v[1] < (1u << 24) &&
         v[2] == ((op & FUTEX_PRIVATE) ^ FUTEX_PRIVATE);
}

/* A rwlock whose waiter sleeps on the word at w: its writer, or 0. */
static int64_t rwlock_writer(uintptr_t w, bool private_futex,
                             snap_thread_t waiter) {
  int64_t found = 0;
  int plausible = 0;
  static const unsigned k_futex_off[] = {8, 12}; /* __wrphase, __writers */
  for (int i = 0; i < 2; i++) {
    uintptr_t base = w - k_futex_off[i];
    uint32_t v[2]; /* __cur_writer, __shared */
    if (!snap__plat_read(base + RWLOCK_CUR_WRITER_OFF, v, sizeof v) ||
        v[1] > 1 || (v[1] == 0) != private_futex ||
        !live_other((int32_t)v[0], waiter))
      continue;
    plausible++;
    found = (int32_t)v[0];
  }
  return plausible == 1 ? found : 0;
}

/* ---- Decoding --------------------------------------------------------- */

/* The system-call instruction, and where a restarted call's pc is. */
#if defined(__x86_64__)
static const unsigned char k_insn[] = {0x0f, 0x05};
#define NR_SURVIVES_RETURN 0 /* rax holds the result */
#elif defined(__aarch64__)
static const unsigned char k_insn[] = {0x01, 0x00, 0x00, 0xd4};
#define NR_SURVIVES_RETURN 1 /* x8 keeps the number, x0 the result */
#endif

static bool insn_at(uintptr_t pc) {
  unsigned char b[sizeof k_insn];
  return pc && snap__plat_read(pc, b, sizeof b) &&
         memcmp(b, k_insn, sizeof b) == 0;
}

/* The call and the arguments that can be trusted: nargs 6, or 0 when the
   call has returned and only its number is left. False: not in a call. */
static bool which_call(const snap__plat_wait_regs_t *r, int64_t *nr,
                       int *nargs) {
  if (r->source == SNAP__WAIT_REGS_KERNEL) {
    *nr = r->nr;
    *nargs = 6;
    return r->nr >= 0;
  }
  if (r->source != SNAP__WAIT_REGS_THREAD || r->nr < 0 || r->nr > 4096)
    return false;
  if (insn_at(r->pc)) {
    *nr = r->nr; /* restarted (or about to enter): all intact */
    *nargs = 6;
    return true;
  }
  if (NR_SURVIVES_RETURN && r->pc >= sizeof k_insn &&
      insn_at(r->pc - sizeof k_insn)) {
    *nr = r->nr;
    *nargs = 0;
    return true;
  }
  return false;
}

static void decode_futex(snap_thread_t waiter, const uint64_t *a,
                         const uintptr_t *pcs, int n, snap_wait_t *out) {
  unsigned cmd = (unsigned)a[1] & FUTEX_CMD_MASK;
  bool private_futex = (a[1] & FUTEX_PRIVATE) != 0;
  uintptr_t word = (uintptr_t)a[0];
  out->address = word;
  int64_t owner = 0;
  if (cmd == FUTEX_LOCK_PI || cmd == FUTEX_LOCK_PI2 ||
      cmd == FUTEX_TRYLOCK_PI) {
    out->kind = SNAP_WAIT_MUTEX; /* only PI mutexes lock this way */
    uint32_t v;
    if (read_u32(word, &v) && live_other(v & FUTEX_TID_MASK, waiter))
      owner = v & FUTEX_TID_MASK;
  } else if (cmd == FUTEX_WAIT_REQUEUE_PI) {
    out->kind = SNAP_WAIT_CONDVAR;
  } else if (cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET) {
    out->kind = kind_from_stack(pcs, n);
    mutex_words_t mw;
    bool have =
        (out->kind == SNAP_WAIT_FUTEX || out->kind == SNAP_WAIT_CONDVAR ||
         out->kind == SNAP_WAIT_MUTEX) &&
        read_mutex(word, &mw);
    /* lll_lock's wait, reached unseen. Under a condition variable's
       entry point only its FUTEX_WAIT (the condition itself is waited on
       with FUTEX_WAIT_BITSET). */
    if (have && a[2] == 2 &&
        (out->kind == SNAP_WAIT_FUTEX ||
         (out->kind == SNAP_WAIT_CONDVAR && cmd == FUTEX_WAIT)) &&
        looks_like_mutex(&mw, private_futex))
      out->kind = SNAP_WAIT_MUTEX;
    if (out->kind == SNAP_WAIT_FUTEX) {
      /* No entry point on the stack: a slow path reached by a tail call
         (robust mutexes, semaphores), if the memory agrees. */
      if (have && is_robust_mutex(&mw)) {
        out->kind = SNAP_WAIT_MUTEX;
        owner = mutex_owner(&mw, private_futex, waiter);
      } else if (cmd == FUTEX_WAIT_BITSET &&
                 looks_like_semaphore(word, a[1], a[2]))
        out->kind = SNAP_WAIT_SEMAPHORE;
    } else if (out->kind == SNAP_WAIT_MUTEX && have) {
      owner = mutex_owner(&mw, private_futex, waiter);
    } else if (out->kind == SNAP_WAIT_RWLOCK) {
      owner = rwlock_writer(word, private_futex, waiter);
    }
  } else {
    out->kind = SNAP_WAIT_FUTEX;
  }
  if (out->kind == SNAP_WAIT_MUTEX || out->kind == SNAP_WAIT_RWLOCK) {
    out->owner_state = owner ? SNAP_OWNER_KNOWN : SNAP_OWNER_UNKNOWN;
    out->owner = (snap_thread_t)owner;
  }
}

void snap__plat_wait_decode(snap_thread_t waiter,
                            const snap__plat_wait_regs_t *regs,
                            const uintptr_t *pcs, int n, snap_wait_t *out) {
  snap__plat_wait_none(out);
  int64_t nr;
  int nargs;
  if (!regs || !which_call(regs, &nr, &nargs))
    return;
  out->syscall = nr;
  for (int i = 0; i < nargs; i++)
    out->args[i] = regs->args[i];
  switch (snap__linux_wait_of_syscall((long)nr)) {
  case SNAP_WAIT_FUTEX:
    if (nr == SYS_futex && nargs)
      decode_futex(waiter, regs->args, pcs, n, out);
    else /* futex_waitv: several words; flock: a file lock */
      out->kind = nr == SYS_flock ? SNAP_WAIT_OTHER : SNAP_WAIT_FUTEX;
    break;
  case SNAP_WAIT_IO:
    out->kind = SNAP_WAIT_IO;
    if (nargs && snap__linux_syscall_has_fd((long)nr))
      out->fd = (int32_t)regs->args[0];
    break;
  case SNAP_WAIT_SLEEP: out->kind = SNAP_WAIT_SLEEP; break;
  case SNAP_WAIT_POLL: out->kind = SNAP_WAIT_POLL; break;
  default: out->kind = SNAP_WAIT_OTHER; break;
  }
}
