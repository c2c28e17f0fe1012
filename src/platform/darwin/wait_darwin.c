/*
 * wait_darwin.c — snap__plat_wait_decode on Apple: the ABI decoder
 * (wait_abi.c) given this process's memory and threads.
 *
 * Memory: snap__plat_read (vm_read_overwrite), which survives a lock word
 * that was freed or never was one.
 * Threads: our thread ids are Mach thread port names (threads_darwin.c).
 *   - A port name out of an os_unfair_lock word is accepted only when it
 *     is one of the ports task_threads lists now: a dead owner's name, a
 *     recycled name that is no longer a thread, or garbage all fail.
 *   - A 64-bit thread id (what psynch and libpthread's m_tid/rw_tid hold:
 *     pthread_threadid_np, the kernel's thread_tid) is mapped to a port by
 *     asking each listed thread for THREAD_IDENTIFIER_INFO.
 *   Each lookup lists the threads afresh and releases every port right
 *   task_threads gave and the array, as threads_darwin.c does.
 *
 * Must not: run in the stopped window (task_threads allocates; the
 * decoder runs after thread_resume, on the sampling thread); leak a port.
 */
#include <mach/mach.h>

#include "platform/darwin/darwin.h"
#include "platform/darwin/wait_abi.h"

static bool read_mem(void *ctx, uintptr_t addr, void *dst, size_t n) {
  (void)ctx;
  return snap__plat_read(addr, dst, n);
}

/* Whether thread `t` is the one wanted: by its port name, or by its
   64-bit thread id (THREAD_IDENTIFIER_INFO). */
typedef struct wanted {
  bool by_port;
  uint64_t value;
} wanted_t;

static bool is_wanted(mach_port_t t, const wanted_t *w) {
  if (w->by_port)
    return t == (mach_port_t)w->value;
  thread_identifier_info_data_t info;
  mach_msg_type_number_t n = THREAD_IDENTIFIER_INFO_COUNT;
  return thread_info(t, THREAD_IDENTIFIER_INFO, (thread_info_t)&info, &n) ==
             KERN_SUCCESS &&
         info.thread_id == w->value;
}

/* The live thread of this task that is wanted, into *out. Its port name
   stays valid after we drop our reference: libpthread holds one for the
   thread's life (threads_darwin.c). */
static bool find_thread(const wanted_t *w, snap_thread_t *out) {
  thread_act_array_t list;
  mach_msg_type_number_t count;
  if (task_threads(mach_task_self(), &list, &count) != KERN_SUCCESS)
    return false;
  bool found = false;
  for (mach_msg_type_number_t i = 0; i < count && !found; i++)
    if ((found = is_wanted(list[i], w)))
      *out = (snap_thread_t)list[i];
  snap__darwin_release_threads(list, count);
  return found;
}

static bool thread_of_port(void *ctx, uint32_t port, snap_thread_t *out) {
  (void)ctx;
  const wanted_t w = {true, port};
  return find_thread(&w, out);
}

static bool thread_of_tid(void *ctx, uint64_t tid, snap_thread_t *out) {
  (void)ctx;
  const wanted_t w = {false, tid};
  return find_thread(&w, out);
}

void snap__plat_wait_decode(snap_thread_t waiter,
                            const snap__plat_wait_regs_t *regs,
                            const uintptr_t *pcs, int n, snap_wait_t *out) {
  (void)pcs, (void)n; /* the ABI names the call; no stack heuristics */
  const snap__darwin_wait_env_t env = {
#if defined(__arm64__) || defined(__aarch64__)
    .arch = SNAP__DARWIN_ARCH_ARM64,
#elif defined(__x86_64__)
    .arch = SNAP__DARWIN_ARCH_X86_64,
#else
#error "stacksnap: unsupported Apple architecture"
#endif
    .read = read_mem,
    .thread_of_port = thread_of_port,
    .thread_of_tid = thread_of_tid,
    .ctx = NULL,
  };
  snap__darwin_wait_abi_decode(&env, waiter, regs, out);
}
