/*
 * objc_names.h — Objective-C method names from the Objective-C runtime, for
 * the Linux symbol provider. Never included from outside
 * src/platform/linux/.
 */
#ifndef SNAP_PLATFORM_LINUX_OBJC_NAMES_H
#define SNAP_PLATFORM_LINUX_OBJC_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* The Objective-C method with the highest IMP in (floor, addr]: writes
   "-[Class selector]" or "+[Class selector]" into buf (truncated,
   NUL-terminated) and returns its IMP; 0 when there is none or no
   Objective-C runtime is loaded. [setup] */
uintptr_t snap__linux_objc_method(uintptr_t addr, uintptr_t floor, char *buf,
                                  size_t size);

#endif /* SNAP_PLATFORM_LINUX_OBJC_NAMES_H */
