# The programs installed beside the library (tools/). Included from the
# Linux part of tests/CMakeLists.txt.
#
# stacksnap-symbolicate's JSON reader and writer: exact cases and hostile
# input in C (test_json).
add_executable(test_json tools/test_json.c)
target_include_directories(test_json PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(test_json PRIVATE -Wno-missing-prototypes)
target_compile_definitions(test_json PRIVATE _GNU_SOURCE
  TEST_JSON_CORPUS="${CMAKE_CURRENT_SOURCE_DIR}/tools/fuzz_corpus_json")
target_link_libraries(test_json PRIVATE snap_symbolicate_json m)
add_test(NAME test_json COMMAND test_json)
set_tests_properties(test_json PROPERTIES TIMEOUT 120)

