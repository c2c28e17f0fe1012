# check_soname.cmake — the shared library's SONAME is
# libstacksnap.so.<major>, read from the file by readelf (or objdump),
# where <major> is SNAP_VERSION_MAJOR read here from the public header.
#   cmake -DLIB=<libstacksnap.so> -DHEADER=<stacksnap.h> -DREADELF=<readelf>
#         -DOBJDUMP=<objdump> -P check_soname.cmake
file(STRINGS "${HEADER}" major_line REGEX "^#define SNAP_VERSION_MAJOR [0-9]+$")
string(REGEX REPLACE "^#define SNAP_VERSION_MAJOR ([0-9]+)$" "\\1" major "${major_line}")
if(NOT major MATCHES "^[0-9]+$")
  message(FATAL_ERROR "no SNAP_VERSION_MAJOR in ${HEADER}")
endif()
if(READELF)
  execute_process(COMMAND ${READELF} -d "${LIB}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  set(re "Library soname: \\[([^]]*)\\]")
else()
  execute_process(COMMAND ${OBJDUMP} -p "${LIB}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  set(re "SONAME +([^\n ]*)")
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "could not read ${LIB}")
endif()
if(NOT out MATCHES "${re}")
  message(FATAL_ERROR "${LIB} has no SONAME")
endif()
set(soname "${CMAKE_MATCH_1}")
if(NOT soname STREQUAL "libstacksnap.so.${major}")
  message(FATAL_ERROR "SONAME ${soname}, expected libstacksnap.so.${major} (SNAP_VERSION_MAJOR ${major})")
endif()
message(STATUS "SONAME ${soname} follows SNAP_VERSION_MAJOR ${major}")
