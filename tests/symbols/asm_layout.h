/*
 * asm_layout.h — functions whose exact layout the symbol tests need, laid
 * out by the assembler (a compiler may reorder or pad C functions):
 *
 *   snap_test_before_spin  a one-instruction function
 *   snap_test_spin_first   directly after it; its first instruction jumps to
 *                          itself, so a thread that calls it stays on the
 *                          function's first byte forever
 *   snap_test_tail_caller  ends with a call (like a call to a noreturn
 *                          function), so its return address is...
 *   snap_test_after_tail   ...the first byte of this next function
 *
 * Each has unwind info (the assembler's default entry rule: nothing pushed
 * yet), so a walk from inside one finds its caller.
 * Include in exactly one .c file per executable.
 */
#ifndef SNAP_TEST_ASM_LAYOUT_H
#define SNAP_TEST_ASM_LAYOUT_H

void snap_test_before_spin(void);
void snap_test_spin_first(void);
void snap_test_tail_caller(void);
void snap_test_after_tail(void);

#if defined(__x86_64__)
#define SNAP_ASM_SELF_JUMP "jmp 1b"
#define SNAP_ASM_CALL "call"
#elif defined(__aarch64__)
#define SNAP_ASM_SELF_JUMP "b 1b"
#define SNAP_ASM_CALL "bl"
#endif

#define SNAP_ASM_FN(name, body)                                                \
  ".globl " name "\n.type " name ", %function\n" name                          \
  ":\n.cfi_startproc\n" body "\n.cfi_endproc\n.size " name ", .-" name "\n"

/* No alignment between them: each function starts at the byte after the
   previous one ends. */
__asm__(
    ".text\n.p2align 4\n" SNAP_ASM_FN(
        "snap_test_before_spin", "ret") SNAP_ASM_FN("snap_test_spin_first",
                                                    "1: " SNAP_ASM_SELF_JUMP)
        SNAP_ASM_FN(
            "snap_test_tail_caller", SNAP_ASM_CALL
            " snap_test_before_spin") ".globl snap_test_after_tail\n"
                                      ".type snap_test_after_tail, %function\n"
                                      "snap_test_after_tail:\n.cfi_"
                                      "startproc\nret\n.cfi_endproc\n"
                                      ".size snap_test_after_tail, "
                                      ".-snap_test_after_tail\n");

#endif
