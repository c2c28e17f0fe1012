# stacksnap-symbolicate's stripped-build round trip (test_split_roundtrip.py):
# split_app and libsplit_lib built with -g, then split, stripped, run
# under the watchdog and named later against addr2line; another build of
# the library (SPLIT_OTHER_BUILD: another build id) must never be used;
# hostile reports exit 1 with a message. Included from the Linux part of
# tests/CMakeLists.txt, after dwarf_tests.cmake (whose GNU objcopy and
# addr2line it uses).
if(NOT TARGET stacksnap-symbolicate)
  # No libdw for the target (tools/symbolicate/dwarf.cmake): said skipped.
  foreach(t test_split_roundtrip test_symbolicate_hostile test_symbolicate_rss
            test_symbolicate_libc test_symbolicate_cli)
    snap_skipped_test(${t} "no libdw for the target: stacksnap-symbolicate not built")
  endforeach()
  return()
endif()
add_library(split_lib SHARED tools/split_lib.c)
add_library(split_lib_other SHARED tools/split_lib.c)
target_compile_definitions(split_lib_other PRIVATE SPLIT_OTHER_BUILD)
set_target_properties(split_lib_other PROPERTIES OUTPUT_NAME split_lib
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/other_build)
add_executable(split_app tools/split_app.c)
foreach(t split_lib split_lib_other split_app)
  target_compile_definitions(${t} PRIVATE _GNU_SOURCE)
  target_compile_options(${t} PRIVATE -g -O1 -fno-omit-frame-pointer
                         -Wno-missing-prototypes)
  # Build ids (Debian's gcc adds one by default; clang does not).
  target_link_options(${t} PRIVATE -Wl,--build-id)
endforeach()
target_link_libraries(split_app PRIVATE split_lib stacksnap_static
                      Threads::Threads ${CMAKE_DL_LIBS})
add_test(NAME test_split_roundtrip
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_split_roundtrip.py
          $<TARGET_FILE:stacksnap-symbolicate> $<TARGET_FILE:split_app>
          $<TARGET_FILE:split_lib> $<TARGET_FILE:split_lib_other>
          --objcopy ${dwl_objcopy} --addr2line ${dwl_addr2line}
          --run-with "${SNAP_RUN_WITH}")
set_tests_properties(test_split_roundtrip PROPERTIES TIMEOUT 300
                     RESOURCE_LOCK lag_processes)

# Reports as hostile input (issue 24; docs/security.md, "Reports as
# untrusted input"): build ids that are paths, files named by path that are
# not the image's, FIFOs, terminal escapes, the memory budget
# (test_symbolicate_hostile); 200 spellings of the biggest library under
# /usr/lib read once, by peak RSS (test_symbolicate_rss: skipped when there
# is none of 32 MiB).
add_test(NAME test_symbolicate_hostile
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_symbolicate_hostile.py
          $<TARGET_FILE:stacksnap-symbolicate> $<TARGET_FILE:split_lib>
          --objcopy ${dwl_objcopy} --run-with "${SNAP_RUN_WITH}")
set_tests_properties(test_symbolicate_hostile PROPERTIES TIMEOUT 300)
add_test(NAME test_symbolicate_rss
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_symbolicate_hostile.py
          $<TARGET_FILE:stacksnap-symbolicate> $<TARGET_FILE:split_lib> --rss
          --run-with "${SNAP_RUN_WITH}")
set_tests_properties(test_symbolicate_rss PROPERTIES TIMEOUT 600
                     SKIP_RETURN_CODE 77)

# libFuzzer over the bounded build-id probe (against the full ELF reader),
# the build-id form check and the terminal escaper (issue 24): the asan
# configuration with SNAP_FUZZ_SECONDS, for a quarter of it; seeds:
# fuzz_elf's libraries (tests/symbols/elf.cmake).
if(SNAP_FUZZ_SECONDS GREATER 0)
  set(symb ${PROJECT_SOURCE_DIR}/tools/symbolicate)
  add_executable(fuzz_image_probe tools/fuzz_image_probe.c ${symb}/image_probe.c
                 ${symb}/text_escape.c
                 ${PROJECT_SOURCE_DIR}/src/platform/linux/elf_reader.c
                 ${PROJECT_SOURCE_DIR}/src/platform/linux/elf_functions.c
                 ${PROJECT_SOURCE_DIR}/src/platform/linux/elf_plt.c
                 ${PROJECT_SOURCE_DIR}/src/platform/linux/elf_notes.c)
  target_include_directories(fuzz_image_probe PRIVATE ${symb}
                             ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_compile_definitions(fuzz_image_probe PRIVATE _GNU_SOURCE)
  target_compile_options(fuzz_image_probe PRIVATE -fsanitize=fuzzer
                         -fno-omit-frame-pointer -Wno-missing-prototypes)
  target_link_options(fuzz_image_probe PRIVATE -fsanitize=fuzzer)
  add_dependencies(fuzz_image_probe snap_elf_small)
  math(EXPR probe_fuzz_seconds "(${SNAP_FUZZ_SECONDS} + 3) / 4")
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe_work)
  add_test(NAME fuzz_image_probe COMMAND fuzz_image_probe
           -max_total_time=${probe_fuzz_seconds} -timeout=10 -rss_limit_mb=2048
           -max_len=65536 -print_final_stats=1
           ${CMAKE_CURRENT_BINARY_DIR}/fuzz_probe_work ${elf_seed_dir})
  math(EXPR probe_fuzz_timeout "${probe_fuzz_seconds} + 120")
  set_tests_properties(fuzz_image_probe PROPERTIES TIMEOUT ${probe_fuzz_timeout})
endif()

# libc's frames from libc6-dbg (compressed debug sections, read by libdw)
# with addr2line's file:line (issue 27): the frames under main() in every
# report. Skipped (77) without libc6-dbg's file for this libc.
add_test(NAME test_symbolicate_libc
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_symbolicate_libc.py
          $<TARGET_FILE:stacksnap-symbolicate> ${elf_libc}
          --addr2line ${dwl_addr2line} --llvm-addr2line ${SNAP_LLVM_ADDR2LINE})
set_tests_properties(test_symbolicate_libc PROPERTIES TIMEOUT 120
                     SKIP_RETURN_CODE 77)

# The command line (issue 27): --help, --version, a precise message per
# usage mistake, many reports and directories with a line per report,
# atomic -o (strace: O_EXCL|O_NOFOLLOW|O_CLOEXEC 0600, fsync, rename).
add_test(NAME test_symbolicate_cli
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_symbolicate_cli.py
          $<TARGET_FILE:stacksnap-symbolicate> --version-want ${PROJECT_VERSION}
          --yyjson-h ${PROJECT_SOURCE_DIR}/third_party/yyjson/yyjson.h
          --run-with "${SNAP_RUN_WITH}")
set_tests_properties(test_symbolicate_cli PROPERTIES TIMEOUT 300)
