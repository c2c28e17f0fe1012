# The Linux ELF symbol provider (src/platform/linux/elf_*.c), against oracles
# made outside it at build time: GNU nm and objdump (the cross ones under the
# arm64 toolchain). Included from tests/CMakeLists.txt (snap_test exists).

# llvm-objdump (the clang configurations' CMAKE_OBJDUMP) does not label
# .plt.got entries; the PLT oracle wants GNU objdump's "<name@plt>" labels.
# nm stays GNU too, so every configuration reads one format.
set(elf_nm ${CMAKE_NM})
set(elf_objdump ${CMAKE_OBJDUMP})
if(elf_nm MATCHES "llvm")
  find_program(SNAP_GNU_NM nm REQUIRED)
  set(elf_nm ${SNAP_GNU_NM})
endif()
if(elf_objdump MATCHES "llvm")
  find_program(SNAP_GNU_OBJDUMP objdump REQUIRED)
  set(elf_objdump ${SNAP_GNU_OBJDUMP})
endif()
if(CMAKE_ADDR2LINE)
  set(elf_addr2line ${CMAKE_ADDR2LINE})
else()
  find_program(elf_addr2line NAMES addr2line)
endif()

# ---- A library of 50 000 functions (every third local), from assembly ----
# Assembled by the C compiler driver (the project enables no ASM language);
# CMAKE_C_FLAGS carries target flags such as -mbranch-protection.
separate_arguments(elf_c_flags UNIX_COMMAND "${CMAKE_C_FLAGS}")
function(elf_funcs_object out count prefix)
  set(asm ${CMAKE_CURRENT_BINARY_DIR}/${prefix}.s)
  add_custom_command(OUTPUT ${asm}
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/symbols/gen_funcs.sh ${count} ${prefix} > ${asm}
    DEPENDS symbols/gen_funcs.sh
    COMMENT "gen_funcs.sh ${count} ${prefix}")
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_C_COMPILER} ${elf_c_flags} -c ${asm} -o ${out}
    DEPENDS ${asm})
endfunction()

set(elf_big_obj ${CMAKE_CURRENT_BINARY_DIR}/snap_elf_big.o)
elf_funcs_object(${elf_big_obj} 50000 snapbig)
add_library(snap_elf_big MODULE ${elf_big_obj})
set_target_properties(snap_elf_big PROPERTIES LINKER_LANGUAGE C)
set(elf_big_nm ${CMAKE_CURRENT_BINARY_DIR}/snap_elf_big.nm)
add_custom_command(TARGET snap_elf_big POST_BUILD
  COMMAND ${elf_nm} -S --defined-only $<TARGET_FILE:snap_elf_big> > ${elf_big_nm}
  COMMENT "nm oracle for the 50k-function library")

# A small one (300 functions, plus C that calls libc, so it has PLT entries
# and relocations): the hostile test mutates it thousands of times, and it
# seeds the fuzzer.
set(elf_small_obj ${CMAKE_CURRENT_BINARY_DIR}/snap_elf_small.o)
elf_funcs_object(${elf_small_obj} 300 snapsmall)
add_library(snap_elf_small MODULE ${elf_small_obj} symbols/elf_seed.c)

# ---- libc's oracle: nm of its separate debug file (libc6-dbg) -------------
# Found as gdb would, by build-id, with readelf; none on the arm64 cross
# build (no libc6-dbg:arm64 here): the test then checks libc's exported
# names from its .dynsym instead, and says so. An x86_64 build without the
# debug file fails the test rather than skipping.
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libc.so.6
  OUTPUT_VARIABLE elf_libc OUTPUT_STRIP_TRAILING_WHITESPACE)
get_filename_component(elf_libc "${elf_libc}" REALPATH)
set(elf_libc_debug "")
if(CMAKE_READELF AND EXISTS "${elf_libc}")
  execute_process(COMMAND ${CMAKE_READELF} -n ${elf_libc}
    OUTPUT_VARIABLE elf_notes ERROR_QUIET)
  if(elf_notes MATCHES "Build ID: ([0-9a-f][0-9a-f])([0-9a-f]+)")
    set(candidate /usr/lib/debug/.build-id/${CMAKE_MATCH_1}/${CMAKE_MATCH_2}.debug)
    if(EXISTS ${candidate})
      set(elf_libc_debug ${candidate})
    endif()
  endif()
endif()
set(elf_libc_nm ${CMAKE_CURRENT_BINARY_DIR}/libc_oracle.nm)
if(elf_libc_debug)
  set(elf_libc_nm_cmd ${elf_nm} -S --defined-only ${elf_libc_debug})
else()
  set(elf_libc_nm_cmd ${elf_nm} -D -S --defined-only ${elf_libc})
endif()
add_custom_command(OUTPUT ${elf_libc_nm}
  COMMAND ${elf_libc_nm_cmd} > ${elf_libc_nm}
  COMMENT "nm oracle for libc")
add_custom_target(snap_elf_libc_oracle DEPENDS ${elf_libc_nm})

# ---- test_elf_names: PIE and non-PIE executables --------------------------
# Each gets, after linking, nm of itself, objdump -h (the PLT ranges) and
# objdump -d of its PLT sections (the "<name@plt>" labels, elf_plt_oracle.cmake).
function(elf_names_test name)
  snap_test(${name} symbols/test_elf_names.c)
  target_sources(${name} PRIVATE symbols/elf_statics.c)
  add_dependencies(${name} snap_elf_big snap_elf_libc_oracle)
  set(o ${CMAKE_CURRENT_BINARY_DIR}/${name})
  add_custom_command(TARGET ${name} POST_BUILD
    COMMAND ${elf_nm} -S --defined-only $<TARGET_FILE:${name}> > ${o}.nm
    COMMAND ${elf_objdump} -h $<TARGET_FILE:${name}> > ${o}.sections
    COMMAND ${CMAKE_COMMAND} -DOBJDUMP=${elf_objdump} -DIN=$<TARGET_FILE:${name}>
            -DOUT=${o}.plt -P ${CMAKE_CURRENT_SOURCE_DIR}/symbols/elf_plt_oracle.cmake
    COMMENT "nm/objdump oracles for ${name}")
  target_compile_definitions(${name} PRIVATE
    ELF_BIG_LIB="$<TARGET_FILE:snap_elf_big>"
    ELF_BIG_NM="${elf_big_nm}"
    ELF_SELF_NM="${o}.nm"
    ELF_SELF_SECTIONS="${o}.sections"
    ELF_SELF_PLT="${o}.plt"
    ELF_LIBC_NM="${elf_libc_nm}"
    ELF_LIBC_FROM_DEBUG=$<BOOL:${elf_libc_debug}>
    ELF_NM_TOOL="${elf_nm}"
    ELF_ADDR2LINE="${elf_addr2line}")
endfunction()

elf_names_test(test_elf_names)
# Non-PIE: the image base is 0 and symbol addresses are absolute. (TSan
# insists on PIE executables, so that configuration runs the PIE one only.)
if(NOT SNAP_SANITIZE MATCHES "thread")
  elf_names_test(test_elf_names_nopie)
  target_compile_options(test_elf_names_nopie PRIVATE -fno-pie)
  target_link_options(test_elf_names_nopie PRIVATE -no-pie)
endif()

# x86_64 branch-protected PLT: "endbr64; bnd jmp *slot" entries in
# .plt.sec behind a lazy .plt of "endbr64; push index" (ld -z ibtplt; IBT
# is not enforced, so the test runs on any CPU). No aarch64 twin: ld -z
# force-bti over Debian's unmarked crt files makes a program qemu -cpu max
# kills with SIGILL, and its PLT entries carry no bti c anyway.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  elf_names_test(test_elf_names_ibt)
  target_link_options(test_elf_names_ibt PRIVATE -Wl,-z,ibtplt)
endif()

# ---- test_elf_hostile: broken and malicious files --------------------------
snap_test(test_elf_hostile symbols/test_elf_hostile.c)
add_dependencies(test_elf_hostile snap_elf_big snap_elf_small)
target_compile_definitions(test_elf_hostile PRIVATE
  ELF_BIG_LIB="$<TARGET_FILE:snap_elf_big>"
  ELF_SMALL_LIB="$<TARGET_FILE:snap_elf_small>")

# ---- fuzz_elf: libFuzzer over the reader (the asan configuration) ---------
# As fuzz_unwind: only with SNAP_FUZZ_SECONDS > 0 (clang). Runs at most 30 s:
# the reader is small, and CI time is shared with the other fuzzer. Seeds:
# the small library (PLT entries included) and its stripped copy.
if(SNAP_FUZZ_SECONDS GREATER 0)
  set(elf_fuzz_seconds ${SNAP_FUZZ_SECONDS})
  if(elf_fuzz_seconds GREATER 30)
    set(elf_fuzz_seconds 30)
  endif()
  add_executable(fuzz_elf symbols/fuzz_elf.c
    ${PROJECT_SOURCE_DIR}/src/platform/linux/elf_reader.c
    ${PROJECT_SOURCE_DIR}/src/platform/linux/elf_functions.c
    ${PROJECT_SOURCE_DIR}/src/platform/linux/elf_plt.c
    ${PROJECT_SOURCE_DIR}/src/platform/linux/elf_notes.c)
  target_include_directories(fuzz_elf PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(fuzz_elf PRIVATE _GNU_SOURCE)
  target_compile_options(fuzz_elf PRIVATE -fsanitize=fuzzer -fno-omit-frame-pointer -Wno-missing-prototypes)
  target_link_options(fuzz_elf PRIVATE -fsanitize=fuzzer)

  set(elf_seed_dir ${CMAKE_CURRENT_BINARY_DIR}/fuzz_elf_seed)
  add_custom_command(TARGET snap_elf_small POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E make_directory ${elf_seed_dir}
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:snap_elf_small> ${elf_seed_dir}/seed.so
    COMMAND ${CMAKE_STRIP} -o ${elf_seed_dir}/seed-stripped.so $<TARGET_FILE:snap_elf_small>
    COMMENT "fuzz_elf seeds")
  add_dependencies(fuzz_elf snap_elf_small)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz_elf_work)
  add_test(NAME fuzz_elf COMMAND fuzz_elf -max_total_time=${elf_fuzz_seconds}
           -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
           ${CMAKE_CURRENT_BINARY_DIR}/fuzz_elf_work ${elf_seed_dir})
  math(EXPR elf_fuzz_timeout "${elf_fuzz_seconds} + 120")
  set_tests_properties(fuzz_elf PROPERTIES TIMEOUT ${elf_fuzz_timeout})
endif()

# ---- test_fork_naming: fork while three threads name (issue 12, defect 3) --
# Every lock naming takes is held across fork() and made new in the child:
# 150 children, each naming its own stack while the parent's threads name.
snap_test(test_fork_naming symbols/test_fork_naming.c)
add_dependencies(test_fork_naming snap_elf_big snap_elf_small)
target_compile_definitions(test_fork_naming PRIVATE
  ELF_BIG_LIB="$<TARGET_FILE:snap_elf_big>"
  ELF_SMALL_LIB="$<TARGET_FILE:snap_elf_small>")
set_tests_properties(test_fork_naming PROPERTIES TIMEOUT 300)

# ---- test_elf_rewrite: a loaded library's file rewritten in place ---------
# (issue 12, defect 9): names or none, never SIGBUS.
snap_test(test_elf_rewrite symbols/test_elf_rewrite.c)
add_dependencies(test_elf_rewrite snap_elf_small)
target_compile_definitions(test_elf_rewrite PRIVATE
  ELF_SMALL_LIB="$<TARGET_FILE:snap_elf_small>")

# ---- test_elf_scan: the lazy parse's scan answers as the index ------------
snap_test(test_elf_scan symbols/test_elf_scan.c)
add_dependencies(test_elf_scan snap_elf_big snap_elf_small)
target_compile_definitions(test_elf_scan PRIVATE
  ELF_BIG_LIB="$<TARGET_FILE:snap_elf_big>"
  ELF_SMALL_LIB="$<TARGET_FILE:snap_elf_small>")

# ---- test_symbol_lookup: one address into the caller's buffer -------------
# Against nm of the 50 k library and the other public answers; buffers,
# refusals, an unloaded library.
snap_test(test_symbol_lookup symbols/test_symbol_lookup.c)
add_dependencies(test_symbol_lookup snap_elf_big snap_elf_small)
target_compile_definitions(test_symbol_lookup PRIVATE
  ELF_BIG_LIB="$<TARGET_FILE:snap_elf_big>"
  ELF_BIG_NM="${elf_big_nm}"
  ELF_SMALL_LIB="$<TARGET_FILE:snap_elf_small>")
