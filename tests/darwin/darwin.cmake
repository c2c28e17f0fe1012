# Apple-only logic that needs no Apple API, built and run on Linux with real
# data (include(darwin/darwin.cmake) from tests/CMakeLists.txt):
#   test_callstack_lines  Apple's call-stack lines -> frames (always)
#   test_macho_app_root   the app's directory tree from the executable path
#                         of each real layout (always)
#   test_callstack_class  callstack_symbols.c (the _NSCallStackArray naming
#                         code) against a stand-in that keeps Foundation's
#                         contract (Linux, with gcc's Objective-C; label
#                         darwin-contract)
#   test_runloop_nesting  busy/idle from CFRunLoop observer callbacks with
#                         nested runs (always; darwin-contract)
#   test_image_registry   the image table from dyld's add/remove callbacks,
#                         with images unmapped under it (always;
#                         darwin-contract)
#   test_compact_unwind   function bounds from __unwind_info over crafted and
#                         hostile tables (always; darwin-contract), and, as
#                         test_compact_unwind_real, over the real tables of
#                         check_darwin's iOS arm64 files with llvm-objdump
#                         as the oracle, reads bounded by the binary search
#                         (SNAP_DARWIN_SDK; darwin-contract)
#   test_wait_abi         what a thread stopped in a system call waits for
#                         and who holds it, from recorded arm64 and x86_64
#                         register sets and lock memory laid out as xnu,
#                         libplatform and libpthread write them (always;
#                         darwin-contract)
#   test_macho_uuid       an image's LC_UUID and extent from stand-in load
#                         commands laid out as <mach-o/loader.h> says,
#                         hostile variants, and the UUID's text form
#                         (always; darwin-contract)
#   check_darwin          scripts/check-darwin.sh: the Apple build against
#                         the SDKs, CMake's and the package builds'
#                         (SwiftPM, CocoaPods) (darwin-contract)
#   test_darwin_emulated_walk
#                         the portable walker built for arm64/arm64e iOS
#                         with no SDK, run under the Unicorn emulator and
#                         compared with the host build on laid-out stacks
#                         (Linux hosts; label darwin-emulated; skipped
#                         without unicorn, clang or ld64.lld):
#                         darwin/emulated/emulated.cmake
#   test_darwin_emulated_pure
#                         the same for wait_abi.c, compact_unwind.c,
#                         callstack_lines.c and runloop_nesting.c built
#                         against the SDK (skipped without SNAP_DARWIN_SDK)
#   test_macho_ranges     __TEXT ranges, app-or-system, LC_UUID and extent
#                         (llvm-dwarfdump/llvm-objdump the oracles) of the
#                         Mach-O files check_darwin linked for iOS arm64
#                         (SNAP_DARWIN_SDK; darwin-contract)
# check_darwin, test_compact_unwind_real, test_macho_ranges and
# test_image_registry_real need an SDK variable set when this build was
# configured;
# without it they are registered all the same and ctest reports them
# "Skipped" (never passed, never silently absent).
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
snap_darwin_pure_test(test_wait_abi ${SNAP_DARWIN_SRC}/wait_abi.c)
target_include_directories(test_wait_abi PRIVATE ${PROJECT_SOURCE_DIR}/include)
add_test(NAME test_wait_abi COMMAND test_wait_abi)
set_tests_properties(test_wait_abi PROPERTIES LABELS darwin-contract)
snap_darwin_pure_test(test_macho_uuid ${SNAP_DARWIN_SRC}/macho_ranges.c
  ${SNAP_DARWIN_SRC}/build_id_text.c)
target_include_directories(test_macho_uuid PRIVATE ${PROJECT_SOURCE_DIR}/include)
add_test(NAME test_macho_uuid COMMAND test_macho_uuid)
set_tests_properties(test_macho_uuid PROPERTIES LABELS darwin-contract)

# The Apple naming code itself, compiled for GCC's runtime (objc_messaging.h)
# and linked with callstack_standin.m, a _NSCallStackArray built by gcc as
# objc.cmake builds its fixture (SNAP_OBJC_GCC, objc_flags, SNAP_LIBOBJC,
# objc_ok come from there; the reasons for gcc and for leaving sanitizers
# out of its objects are written there). Only the code under test and the
# test are instrumented: the stand-in's free() is the sanitizer's all the
# same, so a double free of the frames buffer is caught wherever it happens.
# -rdynamic: the stand-in's autorelease pool functions must be found by
# dlsym, the test's dladdr must replace glibc's for everyone, and the test
# functions must be in .dynsym for dladdr (and nm -D, the oracle) to name.
if(SNAP_PLATFORM STREQUAL "linux" AND objc_ok)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/darwin)
  set(cs_standin_obj ${CMAKE_CURRENT_BINARY_DIR}/darwin/callstack_standin.o)
  add_custom_command(OUTPUT ${cs_standin_obj}
    COMMAND ${SNAP_OBJC_GCC} ${objc_flags} -std=gnu11 -D_GNU_SOURCE
            -c ${CMAKE_CURRENT_SOURCE_DIR}/darwin/callstack_standin.m -o ${cs_standin_obj}
    DEPENDS darwin/callstack_standin.m darwin/callstack_standin.h
    COMMENT "gcc: the _NSCallStackArray stand-in for test_callstack_class")
  add_executable(test_callstack_class darwin/test_callstack_class.c
    ${SNAP_DARWIN_SRC}/callstack_symbols.c ${SNAP_DARWIN_SRC}/callstack_lines.c
    ${cs_standin_obj})
  target_include_directories(test_callstack_class PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
    ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  set(cs_nm ${CMAKE_CURRENT_BINARY_DIR}/darwin/test_callstack_class.nm)
  target_compile_definitions(test_callstack_class PRIVATE _GNU_SOURCE
    CS_NM_DYNAMIC="${cs_nm}")
  target_compile_options(test_callstack_class PRIVATE -O1 -fno-omit-frame-pointer)
  target_link_libraries(test_callstack_class PRIVATE ${SNAP_LIBOBJC}
    Threads::Threads ${CMAKE_DL_LIBS})
  set_target_properties(test_callstack_class PROPERTIES ENABLE_EXPORTS ON)
  add_custom_command(TARGET test_callstack_class POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DFILE=$<TARGET_FILE:test_callstack_class>
            -DOUT=${cs_nm} -P ${CMAKE_CURRENT_SOURCE_DIR}/darwin/nm_dynamic.cmake
    COMMENT "nm -D: the oracle of test_callstack_class")
  add_test(NAME test_callstack_class COMMAND test_callstack_class)
  # LeakSanitizer checks that a buffer the class did not take is freed;
  # objc_lsan.supp names only libobjc's own class registration.
  set_tests_properties(test_callstack_class PROPERTIES TIMEOUT 120
    LABELS darwin-contract ENVIRONMENT
    "ASAN_OPTIONS=fast_unwind_on_malloc=0;LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/symbols/objc_lsan.supp")
endif()

if(SNAP_PLATFORM STREQUAL "linux" AND NOT CMAKE_CROSSCOMPILING)
  include(darwin/emulated/emulated.cmake)
endif()

set(snap_ios_sdk "$ENV{SNAP_DARWIN_SDK}")
set(snap_mac_sdk "$ENV{SNAP_DARWIN_MACOS_SDK}")
set(snap_darwin_out ${PROJECT_BINARY_DIR}/darwin)
# The tests over the SDK's builds are registered in every configuration:
# without the SDK they are reported "Skipped" by ctest (never counted as
# passed, never silently absent), and with it a failure of any of them, or
# of check_darwin they need, fails the run (scripts/test.sh).
function(snap_darwin_sdk_test name sdk_var sdk)
  if(sdk)
    add_test(NAME ${name} COMMAND ${ARGN})
  else()
    snap_skipped_test(${name} "${sdk_var} was not set when this build was configured")
  endif()
endfunction()
if(snap_ios_sdk)
  set(snap_any_sdk SNAP_DARWIN_SDK)
elseif(snap_mac_sdk)
  set(snap_any_sdk SNAP_DARWIN_MACOS_SDK)
endif()
snap_darwin_sdk_test(check_darwin "SNAP_DARWIN_SDK nor SNAP_DARWIN_MACOS_SDK"
  "${snap_any_sdk}"
  ${CMAKE_COMMAND} -E env
    "SNAP_DARWIN_SDK=${snap_ios_sdk}" "SNAP_DARWIN_MACOS_SDK=${snap_mac_sdk}"
    bash ${PROJECT_SOURCE_DIR}/scripts/check-darwin.sh
    ${CMAKE_COMMAND} ${PROJECT_SOURCE_DIR} ${snap_darwin_out})
# Five configurations, each a CMake build and the package builds
# (SwiftPM's, CocoaPods'): on a loaded 2-core box, ten minutes and more.
set_tests_properties(check_darwin PROPERTIES TIMEOUT 3600 LABELS darwin-contract
  FIXTURES_SETUP snap_darwin_build RUN_SERIAL ON)

snap_darwin_pure_test(test_macho_ranges ${SNAP_DARWIN_SRC}/macho_ranges.c
  ${SNAP_DARWIN_SRC}/build_id_text.c)
target_include_directories(test_macho_ranges PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(test_macho_ranges PRIVATE _GNU_SOURCE) # popen
set(d ${snap_darwin_out}/ios-arm64)
# llvm-objdump --unwind-info / --private-headers and llvm-dwarfdump --uuid
# are the oracles of the tests over real files (lld/llvm: install-deps).
find_program(SNAP_LLVM_OBJDUMP NAMES llvm-objdump PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT SNAP_LLVM_OBJDUMP)
  find_program(SNAP_LLVM_OBJDUMP NAMES llvm-objdump)
endif()
find_program(SNAP_LLVM_DWARFDUMP NAMES llvm-dwarfdump PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT SNAP_LLVM_DWARFDUMP)
  find_program(SNAP_LLVM_DWARFDUMP NAMES llvm-dwarfdump)
endif()
snap_darwin_sdk_test(test_macho_ranges SNAP_DARWIN_SDK "${snap_ios_sdk}"
  test_macho_ranges
  ${d}/stacksnap_darwin_smoke.app/stacksnap_darwin_smoke
  ${d}/libsnapsmoke_embedded.dylib ${d}/libsnapsmoke_system.dylib)
set_tests_properties(test_macho_ranges PROPERTIES FIXTURES_REQUIRED snap_darwin_build
  LABELS darwin-contract
  ENVIRONMENT "SNAP_LLVM_OBJDUMP=${SNAP_LLVM_OBJDUMP};SNAP_LLVM_DWARFDUMP=${SNAP_LLVM_DWARFDUMP}")
# The same lookup over the real __unwind_info of those files, with
# llvm-objdump --unwind-info as the oracle (install-deps installs it: a
# missing one fails the test rather than skipping it).
snap_darwin_sdk_test(test_compact_unwind_real SNAP_DARWIN_SDK "${snap_ios_sdk}"
  test_compact_unwind
  ${SNAP_LLVM_OBJDUMP}
  ${d}/stacksnap_darwin_smoke.app/stacksnap_darwin_smoke
  ${d}/stacksnap/libstacksnap.dylib
  ${d}/libsnapsmoke_embedded.dylib ${d}/libsnapsmoke_system.dylib)
set_tests_properties(test_compact_unwind_real PROPERTIES
  FIXTURES_REQUIRED snap_darwin_build LABELS darwin-contract)
# The image registry with real load commands among the synthetic images.
snap_darwin_sdk_test(test_image_registry_real SNAP_DARWIN_SDK "${snap_ios_sdk}"
  test_image_registry
  ${d}/stacksnap_darwin_smoke.app/stacksnap_darwin_smoke
  ${d}/stacksnap/libstacksnap.dylib)
set_tests_properties(test_image_registry_real PROPERTIES
  FIXTURES_REQUIRED snap_darwin_build LABELS darwin-contract TIMEOUT 300)
