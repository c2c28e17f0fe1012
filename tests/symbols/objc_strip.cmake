# objc_strip.cmake — run after test_objc_names links (cmake -P): lists the
# executable's symbols with nm into BEFORE, strips it in place, lists them
# again into AFTER (where nm says "no symbols"). The test reads both: the
# first proves the listing would show the methods, the second that they
# are gone.
#   cmake -DNM=<nm> -DSTRIP=<strip> -DFILE=<exe> -DBEFORE=<f> -DAFTER=<f> -P objc_strip.cmake
if(NOT NM OR NOT STRIP)
  message(FATAL_ERROR "objc_strip.cmake: nm or strip not found (CMAKE_NM, CMAKE_STRIP)")
endif()
execute_process(COMMAND ${NM} ${FILE} OUTPUT_FILE ${BEFORE} ERROR_FILE ${BEFORE}.err
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} ${FILE} failed: ${rc}")
endif()
execute_process(COMMAND ${STRIP} ${FILE} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${STRIP} ${FILE} failed: ${rc}")
endif()
# nm reports a file without symbols on stderr: keep both streams.
execute_process(COMMAND ${NM} ${FILE} OUTPUT_VARIABLE out ERROR_VARIABLE err
  RESULT_VARIABLE rc)
file(WRITE ${AFTER} "${out}${err}")
