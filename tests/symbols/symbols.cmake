# The symbolication core and its public API (src/symbols/): naming
# conventions, the cache, image unloads.
snap_test(test_symbolicate symbols/test_symbolicate.c)
# Two owners of one stack (snap_stack_retain, 1.3).
snap_test(test_stack_retain symbols/test_stack_retain.c)
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

# The shared strings against a model, through growth and churn (issue 26:
# open addressing replaced the hash chains).
snap_test(test_intern symbols/test_intern.c)

# The shared table's index keeps every entry reachable through growth,
# shrinking and deletions (open addressing, backward-shift deletion).
snap_test(test_cache_index symbols/test_cache_index.c)

# A stack the cache will not keep carries its own names, the same as an
# interned one's, and holds nothing shared (issue 26).
snap_test(test_uncached_strings symbols/test_uncached_strings.c)
set_target_properties(test_uncached_strings PROPERTIES ENABLE_EXPORTS ON)

# The doorkeeper: a stack is cached on its second sighting; one-off stacks
# leave nothing in the cache (issue 26, goal 1: cold lookups, cache on).
snap_test(test_cache_admit symbols/test_cache_admit.c)
set_target_properties(test_cache_admit PROPERTIES ENABLE_EXPORTS ON)
target_link_libraries(test_cache_admit PRIVATE Threads::Threads)

# The cache's per-thread fronts count in its cap; a lower cap empties them,
# also a waiting thread's (issue 12, "the bounded cache").
snap_test(test_cache_fronts symbols/test_cache_fronts.c)
set_target_properties(test_cache_fronts PROPERTIES ENABLE_EXPORTS ON)
target_link_libraries(test_cache_fronts PRIVATE Threads::Threads)

# Image unload: two libraries of one layout, dlopen/dlclose/dlopen. Natively
# the kernel hands B the hole A left. qemu-user's mmap moves on instead, so
# there both libraries ask for one address (a fixed first segment), which
# the loader passes to mmap as a hint when the program is not PIE.
function(snap_same_address_lib target)
  if(CMAKE_CROSSCOMPILING)
    target_link_options(${target} PRIVATE -Wl,-Ttext-segment=0x500000000000)
  endif()
endfunction()
# A test loading libraries A and B at one address: their paths as LIB_A and
# LIB_B, and under qemu not PIE (see above).
function(snap_same_address_test test lib_a lib_b)
  target_compile_definitions(${test} PRIVATE
    LIB_A="$<TARGET_FILE:${lib_a}>" LIB_B="$<TARGET_FILE:${lib_b}>")
  add_dependencies(${test} ${lib_a} ${lib_b})
  if(CMAKE_CROSSCOMPILING)
    set_target_properties(${test} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
    target_compile_options(${test} PRIVATE -fno-pie)
    target_link_options(${test} PRIVATE -no-pie)
  endif()
endfunction()
foreach(v a b)
  add_library(snap_unload_${v} SHARED symbols/unload_lib.c)
  target_compile_definitions(snap_unload_${v} PRIVATE UNLOAD_NAME=$<IF:$<STREQUAL:${v},a>,alpha,beta>)
  set_target_properties(snap_unload_${v} PROPERTIES OUTPUT_NAME snap_unload_${v})
  snap_same_address_lib(snap_unload_${v})
endforeach()
snap_test(test_symbol_unload symbols/test_symbol_unload.c)
snap_same_address_test(test_symbol_unload snap_unload_a snap_unload_b)

# Locks: stacksnap's and the loader's, taken from both sides at once.
add_library(snap_reentry MODULE symbols/reentry_lib.c)
target_include_directories(snap_reentry PRIVATE ${PROJECT_SOURCE_DIR}/include)
snap_test(test_symbol_reentry symbols/test_symbol_reentry.c)
set_target_properties(test_symbol_reentry PROPERTIES ENABLE_EXPORTS ON)
target_compile_definitions(test_symbol_reentry PRIVATE REENTRY_LIB="$<TARGET_FILE:snap_reentry>")
add_dependencies(test_symbol_reentry snap_reentry)
set_tests_properties(test_symbol_reentry PROPERTIES TIMEOUT 60)
# Issue 12, defects 1 and 2: two libraries of one layout loaded and unloaded
# at one address (churn_lib.c, tag a or b). test_dlclose_naming names
# through them while another thread churns; test_reload_capture loads the
# capturing flavour, whose constructor walks its own stack. Address reuse
# under qemu: as for test_symbol_unload above.
foreach(flavour churn churn_ctor)
  foreach(v a b)
    add_library(snap_${flavour}_${v} SHARED symbols/churn_lib.c)
    target_compile_definitions(snap_${flavour}_${v} PRIVATE CHURN_TAG=${v}
      CHURN_PAD=$<IF:$<STREQUAL:${v},a>,1,2>)
    if(flavour STREQUAL "churn_ctor")
      target_compile_definitions(snap_${flavour}_${v} PRIVATE CHURN_CAPTURE=1)
      target_compile_options(snap_${flavour}_${v} PRIVATE -O1 -fomit-frame-pointer)
    endif()
    snap_same_address_lib(snap_${flavour}_${v})
  endforeach()
endforeach()
snap_test(test_dlclose_naming symbols/test_dlclose_naming.c)
snap_same_address_test(test_dlclose_naming snap_churn_a snap_churn_b)
if(CMAKE_CROSSCOMPILING)
  target_compile_definitions(test_dlclose_naming PRIVATE SNAP_CHURN_SECONDS=4)
endif()
snap_test(test_reload_capture images/test_reload_capture.c)
set_target_properties(test_reload_capture PROPERTIES ENABLE_EXPORTS ON)
snap_same_address_test(test_reload_capture snap_churn_ctor_a snap_churn_ctor_b)
# Issue 26, goal 7: two image-table builds at once never publish the older
# one last (test_publish_order, made to happen through a test hook), and
# naming under churn from several threads never finds a pc of a library
# that stayed loaded in no image (test_churn_misses, counted).
# Issue 26, goal 2: a thread cycling through 64 call sites stays in its front.
snap_test(test_front_cycle symbols/test_front_cycle.c)
# Issue 26, goal 6: the cache's count against glibc's heap.
snap_test(test_cache_bytes symbols/test_cache_bytes.c)
snap_test(test_publish_order images/test_publish_order.c)
snap_same_address_test(test_publish_order snap_churn_a snap_churn_b)
snap_test(test_churn_misses symbols/test_churn_misses.c)
snap_same_address_test(test_churn_misses snap_churn_a snap_churn_b)
if(CMAKE_CROSSCOMPILING)
  target_compile_definitions(test_churn_misses PRIVATE SNAP_CHURN_SECONDS=2)
endif()

# API v1: the naming calls' int-returning twins tell each cause of "no
# stack" apart; snap_callstack_symbols takes SNAP_SYMBOLICATE_EXACT_PC0.
snap_test(test_naming_errors symbols/test_naming_errors.c)
set_target_properties(test_naming_errors PROPERTIES ENABLE_EXPORTS ON)
