/*
 * objc_names.h — Objective-C method names from the Objective-C runtime, for
 * the Linux symbol provider. Never included from outside
 * src/platform/linux/.
 */
#ifndef SNAP_PLATFORM_LINUX_OBJC_NAMES_H
#define SNAP_PLATFORM_LINUX_OBJC_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The Objective-C method with the highest IMP in (floor, addr]: writes
   "-[Class selector]" or "+[Class selector]" into buf (truncated,
   NUL-terminated) and returns its IMP; 0 when there is none or no
   Objective-C runtime is loaded. [setup] */
uintptr_t snap__linux_objc_method(uintptr_t addr, uintptr_t floor, char *buf,
                                  size_t size);

/* The same in two steps, for a batch of addresses: prepare brings the
   method table up to date with the runtime (an images-stamp read, a class
   count and, when something changed, a rebuild) and says whether a runtime
   is loaded at all; lookup answers from the table prepare left, without
   asking the runtime again. So a stack of n frames checks once, not n
   times. images_generation: the core's image table generation the
   addresses were found under (snap__plat_sym_query_t), or 0; while it is
   the one of a call that found no runtime, prepare answers false without
   reading the images stamp. [setup] */
bool snap__linux_objc_prepare(uint64_t images_generation);
uintptr_t snap__linux_objc_lookup(uintptr_t addr, uintptr_t floor, char *buf,
                                  size_t size);

#endif /* SNAP_PLATFORM_LINUX_OBJC_NAMES_H */
