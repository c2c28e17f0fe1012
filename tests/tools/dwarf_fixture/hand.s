/* hand.s — a hand-written DWARF 3 line program (fixture of
   test_dwarf_lines) for what compilers no longer emit: DW_LNE_define_file,
   an unknown standard opcode (opcode_base 14) and an unknown extended one,
   DW_LNS_fixed_advance_pc and const_add_pc, rows sharing an address, rows
   out of address order, a sequence nested in another, line 0, include
   directories relative and absolute. Linked into a shared library with
   -nostdlib; addr2line reads it as the oracle. Data only: assembles for
   x86_64 and aarch64 alike. */
        .text
        .globl  dwl_hand
        .type   dwl_hand, %function
dwl_hand:
        .skip   256
        .size   dwl_hand, 256

        .section .debug_abbrev,"",%progbits
.Labbrev:
        .uleb128 1              /* code */
        .uleb128 0x11           /* DW_TAG_compile_unit */
        .byte   0               /* no children */
        .uleb128 0x10, 0x06     /* DW_AT_stmt_list, data4 */
        .uleb128 0x1b, 0x08     /* DW_AT_comp_dir, string */
        .uleb128 0x03, 0x08     /* DW_AT_name, string */
        .uleb128 0x11, 0x01     /* DW_AT_low_pc, addr */
        .uleb128 0x12, 0x01     /* DW_AT_high_pc, addr */
        .byte   0, 0
        .byte   0

        .section .debug_info,"",%progbits
        .long   .Linfo_end - .Linfo_start
.Linfo_start:
        .short  3
        .long   .Labbrev
        .byte   8
        .uleb128 1
        .long   .Lline
        .asciz  "/hand/comp"
        .asciz  "a.c"
        .quad   dwl_hand
        .quad   dwl_hand + 256
.Linfo_end:

        .section .debug_line,"",%progbits
.Lline:
        .long   .Lline_end - .Lline_start
.Lline_start:
        .short  3
        .long   .Lprog - .Lhdr
.Lhdr:
        .byte   1               /* minimum_instruction_length */
        .byte   1               /* default_is_stmt */
        .byte   -5              /* line_base */
        .byte   14              /* line_range */
        .byte   14              /* opcode_base: opcode 13 is unknown */
        .byte   0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 1
        .asciz  "inc"           /* dir 1 */
        .asciz  "/abs/dir"      /* dir 2 */
        .byte   0
        .asciz  "a.c"           /* file 1 */
        .uleb128 0, 0, 0
        .asciz  "b.h"           /* file 2: inc/b.h */
        .uleb128 1, 0, 0
        .asciz  "c.h"           /* file 3: /abs/dir/c.h */
        .uleb128 2, 0, 0
        .byte   0
.Lprog:
        /* Sequence 1: [0, 128) */
        .byte   0, 9, 2         /* set_address */
        .quad   dwl_hand
        .byte   3               /* advance_line 9: line 10 */
        .sleb128 9
        .byte   1               /* copy: 0 a.c:10 */
        .byte   2               /* advance_pc 16 */
        .uleb128 16
        .byte   3
        .sleb128 1
        .byte   1               /* copy: 16 a.c:11 */
        .byte   4               /* set_file 2 */
        .uleb128 2
        .byte   9               /* fixed_advance_pc 8 */
        .short  8
        .byte   1               /* copy: 24 comp/inc/b.h:11 */
        .byte   13              /* unknown standard opcode, one operand */
        .uleb128 0x85
        .byte   77              /* special: +4, +2: 28 b.h:13 */
        .byte   0, 8, 3         /* define_file "d.c" dir 2: file 4 */
        .asciz  "d.c"
        .uleb128 2, 0, 0
        .byte   4
        .uleb128 4
        .byte   2
        .uleb128 12
        .byte   1               /* copy: 40 /abs/dir/d.c:13 */
        .byte   0, 4, 0x80, 1, 2, 3 /* unknown extended opcode */
        .byte   0, 2, 4, 5      /* set_discriminator 5 */
        .byte   2
        .uleb128 4
        .byte   1               /* copy: 44 d.c:13 (discriminator 5) */
        .byte   8               /* const_add_pc: +17 = 61 */
        .byte   3
        .sleb128 -3
        .byte   4
        .uleb128 3
        .byte   1               /* copy: 61 /abs/dir/c.h:10 */
        .byte   2
        .uleb128 3
        .byte   3
        .sleb128 1
        .byte   1               /* copy: 64 c.h:11 */
        .byte   3
        .sleb128 1
        .byte   1               /* copy: 64 c.h:12 (the last at 64) */
        .byte   2
        .uleb128 64
        .byte   0, 1, 1         /* end_sequence at 128 */

        /* Sequence 2: rows out of address order, [160, 220). (Sorted
           as binutils sorts them; its list keeps the first row's address
           as the start, so the first row here is the lowest.) */
        .byte   0, 9, 2
        .quad   dwl_hand + 160
        .byte   3
        .sleb128 39
        .byte   1               /* 160 a.c:40 */
        .byte   0, 9, 2
        .quad   dwl_hand + 200
        .byte   3
        .sleb128 10
        .byte   1               /* 200 a.c:50 */
        .byte   0, 9, 2
        .quad   dwl_hand + 180
        .byte   3
        .sleb128 -5
        .byte   1               /* 180 a.c:45 */
        .byte   0, 9, 2
        .quad   dwl_hand + 220
        .byte   0, 1, 1         /* end at 220 */

        /* Sequence 3: nested in sequence 1, dropped */
        .byte   0, 9, 2
        .quad   dwl_hand + 32
        .byte   3
        .sleb128 98
        .byte   1               /* 32 a.c:99 */
        .byte   2
        .uleb128 8
        .byte   0, 1, 1         /* end at 40 */

        /* Sequence 4: line 0, [240, 248) */
        .byte   0, 9, 2
        .quad   dwl_hand + 240
        .byte   3
        .sleb128 -1
        .byte   1               /* 240 a.c:0 */
        .byte   2
        .uleb128 8
        .byte   0, 1, 1
.Lline_end:
