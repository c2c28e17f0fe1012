/*
 * prologue.h — where a function's frame record lies from its body's stack
 * pointer, read from the instructions of its prologue (prologue.c).
 */
#ifndef SNAP_CAPTURE_PROLOGUE_H
#define SNAP_CAPTURE_PROLOGUE_H

#include <stdbool.h>
#include <stdint.h>

/* The function that begins at `start` and is executing at `pc` (a return
   address inside it: its prologue has run): when its prologue is one of
   the frame-pointer prologues compilers emit (prologue.c lists them) and
   nothing in it moves the stack pointer in a way the reader cannot follow,
   *off is the distance from the body's stack pointer up to its frame
   record ([saved fp, return address]), and true. Otherwise false: the
   record's place is not known. Code is read through snap__plat_read.
   [signal-safe] */
bool snap__prologue_record(uintptr_t start, uintptr_t pc, uintptr_t *off);

#endif /* SNAP_CAPTURE_PROLOGUE_H */
