/*
 * wait_abi.c — what an Apple thread stopped in a system call waits for,
 * and who holds it, from its registers and the lock's memory, by the ABI
 * as xnu, libplatform and libpthread write it (docs/apple.md, "Contract:
 * what a blocked thread waits for", gives every fact its source line).
 * Pure: no Apple header; memory and threads come through the caller's
 * callbacks (wait_darwin.c on Apple, recorded data in the Linux test).
 *
 * 1. In a system call? Only if the instruction just before pc is this
 *    architecture's trap (arm64 `svc #0x80`, x86_64 `syscall`): the
 *    kernel saves the user pc after it, and a suspended thread's state
 *    is that saved state. The instruction is read through env->read.
 *    And only if the call has not ended since the suspension: on arm64 a
 *    finished call leaves its results in x0/x1 with pc and x16 as they
 *    were, so a lock call whose address argument is below the 4 GiB page
 *    zero, or a ulock operation the kernel refuses, has ended: NONE
 *    (call_ended).
 * 2. Which call. arm64: the low 32 bits of x16, negative for a Mach trap,
 *    else a BSD call numbered by its low 16 bits. x86_64: rax's class
 *    byte (bits 24..31) says Mach (1) or BSD (2), the rest is the number.
 *    Another class, a platform call or 0 (the indirect syscall) is
 *    SNAP_WAIT_OTHER; an x86_64 rax of class 0 is a call that returned
 *    (rax holds its result): not in a call.
 * 3. What kind, by number (the table below); for the lock calls:
 *    - __ulock_wait/__ulock_wait2, operation UL_UNFAIR_LOCK: the 32-bit
 *      word at the address argument holds the owner's thread port name
 *      with low flag bits cleared; the kernel's own reading is
 *      value | 3. A pthread mutex in libpthread's ulock mode waits the
 *      same way on its word at offset 24: kind mutex when the signature
 *      and the ulock option say so. UL_COMPARE_AND_WAIT*: a futex-like
 *      word with no owner.
 *    - __psynch_mutexwait: owner = the mutex's m_tid word now (when the
 *      signature is a mutex's), else the tid argument the waiter passed
 *      (libpthread: the owner it saw; 0: not yet written; ~0: being
 *      unlocked — neither names anyone).
 *    - __psynch_rw_*lock: the rwlock's rw_tid word, the writer's tid
 *      while it is held for writing.
 *    An owner is kept only when it maps to a live thread of this task
 *    other than the waiter.
 *
 * Must not: read memory any other way than env->read (the word may be
 * garbage, freed, or unmapped); guess an owner for a kind without one;
 * run in the stopped window (the callbacks list threads).
 */
#include "platform/darwin/wait_abi.h"

#include <string.h>

/* ---- ABI constants (sources in docs/apple.md) ---------------------------- */

/* arm64 `svc #0x80` (xnu SWI_SYSCALL 0x80), little-endian; x86_64
   `syscall`. */
static const unsigned char k_svc80[4] = {0x01, 0x10, 0x00, 0xd4};
static const unsigned char k_syscall[2] = {0x0f, 0x05};

/* x86_64 rax classes (osfmk/mach/i386/syscall_sw.h). */
#define CLASS_SHIFT 24
#define CLASS_MACH 1
#define CLASS_UNIX 2
#define NUMBER_MASK 0x00ffffffu

/* bsd/sys/ulock.h */
#define UL_OPCODE_MASK 0xffu
#define UL_COMPARE_AND_WAIT 1
#define UL_UNFAIR_LOCK 2
#define UL_COMPARE_AND_WAIT_SHARED 3
#define UL_UNFAIR_LOCK64_SHARED 4
#define UL_COMPARE_AND_WAIT64 5
#define UL_COMPARE_AND_WAIT64_SHARED 6
/* The userland reading of an owner value (ulock.h,
   ulock_owner_value_to_port_name): kernel port names have both low bits
   set (ipc_entry_name_mask). */
#define ULOCK_NAME_BITS 0x3u
#define MACH_PORT_DEAD 0xffffffffu /* libplatform's anonymous owner */

/* libpthread src/types_internal.h (LP64, both architectures). */
#define MUTEX_SIG_MASK 0xfffffffdu
#define MUTEX_SIG_CMP 0x4d555458u /* 'MUTX' */
#define MUTEX_OPTS_OFF 12         /* after long sig, os_unfair_lock lock */
#define MUTEX_OPT_ULOCK 0x4000u   /* options.ulock, bit 14 */
#define MUTEX_ULOCK_OFF 24        /* the ulock word / m_tid[] */
#define MUTEX_TID_OFF 24          /* m_tid[2], rounded up to 8 bytes */
#define TID_SWITCHING UINT64_MAX  /* PTHREAD_MTX_TID_SWITCHING */
#define RWLOCK_SIG 0x52574c4bu    /* 'RWLK' */
#define RWLOCK_TID_OFF 24         /* rw_tid[2], rounded up to 8 bytes */

/* ---- Kinds by number ------------------------------------------------- */

/* kind of each BSD call that can block and is not a lock decoded below;
   fd: its first argument is a descriptor. */
typedef struct call {
  int16_t nr;
  uint8_t kind;
  uint8_t fd;
} call_t;

static const call_t k_bsd[] = {
    {3, SNAP_WAIT_IO, 1},          /* read */
    {4, SNAP_WAIT_IO, 1},          /* write */
    {27, SNAP_WAIT_IO, 1},         /* recvmsg */
    {28, SNAP_WAIT_IO, 1},         /* sendmsg */
    {29, SNAP_WAIT_IO, 1},         /* recvfrom */
    {30, SNAP_WAIT_IO, 1},         /* accept */
    {93, SNAP_WAIT_POLL, 0},       /* select */
    {95, SNAP_WAIT_IO, 1},         /* fsync */
    {98, SNAP_WAIT_IO, 1},         /* connect */
    {120, SNAP_WAIT_IO, 1},        /* readv */
    {121, SNAP_WAIT_IO, 1},        /* writev */
    {133, SNAP_WAIT_IO, 1},        /* sendto */
    {153, SNAP_WAIT_IO, 1},        /* pread */
    {154, SNAP_WAIT_IO, 1},        /* pwrite */
    {230, SNAP_WAIT_POLL, 0},      /* poll */
    {271, SNAP_WAIT_SEMAPHORE, 0}, /* sem_wait */
    {297, SNAP_WAIT_RWLOCK, 0},    /* psynch_rw_longrdlock */
    {298, SNAP_WAIT_RWLOCK, 0},    /* psynch_rw_yieldwrlock */
    {300, SNAP_WAIT_RWLOCK, 0},    /* psynch_rw_upgrade */
    {305, SNAP_WAIT_CONDVAR, 0},   /* psynch_cvwait */
    {306, SNAP_WAIT_RWLOCK, 0},    /* psynch_rw_rdlock */
    {307, SNAP_WAIT_RWLOCK, 0},    /* psynch_rw_wrlock */
    {363, SNAP_WAIT_POLL, 0},      /* kevent */
    {368, SNAP_WAIT_POLL, 0},      /* workq_kernreturn: a parked worker */
    {369, SNAP_WAIT_POLL, 0},      /* kevent64 */
    {374, SNAP_WAIT_POLL, 0},      /* kevent_qos */
    {375, SNAP_WAIT_POLL, 0},      /* kevent_id */
    {394, SNAP_WAIT_POLL, 0},      /* pselect */
    {395, SNAP_WAIT_POLL, 0},      /* pselect_nocancel */
    {396, SNAP_WAIT_IO, 1},        /* read_nocancel */
    {397, SNAP_WAIT_IO, 1},        /* write_nocancel */
    {401, SNAP_WAIT_IO, 1},        /* recvmsg_nocancel */
    {402, SNAP_WAIT_IO, 1},        /* sendmsg_nocancel */
    {403, SNAP_WAIT_IO, 1},        /* recvfrom_nocancel */
    {404, SNAP_WAIT_IO, 1},        /* accept_nocancel */
    {407, SNAP_WAIT_POLL, 0},      /* select_nocancel */
    {408, SNAP_WAIT_IO, 1},        /* fsync_nocancel */
    {409, SNAP_WAIT_IO, 1},        /* connect_nocancel */
    {411, SNAP_WAIT_IO, 1},        /* readv_nocancel */
    {412, SNAP_WAIT_IO, 1},        /* writev_nocancel */
    {413, SNAP_WAIT_IO, 1},        /* sendto_nocancel */
    {414, SNAP_WAIT_IO, 1},        /* pread_nocancel */
    {415, SNAP_WAIT_IO, 1},        /* pwrite_nocancel */
    {417, SNAP_WAIT_POLL, 0},      /* poll_nocancel */
    {420, SNAP_WAIT_SEMAPHORE, 0}, /* sem_wait_nocancel */
    {480, SNAP_WAIT_IO, 1},        /* recvmsg_x */
    {481, SNAP_WAIT_IO, 1},        /* sendmsg_x */
    {540, SNAP_WAIT_IO, 1},        /* preadv */
    {541, SNAP_WAIT_IO, 1},        /* pwritev */
    {542, SNAP_WAIT_IO, 1},        /* preadv_nocancel */
    {543, SNAP_WAIT_IO, 1},        /* pwritev_nocancel */
};

#define SYS_PSYNCH_CVWAIT 305
#define SYS_SEMWAIT_SIGNAL 334
#define SYS_SEMWAIT_SIGNAL_NOCANCEL 423
#define SYS_SEM_WAIT 271
#define SYS_SEM_WAIT_NOCANCEL 420

/* arm64: xnu loads no 64-bit arm64 executable without a hard page zero
   of 4 GiB ("64 bit ARM binary must have hard page zero of 4GB to cover
   the lower 32 bit address space": bsd/kern/mach_loader.c, load_machfile,
   enforce_hard_pagezero), so no object of the process lies below it. */
#define ARM64_PAGEZERO_END 0x100000000ull

/* The argument that holds the address waited on, for the calls whose kind
   rests on one; -1 for the others. */
static int address_arg(int64_t nr) {
  switch (nr) {
  case SNAP__DARWIN_SYS_ULOCK_WAIT:
  case SNAP__DARWIN_SYS_ULOCK_WAIT2: return 1;
  case SNAP__DARWIN_SYS_PSYNCH_MUTEXWAIT:
  case 297: /* psynch_rw_longrdlock */
  case 298: /* psynch_rw_yieldwrlock */
  case 300: /* psynch_rw_upgrade */
  case SYS_PSYNCH_CVWAIT:
  case 306: /* psynch_rw_rdlock */
  case 307: /* psynch_rw_wrlock */
  case SYS_SEM_WAIT:
  case SYS_SEM_WAIT_NOCANCEL: return 0;
  default: return -1;
  }
}

/* Whether the call in the registers already ended (arm64). A wait that
   ends after thread_suspend still runs to its return: the hold parks the
   thread only on its way back to user space (xnu thread_act.c,
   thread_hold: an AST), and the return has written the results into the
   saved state — x0, and x1 on success (bsd/dev/arm/systemcalls.c,
   arm_prepare_u64_syscall_return) — while pc still follows the svc and
   x16 still holds the number. So an address argument below the page zero's
   end, or a ulock operation the kernel does not accept, is a result, not
   an argument: the wait is over. x86_64 needs no such test: the return
   overwrites rax, the number register (a class-0 rax, checked before). */
static bool call_ended(const snap__darwin_wait_env_t *env, int64_t nr,
                       const uint64_t *a) {
  if (env->arch != SNAP__DARWIN_ARCH_ARM64)
    return false;
  int i = address_arg(nr);
  if (i >= 0 && a[i] < ARM64_PAGEZERO_END)
    return true;
  if (nr == SNAP__DARWIN_SYS_ULOCK_WAIT || nr == SNAP__DARWIN_SYS_ULOCK_WAIT2) {
    uint32_t op = (uint32_t)a[0] & UL_OPCODE_MASK;
    return op == 0 || op > UL_COMPARE_AND_WAIT64_SHARED;
  }
  return false;
}

/* Mach traps, as their negative numbers. */
static unsigned mach_kind(int64_t nr) {
  switch (nr) {
  case -36: /* semaphore_wait_trap */
  case -37: /* semaphore_wait_signal_trap */
  case -38: /* semaphore_timedwait_trap */
  case -39: /* semaphore_timedwait_signal_trap */ return SNAP_WAIT_SEMAPHORE;
  case -62: /* clock_sleep_trap */
  case -90: /* mach_wait_until */ return SNAP_WAIT_SLEEP;
  default: /* mach_msg_trap (-31), mach_msg_overwrite_trap (-32),
              mach_msg2_trap (-47): a message receive or a synchronous
              request, not told apart here */
    return SNAP_WAIT_OTHER;
  }
}

/* ---- Reading ---------------------------------------------------------- */

static bool read_u32(const snap__darwin_wait_env_t *env, uintptr_t addr,
                     uint32_t *v) {
  return addr && env->read(env->ctx, addr, v, sizeof *v);
}

static bool read_u64(const snap__darwin_wait_env_t *env, uintptr_t addr,
                     uint64_t *v) {
  return addr && env->read(env->ctx, addr, v, sizeof *v);
}

/* Whether the bytes just before pc are the trap instruction. */
static bool after_trap(const snap__darwin_wait_env_t *env, uintptr_t pc) {
  const unsigned char *insn =
      env->arch == SNAP__DARWIN_ARCH_ARM64 ? k_svc80 : k_syscall;
  size_t n =
      env->arch == SNAP__DARWIN_ARCH_ARM64 ? sizeof k_svc80 : sizeof k_syscall;
  unsigned char b[4];
  return pc > n && env->read(env->ctx, pc - n, b, n) && memcmp(b, insn, n) == 0;
}

/* The call as snap_wait_t numbers it: BSD >= 1, Mach < 0; false when the
   register does not hold a call this decoder can number. */
static bool number(unsigned arch, int64_t reg, int64_t *nr) {
  if (arch == SNAP__DARWIN_ARCH_ARM64) {
    int32_t low = (int32_t)(uint32_t)(uint64_t)reg; /* "only first word" */
    if (low == INT32_MIN) /* PLATFORM_SYSCALL_TRAP_NO */
      return false;
    *nr = low < 0 ? low : (int64_t)(uint16_t)low;
    return low != 0; /* 0: the indirect syscall */
  }
  uint32_t r = (uint32_t)(uint64_t)reg;
  uint32_t cls = r >> CLASS_SHIFT, n = r & NUMBER_MASK;
  if (cls == CLASS_UNIX && n != 0) {
    *nr = n;
    return true;
  }
  if (cls == CLASS_MACH && n != 0) {
    *nr = -(int64_t)n;
    return true;
  }
  return false;
}

/* A live thread other than the waiter, or false. */
static bool owner_of_port(const snap__darwin_wait_env_t *env, uint32_t port,
                          snap_thread_t waiter, snap_thread_t *out) {
  snap_thread_t t;
  if (port == 0 || port == MACH_PORT_DEAD ||
      !env->thread_of_port(env->ctx, port, &t) || t == waiter)
    return false;
  *out = t;
  return true;
}

static bool owner_of_tid(const snap__darwin_wait_env_t *env, uint64_t tid,
                         snap_thread_t waiter, snap_thread_t *out) {
  snap_thread_t t;
  if (tid == 0 || tid == TID_SWITCHING ||
      !env->thread_of_tid(env->ctx, tid, &t) || t == waiter)
    return false;
  *out = t;
  return true;
}

/* Whether a pthread_mutex_t starts at m (its signature). */
static bool is_mutex(const snap__darwin_wait_env_t *env, uintptr_t m) {
  uint32_t sig;
  return read_u32(env, m, &sig) && (sig & MUTEX_SIG_MASK) == MUTEX_SIG_CMP;
}

/* The 64-bit tid word of a lock at base + off, rounded up to 8 bytes as
   MUTEX_GETTID_ADDR / RWLOCK_GETTID_ADDR do. */
static bool read_tid(const snap__darwin_wait_env_t *env, uintptr_t base,
                     uintptr_t off, uint64_t *tid) {
  return read_u64(env, (base + off + 7) & ~(uintptr_t)7, tid);
}

/* ---- The lock calls ------------------------------------------------------ */

static void set_owner(snap_wait_t *out, bool known, snap_thread_t owner) {
  out->owner_state = known ? SNAP_OWNER_KNOWN : SNAP_OWNER_UNKNOWN;
  out->owner = known ? owner : 0;
}

/* __ulock_wait(operation, addr, value, timeout) and __ulock_wait2(...,
   timeout_ns, value2): arguments 0..2 alike. */
static void decode_ulock(const snap__darwin_wait_env_t *env,
                         snap_thread_t waiter, const uint64_t *a,
                         snap_wait_t *out) {
  uintptr_t word = (uintptr_t)a[1];
  out->address = word;
  switch ((uint32_t)a[0] & UL_OPCODE_MASK) {
  case UL_UNFAIR_LOCK: {
    out->kind = SNAP_WAIT_UNFAIR_LOCK;
    uint32_t opts;
    if (word >= MUTEX_ULOCK_OFF && is_mutex(env, word - MUTEX_ULOCK_OFF) &&
        read_u32(env, word - MUTEX_ULOCK_OFF + MUTEX_OPTS_OFF, &opts) &&
        (opts & MUTEX_OPT_ULOCK)) {
      out->kind = SNAP_WAIT_MUTEX; /* libpthread's ulock mutex */
      out->address = word - MUTEX_ULOCK_OFF;
    }
    /* The word now, not the value the waiter passed: the holder may have
       changed hands since (the waiter would then be woken and wait again
       with the new value). 0: unlocked since; nobody holds it. */
    uint32_t v;
    snap_thread_t t = 0;
    bool known = read_u32(env, word, &v) && v != 0 &&
                 owner_of_port(env, v | ULOCK_NAME_BITS, waiter, &t);
    set_owner(out, known, t);
    break;
  }
  case UL_COMPARE_AND_WAIT:
  case UL_COMPARE_AND_WAIT_SHARED:
  case UL_COMPARE_AND_WAIT64:
  case UL_COMPARE_AND_WAIT64_SHARED:
  default: /* UL_UNFAIR_LOCK64_SHARED and unknown operations: the kernel
              answers EINVAL, or names no owner we can read */
    out->kind = SNAP_WAIT_FUTEX;
    break;
  }
}

/* __psynch_mutexwait(mutex, mgen, ugen, tid, flags). */
static void decode_mutexwait(const snap__darwin_wait_env_t *env,
                             snap_thread_t waiter, const uint64_t *a,
                             snap_wait_t *out) {
  uintptr_t m = (uintptr_t)a[0];
  out->kind = SNAP_WAIT_MUTEX;
  out->address = m;
  snap_thread_t t = 0;
  bool known = false;
  uint64_t now;
  /* The owner's tid as the mutex holds it now (MUTEX_GETTID_ADDR: m_tid
     rounded up to 8 bytes); when it names nobody yet (0) or is being
     handed over (~0), the hint the waiter passed. A tid that names a
     thread which is gone is not replaced by an older hint. */
  if (is_mutex(env, m) && read_tid(env, m, MUTEX_TID_OFF, &now) && now != 0 &&
      now != TID_SWITCHING)
    known = owner_of_tid(env, now, waiter, &t);
  else
    known = owner_of_tid(env, a[3], waiter, &t);
  set_owner(out, known, t);
}

/* __psynch_rw_*lock(rwlock, lgenval, ugenval, rw_wc, flags): no owner in
   the arguments; rw_tid holds the writer's tid while it is held for
   writing (0 otherwise: readers are not named). */
static void decode_rwlock(const snap__darwin_wait_env_t *env,
                          snap_thread_t waiter, const uint64_t *a,
                          snap_wait_t *out) {
  uintptr_t rw = (uintptr_t)a[0];
  out->kind = SNAP_WAIT_RWLOCK;
  out->address = rw;
  uint32_t sig;
  uint64_t tid;
  snap_thread_t t = 0;
  bool known = read_u32(env, rw, &sig) && sig == RWLOCK_SIG &&
               read_tid(env, rw, RWLOCK_TID_OFF, &tid) &&
               owner_of_tid(env, tid, waiter, &t);
  set_owner(out, known, t);
}

/* ---- Decoding ------------------------------------------------------------ */

void snap__darwin_wait_abi_decode(const snap__darwin_wait_env_t *env,
                                  snap_thread_t waiter,
                                  const snap__plat_wait_regs_t *regs,
                                  snap_wait_t *out) {
  snap__plat_wait_none(out);
  if (!env || !regs || regs->source != SNAP__WAIT_REGS_THREAD ||
      (env->arch != SNAP__DARWIN_ARCH_ARM64 &&
       env->arch != SNAP__DARWIN_ARCH_X86_64) ||
      !after_trap(env, regs->pc))
    return;
  /* x86_64: a class-0 rax is a returned call's result (or garbage). */
  if (env->arch == SNAP__DARWIN_ARCH_X86_64 &&
      ((uint64_t)regs->nr >> CLASS_SHIFT) == 0)
    return;
  int64_t nr;
  memcpy(out->args, regs->args, sizeof out->args);
  if (!number(env->arch, regs->nr, &nr)) {
    out->kind = SNAP_WAIT_OTHER; /* indirect, platform or machine call */
    out->syscall = regs->nr;
    return;
  }
  out->syscall = nr;
  if (nr < 0) {
    out->kind = mach_kind(nr);
    return;
  }
  const uint64_t *a = regs->args;
  if (call_ended(env, nr, a)) {
    snap__plat_wait_none(out); /* returning: what it waited for is gone */
    return;
  }
  switch (nr) {
  case SNAP__DARWIN_SYS_ULOCK_WAIT:
  case SNAP__DARWIN_SYS_ULOCK_WAIT2: decode_ulock(env, waiter, a, out); return;
  case SNAP__DARWIN_SYS_PSYNCH_MUTEXWAIT:
    decode_mutexwait(env, waiter, a, out);
    return;
  case SYS_SEMWAIT_SIGNAL:
  case SYS_SEMWAIT_SIGNAL_NOCANCEL:
    /* (cond_sem, mutex_sem, timeout, relative, sec, nsec): Libc's
       nanosleep waits with a timeout on a semaphore nobody signals and no
       mutex_sem. Anything else is a semaphore wait. */
    out->kind = a[2] != 0 && (uint32_t)a[1] == 0 ? SNAP_WAIT_SLEEP
                                                 : SNAP_WAIT_SEMAPHORE;
    return;
  default: break;
  }
  out->kind = SNAP_WAIT_OTHER;
  for (size_t i = 0; i < sizeof k_bsd / sizeof k_bsd[0]; i++) {
    if (k_bsd[i].nr != nr)
      continue;
    out->kind = k_bsd[i].kind;
    if (k_bsd[i].fd)
      out->fd = (int32_t)a[0];
    if (out->kind == SNAP_WAIT_RWLOCK)
      decode_rwlock(env, waiter, a, out);
    else if (nr == SYS_PSYNCH_CVWAIT || nr == SYS_SEM_WAIT ||
             nr == SYS_SEM_WAIT_NOCANCEL)
      out->address = (uintptr_t)a[0]; /* the pthread_cond_t / sem_t */
    break;
  }
}
