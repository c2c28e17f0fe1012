/* hand5.s — a hand-written DWARF 5 unit (fixture of test_dwarf_lines)
   whose line header uses entry forms compilers here do not: paths as
   DW_FORM_string, a directory index as udata, an MD5 (data16), a
   timestamp in a DW_FORM_block; a relative directory (joined to
   comp_dir). Its DIE names comp_dir by DW_FORM_strx1 through
   .debug_str_offsets, after DW_AT_str_offsets_base as clang orders them.
   (addr2line 2.40 cannot be the oracle for more: it refuses a whole table
   for a vendor content type such as LLVM's source, reads no DW_FORM_strp
   path in a line header, and resolves a strx before the base wrongly.) Linked into a shared library with -nostdlib; addr2line is
   the oracle. Data only: assembles for x86_64 and aarch64 alike. */
        .text
        .globl  dwl_hand5
        .type   dwl_hand5, %function
dwl_hand5:
        .skip   128
        .size   dwl_hand5, 128

        .section .debug_str,"MS",%progbits,1
.Lstr_comp:
        .asciz  "/hand5/comp"
.Lstr_name:
        .asciz  "m.c"
.Lstr_sub:
        .asciz  "sub"
.Lstr_k:
        .asciz  "k.h"

        .section .debug_str_offsets,"",%progbits
        .long   .Lso_end - .Lso_start
.Lso_start:
        .short  5
        .short  0
.Lso_base:
        .long   .Lstr_name
        .long   .Lstr_comp
.Lso_end:

        .section .debug_abbrev,"",%progbits
.Labbrev5:
        .uleb128 1
        .uleb128 0x11           /* DW_TAG_compile_unit */
        .byte   0
        .uleb128 0x03, 0x25     /* DW_AT_name, strx1 */
        .uleb128 0x72, 0x17     /* DW_AT_str_offsets_base */
        .uleb128 0x10, 0x17     /* DW_AT_stmt_list, sec_offset */
        .uleb128 0x1b, 0x25     /* DW_AT_comp_dir, strx1 */
        .uleb128 0x11, 0x01     /* DW_AT_low_pc, addr */
        .uleb128 0x12, 0x07     /* DW_AT_high_pc, data8 (a length) */
        .byte   0, 0
        .byte   0

        .section .debug_info,"",%progbits
        .long   .Linfo5_end - .Linfo5_start
.Linfo5_start:
        .short  5
        .byte   1               /* DW_UT_compile */
        .byte   8
        .long   .Labbrev5
        .uleb128 1
        .byte   0               /* name: index 0 */
        .long   .Lso_base
        .long   .Lline5
        .byte   1               /* comp_dir: index 1 */
        .quad   dwl_hand5
        .quad   128
.Linfo5_end:

        .section .debug_line,"",%progbits
.Lline5:
        .long   .Lline5_end - .Lline5_start
.Lline5_start:
        .short  5
        .byte   8               /* address_size */
        .byte   0               /* segment_selector_size */
        .long   .Lprog5 - .Lhdr5
.Lhdr5:
        .byte   1, 1            /* min_inst, max_ops */
        .byte   1               /* default_is_stmt */
        .byte   -5, 14, 13      /* line_base, line_range, opcode_base */
        .byte   0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1
        /* Directories: path as string, then a timestamp as a block. */
        .byte   2
        .uleb128 1, 0x08        /* DW_LNCT_path, string */
        .uleb128 3, 0x09        /* DW_LNCT_timestamp, block */
        .uleb128 3
        .asciz  "/hand5/comp"   /* dir 0 */
        .uleb128 2
        .byte   0xaa, 0xbb
        .asciz  "sub"           /* dir 1 */
        .uleb128 0
        .asciz  "/abs5"         /* dir 2 */
        .uleb128 1
        .byte   0xcc
        /* Files: path as string, dir as udata, an MD5. */
        .byte   3
        .uleb128 1, 0x08        /* DW_LNCT_path, string */
        .uleb128 2, 0x0f        /* DW_LNCT_directory_index, udata */
        .uleb128 5, 0x1e        /* DW_LNCT_MD5, data16 */
        .uleb128 3
        .asciz  "m.c"           /* file 0: m.c, dir 0 */
        .uleb128 0
        .quad   0x1122334455667788, 0x99aabbccddeeff00
        .asciz  "k.h"           /* file 1: sub/k.h */
        .uleb128 1
        .quad   0, 0
        .asciz  "k.h"           /* file 2: /abs5/k.h */
        .uleb128 2
        .quad   0, 0
.Lprog5:
        .byte   0, 9, 2
        .quad   dwl_hand5
        .byte   3
        .sleb128 4
        .byte   1               /* 0: file 0 (binutils' first file) m.c:5 */
        .byte   2
        .uleb128 16
        .byte   4
        .uleb128 1
        .byte   1               /* 16: sub/k.h:5 */
        .byte   2
        .uleb128 16
        .byte   4
        .uleb128 2
        .byte   3
        .sleb128 20
        .byte   1               /* 32: /abs5/k.h:25 */
        .byte   2
        .uleb128 16
        .byte   4
        .uleb128 0
        .byte   1               /* 48: m.c:25 */
        .byte   2
        .uleb128 16
        .byte   4
        .uleb128 7
        .byte   1               /* 64: file 7 of 3: <unknown>:25 */
        .byte   2
        .uleb128 32
        .byte   0, 1, 1         /* end at 96 */
.Lline5_end:
