# swift.cmake — Swift and Apple-packaging checks that run on Linux:
# check_podspec (CocoaPods' rules) and test_swift_async (the async walk
# against real Swift). Included from tests/CMakeLists.txt on Linux.

# The CocoaPods spec, by CocoaPods' own rules (no CocoaPods tool exists
# here): scripts/check-podspec.py on stacksnap.podspec, and its self-test
# (each rule against a broken podspec). Needs only python3.
find_program(SNAP_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME check_podspec COMMAND ${SNAP_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/check-podspec.py
         ${PROJECT_SOURCE_DIR}/stacksnap.podspec --root ${PROJECT_SOURCE_DIR})
add_test(NAME check_podspec_self_test COMMAND ${SNAP_PYTHON3}
         ${PROJECT_SOURCE_DIR}/scripts/check-podspec.py --self-test)
set_tests_properties(check_podspec check_podspec_self_test PROPERTIES LABELS darwin-contract)

# The Swift compiler and runtime as the oracle of the async walk:
# test_swift_async (main.swift + AsyncChain.swift + SymbolOracle.swift),
# built by swiftc at -O and linked with stacksnap_static, as an app would.
# Registered where a Swift toolchain is found (/opt/swift/usr/bin here, or
# PATH) on a native Linux build without sanitizers (a sanitized library
# would need the sanitizer runtime in a Swift link). scripts/test.sh's swift
# configuration runs it, and so does every plain gcc or clang configuration
# on a machine that has swiftc. The C stays on the configuration's
# compiler: swiftc only compiles the Swift and links.
#
# -swift-async-frame-pointer=always makes every async function keep an
# extended frame record (tagged saved fp, context below it); on Linux the
# frame pointer itself needs -Xcc -fno-omit-frame-pointer too, or -O code
# has no record at all (measured with Swift 6.3: docs/apple.md).
find_program(SNAP_SWIFTC NAMES swiftc HINTS /opt/swift/usr/bin)
if(NOT SNAP_SWIFTC OR SNAP_SANITIZE OR CMAKE_CROSSCOMPILING)
  set(why "swiftc: ${SNAP_SWIFTC}, sanitizers: ${SNAP_SANITIZE}, cross: ${CMAKE_CROSSCOMPILING}")
  message(STATUS "stacksnap: test_swift_async: skipped (${why})")
  snap_skipped_test(test_swift_async "no native Swift build here (${why})")
  return()
endif()
message(STATUS "stacksnap: test_swift_async: ${SNAP_SWIFTC}")

set(swift_dir ${CMAKE_CURRENT_LIST_DIR})
set(swift_sources ${swift_dir}/main.swift ${swift_dir}/AsyncChain.swift
    ${swift_dir}/SymbolOracle.swift)
# The C module, named as SwiftPM names the package's C target.
set(swift_module_dir ${CMAKE_CURRENT_BINARY_DIR}/swift_module)
file(WRITE ${swift_module_dir}/module.modulemap
  "module stacksnap {\n  header \"${PROJECT_SOURCE_DIR}/include/stacksnap.h\"\n  export *\n}\n")
set(swift_exe ${CMAKE_CURRENT_BINARY_DIR}/test_swift_async)
add_custom_command(OUTPUT ${swift_exe}
  COMMAND ${SNAP_SWIFTC} -O -module-name SwiftAsync
          -Xfrontend -swift-async-frame-pointer=always -Xcc -fno-omit-frame-pointer
          -I ${swift_module_dir} ${swift_sources}
          $<TARGET_FILE:stacksnap_static> -lpthread -ldl -o ${swift_exe}
  DEPENDS ${swift_sources} stacksnap_static
  COMMENT "swiftc: test_swift_async"
  VERBATIM)
add_custom_target(test_swift_async ALL DEPENDS ${swift_exe})
add_test(NAME test_swift_async COMMAND ${swift_exe})
set_tests_properties(test_swift_async PROPERTIES TIMEOUT 300)
