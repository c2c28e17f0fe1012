# tools/symbolicate/dwarf_lines.c (libdw) against GNU addr2line
# (test_dwarf_lines) and under libFuzzer (fuzz_dwarf_lines). Included from
# tests/CMakeLists.txt (Linux part: SNAP_CLANG is set there). Without libdw
# for the target (tools/symbolicate/dwarf.cmake) the test says skipped.
if(NOT TARGET snap_symbolicate_dwarf)
  snap_skipped_test(test_dwarf_lines "no libdw for the target: stacksnap-symbolicate not built")
  return()
endif()
#
# Fixtures, built here by dwarf_fixture.sh from dwarf_fixture/: the program
# (two units, code in a header, a subdirectory) and the shared library, by
# gcc and clang for the target, at DWARF 2/4/5 (and 64-bit DWARF), -O0 to
# -O2, PIE and not; each split with objcopy --only-keep-debug.

# GNU binutils: llvm-addr2line answers differently (see dwarf_lines.c's
# head comment), and the clang configurations' CMAKE_* tools are LLVM's.
set(dwl_objcopy ${CMAKE_OBJCOPY})
if(NOT dwl_objcopy OR dwl_objcopy MATCHES "llvm")
  find_program(SNAP_GNU_OBJCOPY NAMES ${CMAKE_SYSTEM_PROCESSOR}-linux-gnu-objcopy objcopy REQUIRED)
  set(dwl_objcopy ${SNAP_GNU_OBJCOPY})
endif()
set(dwl_addr2line ${CMAKE_ADDR2LINE})
if(NOT dwl_addr2line OR dwl_addr2line MATCHES "llvm")
  find_program(SNAP_GNU_ADDR2LINE NAMES ${CMAKE_SYSTEM_PROCESSOR}-linux-gnu-addr2line addr2line REQUIRED)
  set(dwl_addr2line ${SNAP_GNU_ADDR2LINE})
endif()
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  set(dwl_gcc ${CMAKE_C_COMPILER})
else()
  find_program(SNAP_DWL_GCC NAMES ${CMAKE_SYSTEM_PROCESSOR}-linux-gnu-gcc gcc REQUIRED)
  set(dwl_gcc ${SNAP_DWL_GCC})
endif()
set(dwl_clang ${SNAP_CLANG})
if(CMAKE_CROSSCOMPILING)
  set(dwl_clang_target --target=${CMAKE_SYSTEM_PROCESSOR}-linux-gnu)
endif()

set(dwl_src ${CMAKE_CURRENT_SOURCE_DIR}/tools/dwarf_fixture)
set(dwl_dir ${CMAKE_CURRENT_BINARY_DIR}/dwarf_fixtures)
file(MAKE_DIRECTORY ${dwl_dir})
file(GLOB dwl_inputs ${dwl_src}/*.c ${dwl_src}/*.s ${dwl_src}/*/*.c ${dwl_src}/*/*.h)
set(dwl_outputs "")
# dwl_fixture(name exe|lib|FILE.s gcc|clang LDFLAGS flags...): ${dwl_dir}/name and
# ${dwl_dir}/name.debug.
function(dwl_fixture name kind compiler ldflags)
  if(compiler STREQUAL "gcc")
    set(cc ${dwl_gcc})
  else()
    set(cc ${dwl_clang})
  endif()
  set(flags ${ARGN})
  if(compiler STREQUAL "clang")
    list(PREPEND flags ${dwl_clang_target})
  endif()
  add_custom_command(OUTPUT ${dwl_dir}/${name} ${dwl_dir}/${name}.debug
    COMMAND ${CMAKE_COMMAND} -E env "DWL_LDFLAGS=${ldflags}"
            sh ${CMAKE_CURRENT_SOURCE_DIR}/tools/dwarf_fixture.sh ${kind} ${cc}
            ${dwl_gcc} ${dwl_objcopy} ${dwl_src} ${dwl_dir}/${name} ${flags}
    DEPENDS tools/dwarf_fixture.sh ${dwl_inputs}
    COMMENT "test_dwarf_lines fixture ${name}")
  set(dwl_outputs ${dwl_outputs} ${dwl_dir}/${name} ${dwl_dir}/${name}.debug PARENT_SCOPE)
endfunction()

dwl_fixture(gcc_g5_O0 exe gcc "" -gdwarf-5 -O0)
dwl_fixture(gcc_g4_O2 exe gcc "" -gdwarf-4 -O2)
dwl_fixture(gcc_g2_O1 exe gcc "" -gdwarf-2 -O1)
dwl_fixture(gcc_g5_O1 exe gcc "" -gdwarf-5 -O1)
dwl_fixture(gcc_g5_O1_dwarf64 exe gcc "" -gdwarf-5 -gdwarf64 -O1)
dwl_fixture(gcc_g5_O2_nopie exe gcc "-no-pie" -gdwarf-5 -O2 -fno-pie)
dwl_fixture(clang_g5_O2 exe clang "" -gdwarf-5 -O2)
dwl_fixture(clang_g4_O0 exe clang "" -gdwarf-4 -O0)
dwl_fixture(gcc_lib_g5_O2 lib gcc "" -gdwarf-5 -O2)
dwl_fixture(clang_lib_g4_O1 lib clang "" -gdwarf-4 -O1)
# What compilers here do not emit (define_file, unknown opcodes, other
# forms in a DWARF 5 header, ...): hand.s and hand5.s.
dwl_fixture(hand_g3 hand.s gcc "")
dwl_fixture(hand_g5 hand5.s gcc "")

# Compressed debug sections, both kinds (SHF_COMPRESSED, .zdebug_*).
add_custom_command(OUTPUT ${dwl_dir}/gcc_g5_O0.zlib.debug ${dwl_dir}/gcc_g5_O0.zlib-gnu.debug
  COMMAND ${dwl_objcopy} --compress-debug-sections=zlib ${dwl_dir}/gcc_g5_O0.debug ${dwl_dir}/gcc_g5_O0.zlib.debug
  COMMAND ${dwl_objcopy} --compress-debug-sections=zlib-gnu ${dwl_dir}/gcc_g5_O0.debug ${dwl_dir}/gcc_g5_O0.zlib-gnu.debug
  DEPENDS ${dwl_dir}/gcc_g5_O0.debug
  COMMENT "test_dwarf_lines: compressed debug files")
add_custom_target(snap_dwarf_fixtures DEPENDS ${dwl_outputs}
  ${dwl_dir}/gcc_g5_O0.zlib.debug ${dwl_dir}/gcc_g5_O0.zlib-gnu.debug)

find_program(SNAP_LLVM_ADDR2LINE NAMES llvm-addr2line REQUIRED)
set(dwl_oracle "")
foreach(f gcc_g5_O0 gcc_g4_O2 gcc_g2_O1 gcc_g5_O1 gcc_g5_O2_nopie clang_g5_O2
          clang_g4_O0 gcc_lib_g5_O2 clang_lib_g4_O1 hand_g3 hand_g5)
  string(APPEND dwl_oracle "${dwl_dir}/${f}.debug ")
endforeach()
# Unstripped files too (the debug sections beside the code).
string(APPEND dwl_oracle "${dwl_dir}/gcc_g4_O2 ${dwl_dir}/clang_lib_g4_O1")
# Compressed: both kinds made by objcopy, and libc's debug file as
# libc6-dbg ships it (symbols/elf.cmake finds it by build id; none under
# the arm64 cross build).
set(dwl_compressed "${dwl_dir}/gcc_g5_O0.zlib.debug ${dwl_dir}/gcc_g5_O0.zlib-gnu.debug")
if(elf_libc_debug)
  string(APPEND dwl_compressed " ${elf_libc_debug}")
endif()

snap_test(test_dwarf_lines tools/test_dwarf_lines.c)
target_link_libraries(test_dwarf_lines PRIVATE snap_symbolicate_dwarf)
add_dependencies(test_dwarf_lines snap_dwarf_fixtures)
target_compile_definitions(test_dwarf_lines PRIVATE
  DWL_FIXTURES="${dwl_oracle}"
  DWL_DWARF64_PAIRS="${dwl_dir}/gcc_g5_O1_dwarf64.debug=${dwl_dir}/gcc_g5_O1.debug"
  DWL_COMPRESSED="${dwl_compressed}"
  DWL_INLINED="${dwl_dir}/gcc_g4_O2.debug ${dwl_dir}/gcc_lib_g5_O2.debug"
  DWL_HOSTILE="${dwl_dir}/gcc_g5_O0.debug"
  DWL_ADDR2LINE="${dwl_addr2line}"
  DWL_LLVM_ADDR2LINE="${SNAP_LLVM_ADDR2LINE}")

# ---- fuzz_dwarf_lines: libFuzzer over the reader (the asan configuration) --
# As fuzz_unwind: only with SNAP_FUZZ_SECONDS > 0 (clang), for half that
# time. libdw itself is not instrumented (OSS-Fuzz fuzzes elfutils): this
# fuzzes our part, the walk of compressed sections' declared sizes and
# the lookups, with libdw under it, and finds what ASan sees of libdw. Seeds: two small debug files (gcc DWARF 5, clang DWARF 4) in
# fuzz_corpus_dwarf/; new inputs go to a scratch corpus in the build tree.
if(SNAP_FUZZ_SECONDS GREATER 0)
  math(EXPR dwl_fuzz_seconds "${SNAP_FUZZ_SECONDS} / 2")
  if(dwl_fuzz_seconds LESS 1)
    set(dwl_fuzz_seconds 1)
  endif()
  add_executable(fuzz_dwarf_lines tools/fuzz_dwarf_lines.c
    ${PROJECT_SOURCE_DIR}/tools/symbolicate/dwarf_lines.c)
  target_link_libraries(fuzz_dwarf_lines PRIVATE PkgConfig::SNAP_LIBDW)
  target_compile_options(fuzz_dwarf_lines PRIVATE -fsanitize=fuzzer -fno-omit-frame-pointer -Wno-missing-prototypes)
  target_link_options(fuzz_dwarf_lines PRIVATE -fsanitize=fuzzer)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz_dwarf_work)
  add_test(NAME fuzz_dwarf_lines COMMAND fuzz_dwarf_lines -max_total_time=${dwl_fuzz_seconds}
           -timeout=10 -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1
           ${CMAKE_CURRENT_BINARY_DIR}/fuzz_dwarf_work ${CMAKE_CURRENT_SOURCE_DIR}/tools/fuzz_corpus_dwarf)
  math(EXPR dwl_fuzz_timeout "${dwl_fuzz_seconds} + 120")
  set_tests_properties(fuzz_dwarf_lines PROPERTIES TIMEOUT ${dwl_fuzz_timeout})
endif()
