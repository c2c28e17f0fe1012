/*
 * memory.c — the one primitive that reads memory we have not proven mapped.
 *
 * vm_read_overwrite on our own task: the kernel copies, so an unmapped or
 * protected address comes back as an error instead of a fault in the host
 * app. It is a Mach call to the kernel: no lock and no allocation in user
 * space (its reply port is the thread's cached MIG reply port), so it is
 * safe in the stopped window — the same primitive KSCrash, PLCrashReporter
 * and Sentry use there.
 *
 * Must not: fall back to a direct read "because it is probably fine".
 */
#include <mach/mach.h>

#include "platform/darwin/darwin.h"

bool snap__plat_read(uintptr_t addr, void *dst, size_t n) {
  if (n == 0)
    return true;
  if (addr == 0 || addr + n < addr)
    return false;
  vm_size_t got = 0;
  kern_return_t kr =
      vm_read_overwrite(mach_task_self(), (vm_address_t)addr, (vm_size_t)n,
                        (vm_address_t)(uintptr_t)dst, &got);
  return kr == KERN_SUCCESS && got == n;
}
