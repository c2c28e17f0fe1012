/*
 * intern.h — shared strings for named stacks: one copy of each symbol or
 * file name, however many stacks name it, known by a 32-bit id.
 *
 * Must not: be used from the stopped window (locks, allocates).
 */
#ifndef SNAP_SYMBOLS_INTERN_H
#define SNAP_SYMBOLS_INTERN_H

#include <stddef.h>
#include <stdint.h>

/* ids[i] = the id of s[i] (0 for NULL), with one reference each. SNAP_OK,
   or SNAP_ENOMEM: then no reference is taken and every id is 0. */
int snap__intern_acquire(const char *const *s, int n, uint32_t *ids);
/* Drops one reference per nonzero id; a string no id refers to is freed. */
void snap__intern_release(const uint32_t *ids, int n);
/* Frees the tables when no string is left. */
void snap__intern_trim(void);
/* The string of an id the caller holds a reference to (NULL for 0).
   Lock-free. */
const char *snap__intern_get(uint32_t id);
/* Memory the shared strings take now: the strings, their entries and the
   tables that find them. */
size_t snap__intern_bytes(void);

#endif /* SNAP_SYMBOLS_INTERN_H */
