# cfi_imports.cmake — the check behind cfi.c's promise "no libc call": the
# object's undefined symbols (nm -u, the oracle) may only be the sanitizer
# runtime's checks and snap__plat_read, never a libc function (memcpy and memset are what
# compilers emit for copies and zeroing at -O0; under ASan they become
# __asan_memcpy/__asan_memset, the interceptors, also refused).
#   cmake -DNM=<nm> -DOBJ=<cfi.c.o> -P cfi_imports.cmake
if(NOT NM OR NOT OBJ)
  message(FATAL_ERROR "cfi_imports.cmake: NM (CMAKE_NM) and OBJ needed")
endif()
execute_process(COMMAND ${NM} -u ${OBJ} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -u ${OBJ} failed: ${rc}")
endif()
string(REGEX MATCHALL "[^ \t\n]+\n" lines "${out}")
set(bad "")
foreach(line IN LISTS lines)
  string(STRIP "${line}" sym)
  if(sym STREQUAL "U" OR sym STREQUAL "_GLOBAL_OFFSET_TABLE_")
    continue()
  endif()
  # The one call out cfi.c makes, for tables read through the copy that
  # cannot fault (an image the table does not know yet): our own,
  # [signal-safe].
  if(sym MATCHES "^_?snap__plat_read$")
    continue()
  endif()
  if(sym MATCHES "^__(asan|ubsan|tsan|hwasan)_" AND NOT sym MATCHES "_mem|_str")
    continue() # instrumentation, not a call the code makes
  endif()
  list(APPEND bad ${sym})
endforeach()
if(bad)
  message(FATAL_ERROR "cfi.c calls outside itself in the stopped window: ${bad}")
endif()
message(STATUS "cfi.c imports no libc function")
