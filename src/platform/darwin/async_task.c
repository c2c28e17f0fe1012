/*
 * async_task.c — is a Swift async task running where the walk is?
 *
 * The caller's own thread: Apple's own check, as thread_stack_async_pcs
 * makes it. The Swift runtime keeps the current task's address in the
 * third Swift-reserved TSD slot (__PTK_FRAMEWORK_SWIFT_KEY3 = 103, fixed in
 * libpthread's tsd_private.h), and the task's id, a 32-bit value the runtime
 * guarantees non-zero, sits at 4 * sizeof(void *) + 4 in the task (an ABI
 * promise of the Swift runtime). pthread_getspecific on Darwin is a direct
 * load from the TSD array for any key, reserved ones included: no lock, no
 * allocation. The task object is alive while it runs on this thread, so
 * its id is read directly, as Libc does.
 *
 * Another thread (we are the sampler, inside the window): its TSD is not
 * ours to read cheaply, so the answer is yes, and the frame's tag decides;
 * the async reader then follows the context chain only while every context
 * is aligned and readable through vm_read_overwrite (async_frames.c).
 *
 * Swift concurrency itself is part of the OS (libswift_Concurrency in the
 * shared cache since iOS 15 / macOS 12, and back-deployed into apps before
 * that), so the watchdog always asks for async frames here.
 *
 * Must not: allocate, lock, or dereference a task pointer that is not
 * pointer-aligned.
 */
#include <pthread.h>

#include "platform/darwin/darwin.h"

#define SWIFT_TASK_KEY 103 /* __PTK_FRAMEWORK_SWIFT_KEY3 */
#define TASK_ID_OFFSET (4 * sizeof(void *) + 4)

bool snap__plat_async_task_active(void) {
  if (snap__darwin_window())
    return true;
  uintptr_t task =
      (uintptr_t)pthread_getspecific((pthread_key_t)SWIFT_TASK_KEY);
  if (!task || task % sizeof(void *))
    return false;
  return *(const volatile uint32_t *)(task + TASK_ID_OFFSET) != 0;
}

bool snap__plat_has_swift_concurrency(void) { return true; }
