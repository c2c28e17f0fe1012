# atos.cmake — snap_symbolicate_atos: the atos(1) and Spotlight lines
# stacksnap-symbolicate prints for the images of an Apple report
# (tools/symbolicate/atos.c). Pure C with no dependency but the public
# header's error codes, so it builds for every host the CLI runs on.
# Included from the top-level CMakeLists.txt; tested by
# tests/tools/atos_tests.cmake.
add_library(snap_symbolicate_atos STATIC ${CMAKE_CURRENT_LIST_DIR}/atos.c)
target_include_directories(snap_symbolicate_atos
  PUBLIC ${CMAKE_CURRENT_LIST_DIR} ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(snap_symbolicate_atos PUBLIC snap_symbolicate_text)
