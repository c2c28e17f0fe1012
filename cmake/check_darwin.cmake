# check_darwin.cmake — the target check-darwin: the Apple build, cross-
# compiled here against SDKs named by environment variables:
#   SNAP_DARWIN_SDK        an iPhoneOS SDK: iOS arm64 and arm64e, library and
#                          a smoke-test executable, linked with ld64.lld;
#   SNAP_DARWIN_MACOS_SDK  a macOS SDK: arm64, arm64e and x86_64, compiled;
#                          linked too when the SDK carries libSystem;
# and, for each of those, what SwiftPM and CocoaPods compile, with their
# flags (clang modules, the package's C standard and deployment target).
# With neither set it prints one "skipped: no SDK" line and succeeds. The
# work is scripts/check-darwin.sh; each configuration is a nested CMake build
# of tests/darwin/smoke (which adds this project as a subdirectory) under
# <build>/darwin/<os>-<arch>.
#
# Only for the top-level project (not inside those nested builds).
if(NOT CMAKE_PROJECT_NAME STREQUAL PROJECT_NAME OR TARGET check-darwin)
  return()
endif()

set(SNAP_CHECK_DARWIN_DIR ${CMAKE_BINARY_DIR}/darwin)
add_custom_target(check-darwin
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/../scripts/check-darwin.sh
          ${CMAKE_COMMAND} ${CMAKE_CURRENT_LIST_DIR}/.. ${SNAP_CHECK_DARWIN_DIR}
  USES_TERMINAL) # no COMMENT: without an SDK the one line is the script's
