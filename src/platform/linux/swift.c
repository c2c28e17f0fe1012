/*
 * swift.c — is the current thread running a Swift async task?
 *
 * On Apple the answer comes from the Swift runtime's thread-specific slot
 * (see platform/darwin). On Linux we ask the runtime itself when it is
 * loaded: swift_task_getCurrent reads a thread-local, allocation-free.
 * Without the runtime (plain C programs, and our tests, which build async
 * frames with clang's swiftasynccall) the frame's tag is taken at its word.
 */
#include "platform/linux/linux.h"

extern void *swift_task_getCurrent(void) __attribute__((weak));

bool snap__plat_async_task_active(void) {
  if (swift_task_getCurrent)
    return swift_task_getCurrent() != NULL;
  return true;
}
