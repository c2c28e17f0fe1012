# The file:line reader of stacksnap-symbolicate (dwarf_lines.c): elfutils'
# libdw over files held in memory. A static library the program and its
# tests link. Included from tools/symbolicate/CMakeLists.txt; without libdw
# for the target (the arm64 cross build has none) SNAP_SYMBOLICATE_LIBDW is
# OFF and neither it nor the program is built.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(SNAP_LIBDW IMPORTED_TARGET GLOBAL libdw)
endif()
if(SNAP_LIBDW_FOUND)
  # pkg-config may answer with the build machine's libdw (a cross build):
  # only a libdw the target links counts.
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_LIBRARIES PkgConfig::SNAP_LIBDW)
  check_c_source_compiles("#include <elfutils/libdw.h>
int main(void) { return dwarf_begin(-1, DWARF_C_READ) != 0; }" SNAP_LIBDW_LINKS)
  unset(CMAKE_REQUIRED_LIBRARIES)
endif()
if(SNAP_LIBDW_FOUND AND SNAP_LIBDW_LINKS)
  set(SNAP_SYMBOLICATE_LIBDW ON)
  add_library(snap_symbolicate_dwarf STATIC ${CMAKE_CURRENT_LIST_DIR}/dwarf_lines.c)
  target_include_directories(snap_symbolicate_dwarf PUBLIC ${CMAKE_CURRENT_LIST_DIR})
  target_link_libraries(snap_symbolicate_dwarf PUBLIC PkgConfig::SNAP_LIBDW)
else()
  set(SNAP_SYMBOLICATE_LIBDW OFF)
  message(STATUS "stacksnap-symbolicate: no libdw for the target (libdw-dev): not built")
endif()
