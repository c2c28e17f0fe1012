# Apple-only logic that needs no Apple API, built and run on Linux with real
# data (include(darwin/darwin.cmake) from tests/CMakeLists.txt):
#   test_callstack_lines  Apple's call-stack lines -> frames (always)
#   test_macho_app_root   the app's directory tree from the executable path
#                         of each real layout (always)
#   test_runloop_nesting  busy/idle from CFRunLoop observer callbacks with
#                         nested runs (always; darwin-contract)
#   test_image_registry   the image table from dyld's add/remove callbacks,
#                         with images unmapped under it (always;
#                         darwin-contract)
#   test_compact_unwind   function bounds from __unwind_info over crafted and
#                         hostile tables (always; darwin-contract), and, as
#                         test_compact_unwind_real, over the real tables of
#                         check_darwin's iOS arm64 files with llvm-objdump
#                         as the oracle (only with SNAP_DARWIN_SDK)
#   check_darwin          scripts/check-darwin.sh: the Apple build against
#                         the SDKs (only when an SDK variable was set when
#                         this build was configured)
#   test_macho_ranges     __TEXT ranges and app-or-system from the Mach-O
#                         files check_darwin linked for iOS arm64 (only with
#                         SNAP_DARWIN_SDK; it needs those files, so without
#                         the SDK it is not registered at all rather than
#                         skipped and counted as a pass)
set(SNAP_DARWIN_SRC ${PROJECT_SOURCE_DIR}/src/platform/darwin)

function(snap_darwin_pure_test name)
  add_executable(${name} darwin/${name}.c ${ARGN})
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE -Wno-missing-prototypes)
endfunction()

snap_darwin_pure_test(test_callstack_lines ${SNAP_DARWIN_SRC}/callstack_lines.c)
add_test(NAME test_callstack_lines COMMAND test_callstack_lines)
snap_darwin_pure_test(test_macho_app_root ${SNAP_DARWIN_SRC}/macho_ranges.c)
add_test(NAME test_macho_app_root COMMAND test_macho_app_root)
snap_darwin_pure_test(test_runloop_nesting ${SNAP_DARWIN_SRC}/runloop_nesting.c)
add_test(NAME test_runloop_nesting COMMAND test_runloop_nesting)
set_tests_properties(test_runloop_nesting PROPERTIES LABELS darwin-contract)
snap_darwin_pure_test(test_compact_unwind ${SNAP_DARWIN_SRC}/compact_unwind.c
  ${SNAP_DARWIN_SRC}/macho_ranges.c)
target_include_directories(test_compact_unwind PRIVATE ${PROJECT_SOURCE_DIR}/include)
add_test(NAME test_compact_unwind COMMAND test_compact_unwind)
set_tests_properties(test_compact_unwind PROPERTIES LABELS darwin-contract)
snap_darwin_pure_test(test_image_registry ${SNAP_DARWIN_SRC}/image_registry.c
  ${SNAP_DARWIN_SRC}/macho_ranges.c)
target_include_directories(test_image_registry PRIVATE ${PROJECT_SOURCE_DIR}/include)
find_package(Threads REQUIRED)
target_link_libraries(test_image_registry PRIVATE Threads::Threads)
add_test(NAME test_image_registry COMMAND test_image_registry)
set_tests_properties(test_image_registry PROPERTIES LABELS darwin-contract
  TIMEOUT 300)

set(snap_ios_sdk "$ENV{SNAP_DARWIN_SDK}")
set(snap_mac_sdk "$ENV{SNAP_DARWIN_MACOS_SDK}")
if(snap_ios_sdk OR snap_mac_sdk)
  set(snap_darwin_out ${PROJECT_BINARY_DIR}/darwin)
  add_test(NAME check_darwin
    COMMAND ${CMAKE_COMMAND} -E env
      "SNAP_DARWIN_SDK=${snap_ios_sdk}" "SNAP_DARWIN_MACOS_SDK=${snap_mac_sdk}"
      bash ${PROJECT_SOURCE_DIR}/scripts/check-darwin.sh
      ${CMAKE_COMMAND} ${PROJECT_SOURCE_DIR} ${snap_darwin_out})
  set_tests_properties(check_darwin PROPERTIES TIMEOUT 1200
    FIXTURES_SETUP snap_darwin_build RUN_SERIAL ON)
endif()
if(snap_ios_sdk)
  snap_darwin_pure_test(test_macho_ranges ${SNAP_DARWIN_SRC}/macho_ranges.c)
  set(d ${snap_darwin_out}/ios-arm64)
  add_test(NAME test_macho_ranges COMMAND test_macho_ranges
    ${d}/stacksnap_darwin_smoke.app/stacksnap_darwin_smoke
    ${d}/libsnapsmoke_embedded.dylib ${d}/libsnapsmoke_system.dylib)
  set_tests_properties(test_macho_ranges PROPERTIES FIXTURES_REQUIRED snap_darwin_build)
  # The same lookup over the real __unwind_info of those files, with
  # llvm-objdump --unwind-info as the oracle (lld/llvm: install-deps).
  find_program(SNAP_LLVM_OBJDUMP NAMES llvm-objdump PATHS /usr/bin NO_DEFAULT_PATH)
  if(NOT SNAP_LLVM_OBJDUMP)
    find_program(SNAP_LLVM_OBJDUMP NAMES llvm-objdump)
  endif()
  if(SNAP_LLVM_OBJDUMP)
    add_test(NAME test_compact_unwind_real COMMAND test_compact_unwind
      ${SNAP_LLVM_OBJDUMP}
      ${d}/stacksnap_darwin_smoke.app/stacksnap_darwin_smoke
      ${d}/stacksnap/libstacksnap.dylib
      ${d}/libsnapsmoke_embedded.dylib ${d}/libsnapsmoke_system.dylib)
    set_tests_properties(test_compact_unwind_real PROPERTIES
      FIXTURES_REQUIRED snap_darwin_build LABELS darwin-contract)
  endif()
  # The image registry with real load commands among the synthetic images.
  add_test(NAME test_image_registry_real COMMAND test_image_registry
    ${d}/stacksnap_darwin_smoke.app/stacksnap_darwin_smoke
    ${d}/stacksnap/libstacksnap.dylib)
  set_tests_properties(test_image_registry_real PROPERTIES
    FIXTURES_REQUIRED snap_darwin_build LABELS darwin-contract TIMEOUT 300)
endif()
