# darwin_cross.cmake — shared by toolchain-ios.cmake and toolchain-macos.cmake:
# building for Apple platforms from a host that is not a Mac (Debian here),
# with LLVM's clang, ld64.lld and llvm-ar against a downloaded SDK.
#
# Expects SNAP_CROSS_TRIPLE_OS (ios, macos), SNAP_CROSS_SDK_VAR (the
# environment variable naming the SDK) and SNAP_CROSS_MIN_VERSION set by the
# including toolchain. On a Mac none of this is needed: use Xcode's CMake
# support (-G Xcode, or CMAKE_SYSTEM_NAME=iOS with Apple's clang).

# CMake's Darwin platform file derives linker features (rpath, install
# names) from the Darwin kernel major version, which a cross build cannot
# ask the target: any version past 9 enables them all.
if(NOT CMAKE_SYSTEM_VERSION)
  set(CMAKE_SYSTEM_VERSION 20.0)
endif()

if(NOT CMAKE_OSX_ARCHITECTURES)
  set(CMAKE_OSX_ARCHITECTURES arm64)
endif()
list(LENGTH CMAKE_OSX_ARCHITECTURES _snap_narch)
if(NOT _snap_narch EQUAL 1)
  message(FATAL_ERROR "stacksnap cross toolchain: one architecture per build (got ${CMAKE_OSX_ARCHITECTURES})")
endif()

if(NOT CMAKE_OSX_SYSROOT)
  set(CMAKE_OSX_SYSROOT "$ENV{${SNAP_CROSS_SDK_VAR}}")
endif()
if(NOT CMAKE_OSX_SYSROOT OR NOT IS_DIRECTORY "${CMAKE_OSX_SYSROOT}")
  message(FATAL_ERROR "stacksnap cross toolchain: set ${SNAP_CROSS_SDK_VAR} (or CMAKE_OSX_SYSROOT) to an SDK directory")
endif()
if(NOT CMAKE_OSX_DEPLOYMENT_TARGET)
  set(CMAKE_OSX_DEPLOYMENT_TARGET "${SNAP_CROSS_MIN_VERSION}" CACHE STRING "Minimum OS version")
endif()

# Debian's LLVM directories first (HINTS come before PATH): a Swift
# toolchain on PATH carries its own clang and llvm-ar, which must not
# silently replace the compiler this check names.
set(_snap_llvm_dirs /usr/lib/llvm-14/bin /usr/lib/llvm-15/bin /usr/lib/llvm-16/bin)
find_program(SNAP_CROSS_CLANG NAMES clang clang-14 clang-15 clang-16
  HINTS ${_snap_llvm_dirs} REQUIRED)
# clang -fuse-ld=lld looks for a program called exactly "ld64.lld" for
# Darwin targets; Debian ships it in the LLVM directory (package lld-14,
# pulled in by lld), and only ld64.lld-14 on PATH.
find_program(SNAP_CROSS_LD64 NAMES ld64.lld HINTS ${_snap_llvm_dirs} REQUIRED)
get_filename_component(_snap_ld_dir "${SNAP_CROSS_LD64}" DIRECTORY)
find_program(SNAP_CROSS_AR NAMES llvm-ar llvm-ar-14 HINTS ${_snap_llvm_dirs} REQUIRED)
find_program(SNAP_CROSS_RANLIB NAMES llvm-ranlib llvm-ranlib-14 HINTS ${_snap_llvm_dirs} REQUIRED)
find_program(SNAP_CROSS_INSTALL_NAME_TOOL NAMES llvm-install-name-tool llvm-install-name-tool-14
  HINTS ${_snap_llvm_dirs})

set(CMAKE_C_COMPILER "${SNAP_CROSS_CLANG}")
set(CMAKE_C_COMPILER_TARGET
  "${CMAKE_OSX_ARCHITECTURES}-apple-${SNAP_CROSS_TRIPLE_OS}${CMAKE_OSX_DEPLOYMENT_TARGET}")
set(CMAKE_AR "${SNAP_CROSS_AR}" CACHE FILEPATH "")
set(CMAKE_RANLIB "${SNAP_CROSS_RANLIB}" CACHE FILEPATH "")
if(SNAP_CROSS_INSTALL_NAME_TOOL)
  set(CMAKE_INSTALL_NAME_TOOL "${SNAP_CROSS_INSTALL_NAME_TOOL}" CACHE FILEPATH "")
endif()
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT "-fuse-ld=lld -B${_snap_ld_dir}")
endforeach()

# CMake's Darwin platform finishes archives with Apple's ranlib flags
# (-no_warning_for_no_symbols -c), which llvm-ranlib rejects: override the
# rule after the platform files have run.
set(CMAKE_USER_MAKE_RULES_OVERRIDE "${CMAKE_CURRENT_LIST_DIR}/darwin_cross_rules.cmake")

# arm64e: upstream clang (Debian's 14) knows the triple but not the
# pointer-authentication ABI (no ptrauth_calls, no <ptrauth.h>; Apple's
# clang has both). Ask the SDK for the opaque thread-state layout that
# arm64e has, so at least the code's use of the accessor macros, rather
# than the raw fields, is compiled here.
set(_snap_cflags "")
if(CMAKE_OSX_ARCHITECTURES STREQUAL "arm64e")
  string(APPEND _snap_cflags " -D__DARWIN_OPAQUE_ARM_THREAD_STATE64=1")
endif()

# A trimmed SDK laid out as include/, lib/, Frameworks/ (hexops'
# xcode-frameworks) instead of usr/include, usr/lib, System/Library/Frameworks.
if(NOT EXISTS "${CMAKE_OSX_SYSROOT}/usr/include" AND EXISTS "${CMAKE_OSX_SYSROOT}/include")
  string(APPEND _snap_cflags " -isystem ${CMAKE_OSX_SYSROOT}/include -iframework ${CMAKE_OSX_SYSROOT}/Frameworks")
endif()
# set, not append: CMake reads a toolchain file more than once.
set(CMAKE_C_FLAGS_INIT "${_snap_cflags}")
# Without libSystem in the SDK nothing links: let CMake's compiler checks
# stop at a static library.
if(NOT EXISTS "${CMAKE_OSX_SYSROOT}/usr/lib/libSystem.tbd" AND
   NOT EXISTS "${CMAKE_OSX_SYSROOT}/usr/lib/libSystem.B.tbd")
  set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
  set(SNAP_DARWIN_SDK_CAN_LINK OFF CACHE BOOL "The SDK has libSystem: executables link")
else()
  set(SNAP_DARWIN_SDK_CAN_LINK ON CACHE BOOL "The SDK has libSystem: executables link")
endif()

set(CMAKE_FIND_ROOT_PATH "${CMAKE_OSX_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
