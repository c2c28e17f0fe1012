# The symbolication core and its public API (src/symbols/): naming
# conventions, the cache, image unloads.
snap_test(test_symbolicate symbols/test_symbolicate.c)
set_target_properties(test_symbolicate PROPERTIES ENABLE_EXPORTS ON)

# The pc after a signal-return trampoline is exact (issue 12, speed: the
# trampoline check is learnt a chunk of code at a time).
snap_test(test_symbol_sigreturn symbols/test_symbol_sigreturn.c)

# Cache: SNAP_TEST_CACHE_STACKS distinct stacks through a 1 MiB cap; 1 M in
# the plain native builds, fewer where each naming costs 5-20x more
# (sanitizers, qemu).
snap_test(test_symbol_cache symbols/test_symbol_cache.c)
set_target_properties(test_symbol_cache PROPERTIES ENABLE_EXPORTS ON)
if(SNAP_SANITIZE OR CMAKE_CROSSCOMPILING)
  target_compile_definitions(test_symbol_cache PRIVATE SNAP_TEST_CACHE_STACKS=200000)
endif()

# The cache's per-thread fronts count in its cap; a lower cap empties them,
# also a waiting thread's (issue 12, "the bounded cache").
snap_test(test_cache_fronts symbols/test_cache_fronts.c)
set_target_properties(test_cache_fronts PROPERTIES ENABLE_EXPORTS ON)
target_link_libraries(test_cache_fronts PRIVATE Threads::Threads)

# Image unload: two libraries of one layout, dlopen/dlclose/dlopen. Natively
# the kernel hands B the hole A left. qemu-user's mmap moves on instead, so
# there both libraries ask for one address (a fixed first segment), which
# the loader passes to mmap as a hint when the program is not PIE.
foreach(v a b)
  add_library(snap_unload_${v} SHARED symbols/unload_lib.c)
  target_compile_definitions(snap_unload_${v} PRIVATE UNLOAD_NAME=$<IF:$<STREQUAL:${v},a>,alpha,beta>)
  set_target_properties(snap_unload_${v} PROPERTIES OUTPUT_NAME snap_unload_${v})
  if(CMAKE_CROSSCOMPILING)
    target_link_options(snap_unload_${v} PRIVATE -Wl,-Ttext-segment=0x500000000000)
  endif()
endforeach()
snap_test(test_symbol_unload symbols/test_symbol_unload.c)
target_compile_definitions(test_symbol_unload PRIVATE
  LIB_A="$<TARGET_FILE:snap_unload_a>" LIB_B="$<TARGET_FILE:snap_unload_b>")
add_dependencies(test_symbol_unload snap_unload_a snap_unload_b)
if(CMAKE_CROSSCOMPILING)
  set_target_properties(test_symbol_unload PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  target_compile_options(test_symbol_unload PRIVATE -fno-pie)
  target_link_options(test_symbol_unload PRIVATE -no-pie)
endif()

# Locks: stacksnap's and the loader's, taken from both sides at once.
add_library(snap_reentry MODULE symbols/reentry_lib.c)
target_include_directories(snap_reentry PRIVATE ${PROJECT_SOURCE_DIR}/include)
snap_test(test_symbol_reentry symbols/test_symbol_reentry.c)
set_target_properties(test_symbol_reentry PROPERTIES ENABLE_EXPORTS ON)
target_compile_definitions(test_symbol_reentry PRIVATE REENTRY_LIB="$<TARGET_FILE:snap_reentry>")
add_dependencies(test_symbol_reentry snap_reentry)
set_tests_properties(test_symbol_reentry PROPERTIES TIMEOUT 60)
