# toolchain-ios.cmake — stacksnap for iOS devices (arm64, arm64e), built on a
# host that is not a Mac with clang and ld64.lld against the SDK in
# $SNAP_DARWIN_SDK (e.g. iPhoneOS16.5.sdk).
#
#   cmake -S . -B build/ios -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-ios.cmake \
#         -DCMAKE_OSX_ARCHITECTURES=arm64e
#
# Deployment target: iOS 12.0 (see cmake/darwin.cmake for why).
set(CMAKE_SYSTEM_NAME iOS)
set(SNAP_CROSS_TRIPLE_OS ios)
set(SNAP_CROSS_SDK_VAR SNAP_DARWIN_SDK)
set(SNAP_CROSS_MIN_VERSION 12.0)
include(${CMAKE_CURRENT_LIST_DIR}/darwin_cross.cmake)
