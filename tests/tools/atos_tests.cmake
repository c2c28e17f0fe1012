# atos_tests.cmake — test_atos: the lines stacksnap-symbolicate prints for
# an Apple report's images (tools/symbolicate/atos.c), compared with exact
# strings in atos(1)'s documented syntax, with hostile names and paths
# (quoting, newlines) and write errors (/dev/full). Runs on Linux.
# Included from tests/CMakeLists.txt.
add_executable(test_atos tools/test_atos.c)
target_include_directories(test_atos PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(test_atos PRIVATE -Wno-missing-prototypes)
target_compile_definitions(test_atos PRIVATE _GNU_SOURCE)
target_link_libraries(test_atos PRIVATE snap_symbolicate_atos)
add_test(NAME test_atos COMMAND test_atos)
set_tests_properties(test_atos PROPERTIES TIMEOUT 60 LABELS darwin-contract)
