/*
 * decimal.h — the library's one decimal formatter (decimal.c): integers
 * into text without printf, anywhere.
 *
 * A leaf below every layer, as libc is: it calls nothing, keeps no state,
 * takes no lock and allocates nothing, so platform/ (the /proc paths it
 * builds), the sampling handler, the exporters and the audit preload's
 * signal handlers (demo/audit) may all use it. [signal-safe] throughout.
 */
#ifndef SNAP_DECIMAL_H
#define SNAP_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/* Room for any 64-bit value and its NUL: "18446744073709551615" (20
   digits) and "-9223372036854775808" (a sign and 19). */
#define SNAP__DEC_MAX 21

/* v in decimal, as printf's "%" PRIu64 / PRId64 write it (no leading zero,
   no '+'), NUL-terminated at out[SNAP__DEC_MAX]; returns its length
   without the NUL. */
size_t snap__dec_u64(char *out, uint64_t v);
size_t snap__dec_i64(char *out, int64_t v);

/* The low `width` digits of v, zero-padded to exactly width characters
   and not terminated ("%0*" of v mod 10^width): fractions (".003") and
   two-digit date fields. width 0..20. */
void snap__dec_fixed(char *out, uint64_t v, size_t width);

#endif /* SNAP_DECIMAL_H */
