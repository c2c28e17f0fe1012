# darwin.cmake — the Apple build: iOS (device and simulator) and macOS,
# arm64, arm64e and x86_64. Included by the top-level CMakeLists.txt when
# the target system is Apple's (CMAKE_SYSTEM_NAME iOS or Darwin).
#
# Deployment targets (the floor; newer is fine):
#   iOS 12.0  — the first iOS on arm64e hardware (A12), and the floor of
#               pthread_stack_frame_decode_np: the OS's own promise that
#               frame records, pointer-authenticated or not, are the ABI the
#               walker relies on.
#   macOS 10.14 — the same OS generation (pthread_stack_frame_decode_np
#               is macOS 10.14+); on arm64 clang raises it to 11.0, the
#               first macOS for Apple silicon.
# -Wunguarded-availability turns any call to an API newer than the
# deployment target into a warning (an error with SNAP_WERROR): every API
# the backend names exists at these floors.

set(SNAP_DARWIN_SOURCES
  src/platform/darwin/threads_darwin.c
  src/platform/darwin/sample.c
  src/platform/darwin/cpu_timer_darwin.c
  src/platform/darwin/waker_darwin.c
  src/platform/darwin/rescuer.c
  src/platform/darwin/prebind.c
  src/platform/darwin/memory.c
  src/platform/darwin/images_darwin.c
  src/platform/darwin/image_ident.c
  src/platform/darwin/image_registry.c
  src/platform/darwin/macho_ranges.c
  src/platform/darwin/build_id_text.c
  src/platform/darwin/signal_frames_darwin.c
  src/platform/darwin/async_task.c
  src/platform/darwin/callstack_symbols.c
  src/platform/darwin/callstack_lines.c
  src/platform/darwin/semaphore.c
  src/platform/darwin/lock.c
  src/platform/darwin/thread_info.c
  src/platform/darwin/blocked_regs.c
  src/platform/darwin/wait_abi.c
  src/platform/darwin/wait_darwin.c
  src/platform/darwin/process_start.c
  src/platform/darwin/runloop.c
  src/platform/darwin/runloop_nesting.c
  src/platform/darwin/compact_unwind.c
)

if(CMAKE_SYSTEM_NAME STREQUAL "iOS")
  set(_snap_floor 12.0)
else()
  set(_snap_floor 10.14) # clang raises it to 11.0 for arm64 by itself
endif()
if(NOT CMAKE_OSX_DEPLOYMENT_TARGET)
  set(CMAKE_OSX_DEPLOYMENT_TARGET ${_snap_floor})
elseif(CMAKE_OSX_DEPLOYMENT_TARGET VERSION_LESS _snap_floor)
  message(FATAL_ERROR "stacksnap: deployment target ${CMAKE_OSX_DEPLOYMENT_TARGET} is below the supported floor ${_snap_floor}")
endif()

add_compile_options(-Wunguarded-availability)
