# Apple machine code, executed here (label darwin-emulated): the portable
# walker (with Apple's compact-unwind lookup, which the link-register rule
# asks) compiled for arm64-apple-ios and arm64e-apple-ios by Debian's
# clang with no SDK, linked by ld64.lld, run under the Unicorn emulator by
# run_emulated.py and compared with snap_emu_host_walk, the same sources
# built by this configuration's compiler (and sanitizers). Included from
# darwin/darwin.cmake on Linux hosts that run their own tests.
#
# Tools are looked for where Debian puts them (never the Swift toolchain's
# clang or ld64.lld); a missing one, or a python3 without unicorn, makes
# the test report skipped (exit 77), not passed.
set(snap_emu_dir ${CMAKE_CURRENT_SOURCE_DIR}/darwin/emulated)
add_executable(snap_emu_host_walk ${snap_emu_dir}/host_walk.c
  ${snap_emu_dir}/emu_seam.c
  ${PROJECT_SOURCE_DIR}/src/capture/walk.c
  ${PROJECT_SOURCE_DIR}/src/capture/cursor.c
  ${PROJECT_SOURCE_DIR}/src/capture/frame_records.c
  ${PROJECT_SOURCE_DIR}/src/capture/async_frames.c
  ${PROJECT_SOURCE_DIR}/src/capture/link_register.c
  ${PROJECT_SOURCE_DIR}/src/capture/cfi_step.c
  ${PROJECT_SOURCE_DIR}/src/capture/signal_frames.c
  ${PROJECT_SOURCE_DIR}/src/capture/rule_cache.c
  ${PROJECT_SOURCE_DIR}/src/capture/live_images.c
  ${PROJECT_SOURCE_DIR}/src/capture/cfi.c
  ${PROJECT_SOURCE_DIR}/src/capture/cfi_program.c
  ${PROJECT_SOURCE_DIR}/src/platform/darwin/compact_unwind.c)
target_include_directories(snap_emu_host_walk PRIVATE ${snap_emu_dir}
  ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(snap_emu_host_walk PRIVATE _GNU_SOURCE) # MAP_FIXED_NOREPLACE

find_program(SNAP_EMU_CLANG NAMES clang PATHS /usr/bin NO_DEFAULT_PATH)
find_program(SNAP_EMU_LD64 NAMES ld64.lld ld64.lld-14
  PATHS /usr/lib/llvm-14/bin /usr/lib/llvm-15/bin /usr/lib/llvm-16/bin /usr/bin
  NO_DEFAULT_PATH)
find_program(SNAP_EMU_OBJDUMP NAMES llvm-objdump PATHS /usr/bin NO_DEFAULT_PATH)
find_program(SNAP_PYTHON3 NAMES python3 REQUIRED)
foreach(v SNAP_EMU_CLANG SNAP_EMU_LD64 SNAP_EMU_OBJDUMP)
  if(NOT ${v})
    set(${v} "") # the script then skips (or, for objdump, counts nothing)
  endif()
endforeach()

add_test(NAME test_darwin_emulated_walk
  COMMAND ${SNAP_PYTHON3} ${snap_emu_dir}/run_emulated.py
    --src ${PROJECT_SOURCE_DIR}
    --image-dir ${CMAKE_CURRENT_BINARY_DIR}/darwin/emulated
    --host $<TARGET_FILE:snap_emu_host_walk>
    --clang "${SNAP_EMU_CLANG}" --ld64 "${SNAP_EMU_LD64}"
    --objdump "${SNAP_EMU_OBJDUMP}")
set_tests_properties(test_darwin_emulated_walk PROPERTIES
  LABELS darwin-emulated SKIP_RETURN_CODE 77 TIMEOUT 600)

# The darwin backend's pure functions (wait decoders, compact-unwind lookup,
# call-stack lines, run-loop nesting) compiled against the iPhoneOS SDK
# named by SNAP_DARWIN_SDK, emulated and compared with snap_emu_host_pure.
# Skipped when the variable is unset (here at configure time, or in the
# test's environment). With the SDK, check_darwin's smoke binary lends its
# real __unwind_info as well.
add_executable(snap_emu_host_pure ${snap_emu_dir}/host_pure.c
  ${snap_emu_dir}/pure_seam.c
  ${PROJECT_SOURCE_DIR}/src/platform/darwin/runloop_nesting.c
  ${PROJECT_SOURCE_DIR}/src/platform/darwin/callstack_lines.c
  ${PROJECT_SOURCE_DIR}/src/platform/darwin/compact_unwind.c
  ${PROJECT_SOURCE_DIR}/src/platform/darwin/wait_abi.c)
target_include_directories(snap_emu_host_pure PRIVATE ${snap_emu_dir}
  ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(snap_emu_host_pure PRIVATE _GNU_SOURCE)
set(snap_emu_pure_extra)
if(DEFINED ENV{SNAP_DARWIN_SDK} AND NOT "$ENV{SNAP_DARWIN_SDK}" STREQUAL "")
  set(d ${PROJECT_BINARY_DIR}/darwin/ios-arm64)
  list(APPEND snap_emu_pure_extra --sdk "$ENV{SNAP_DARWIN_SDK}"
    --unwind-from ${d}/stacksnap_darwin_smoke.app/stacksnap_darwin_smoke
    --unwind-from ${d}/stacksnap/libstacksnap.dylib)
endif()
add_test(NAME test_darwin_emulated_pure
  COMMAND ${SNAP_PYTHON3} ${snap_emu_dir}/run_emulated.py --part pure
    --src ${PROJECT_SOURCE_DIR}
    --image-dir ${CMAKE_CURRENT_BINARY_DIR}/darwin/emulated
    --host $<TARGET_FILE:snap_emu_host_pure>
    --clang "${SNAP_EMU_CLANG}" --ld64 "${SNAP_EMU_LD64}" ${snap_emu_pure_extra})
set_tests_properties(test_darwin_emulated_pure PROPERTIES
  LABELS darwin-emulated SKIP_RETURN_CODE 77 TIMEOUT 600)
if(snap_emu_pure_extra)
  set_tests_properties(test_darwin_emulated_pure PROPERTIES
    FIXTURES_REQUIRED snap_darwin_build)
endif()
