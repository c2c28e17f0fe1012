# cfi_imports.cmake — the check behind cfi.c's promise "no libc call": the
# undefined symbols (nm -u, the oracle) of cfi.c's and cfi_program.c's
# objects may only be the sanitizer runtime's checks, snap__plat_read and
# snap__cfi_run (cfi_program.c's, called by cfi.c), never a libc function
# (memcpy and memset are what compilers emit for copies and zeroing at -O0;
# under ASan they become __asan_memcpy/__asan_memset, the interceptors,
# also refused).
#   cmake -DNM=<nm> -DOBJ=<cfi.c.o;cfi_program.c.o> -P cfi_imports.cmake
if(NOT NM OR NOT OBJ)
  message(FATAL_ERROR "cfi_imports.cmake: NM (CMAKE_NM) and OBJ needed")
endif()
list(LENGTH OBJ nobj)
if(NOT nobj EQUAL 2)
  message(FATAL_ERROR "cfi_imports.cmake: expected the objects of cfi.c and cfi_program.c, got: ${OBJ}")
endif()
set(bad "")
foreach(obj IN LISTS OBJ)
  execute_process(COMMAND ${NM} -u ${obj} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} -u ${obj} failed: ${rc}")
  endif()
  string(REGEX MATCHALL "[^ \t\n]+\n" lines "${out}")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" sym)
    if(sym STREQUAL "U" OR sym STREQUAL "_GLOBAL_OFFSET_TABLE_")
      continue()
    endif()
    # The calls out these objects make: for tables read through the copy
    # that cannot fault (an image the table does not know yet), and from
    # the FDE lookup into the instruction interpreter: our own,
    # [signal-safe].
    if(sym MATCHES "^_?snap__(plat_read|cfi_run)$")
      continue()
    endif()
    if(sym MATCHES "^__(asan|ubsan|tsan|hwasan)_" AND NOT sym MATCHES "_mem|_str")
      continue() # instrumentation, not a call the code makes
    endif()
    list(APPEND bad "${sym} (${obj})")
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "cfi.c calls outside itself in the stopped window: ${bad}")
endif()
message(STATUS "cfi.c and cfi_program.c import no libc function")
