# toolchain-macos.cmake — stacksnap for macOS (arm64, x86_64), built on a
# host that is not a Mac with clang and ld64.lld against the SDK in
# $SNAP_DARWIN_MACOS_SDK.
#
#   cmake -S . -B build/macos -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-macos.cmake \
#         -DCMAKE_OSX_ARCHITECTURES=x86_64
#
# Deployment target: macOS 10.14 on x86_64, 11.0 on arm64 (the first macOS
# for Apple silicon); see cmake/darwin.cmake.
set(CMAKE_SYSTEM_NAME Darwin)
set(SNAP_CROSS_TRIPLE_OS macos)
set(SNAP_CROSS_SDK_VAR SNAP_DARWIN_MACOS_SDK)
if(CMAKE_OSX_ARCHITECTURES STREQUAL "x86_64")
  set(SNAP_CROSS_MIN_VERSION 10.14)
else()
  set(SNAP_CROSS_MIN_VERSION 11.0)
endif()
include(${CMAKE_CURRENT_LIST_DIR}/darwin_cross.cmake)
