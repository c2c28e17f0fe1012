# Cross build for aarch64 Linux with Debian's gcc-aarch64-linux-gnu; tests run
# under qemu-user. SNAP_QEMU_CPU picks the emulated CPU: "max" has pointer
# authentication (for -mbranch-protection=standard builds);
# "max,pauth-impdef=on" signs with qemu's implementation-defined hash
# instead of QARMA, the same instructions about ten times faster to
# emulate (scripts/test.sh's arm64-pac).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
if(NOT CMAKE_C_COMPILER)
  set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
endif()
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
if(NOT SNAP_QEMU_CPU)
  set(SNAP_QEMU_CPU max)
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -cpu ${SNAP_QEMU_CPU} -L /usr/aarch64-linux-gnu)
