/*
 * start.c — the audit's start, in its order: the settings (config.c), the
 * writer's fork handler and real exit functions (writer.c), the fatal
 * signals' last write (fatal.c), then the hooks may record.
 *
 * Owns: the library's constructor (it runs before the program's main),
 * and the guard held across it. It exists so that no part starts another:
 * config.c is the bottom of the parts' order and the writer is below
 * fatal.c, so the one function that calls them all sits on top
 * (audit.h: the parts' order). Must not: do any part's work itself.
 */
#include "audit.h"

__attribute__((constructor)) static void audit_start(void) {
  audit_busy = AUDIT_OWN;
  audit_config_init();
  audit_writer_init();
  audit_fatal_init();
  atomic_store_explicit(&audit_ready, true, memory_order_release);
  audit_busy = 0;
}
