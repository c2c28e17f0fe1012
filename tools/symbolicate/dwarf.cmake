# The DWARF line-table reader of stacksnap-symbolicate (dwarf_lines.c): a
# static library the program and its tests link. Pure C (no OS calls), so
# it builds on every platform. Included from the top-level CMakeLists.txt.
add_library(snap_symbolicate_dwarf STATIC ${CMAKE_CURRENT_LIST_DIR}/dwarf_lines.c)
target_include_directories(snap_symbolicate_dwarf PUBLIC ${CMAKE_CURRENT_LIST_DIR})
