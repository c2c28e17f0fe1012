# nm_dynamic.cmake — run after test_callstack_class links (cmake -P): writes
# nm's list of the executable's dynamic symbols with their sizes to OUT.
# They are the names dladdr (so backtrace_symbols) can give for it: the
# test's oracle.
#   cmake -DNM=<nm> -DFILE=<exe> -DOUT=<file> -P nm_dynamic.cmake
if(NOT NM)
  message(FATAL_ERROR "nm_dynamic.cmake: nm not found (CMAKE_NM)")
endif()
execute_process(COMMAND ${NM} -D --defined-only -S ${FILE}
  OUTPUT_FILE ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D ${FILE} failed: ${rc}")
endif()
