# The programs installed beside the library (tools/). Included from the
# Linux part of tests/CMakeLists.txt.
#
# stacksnap-symbolicate's JSON reader and writer: exact cases and hostile
# input in C (test_json); Python's json module as the oracle on random
# documents and on mutated texts (test_json_python).
add_executable(test_json tools/test_json.c)
target_include_directories(test_json PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_options(test_json PRIVATE -Wno-missing-prototypes)
target_compile_definitions(test_json PRIVATE _GNU_SOURCE
  TEST_JSON_CORPUS="${CMAKE_CURRENT_SOURCE_DIR}/tools/fuzz_corpus_json")
target_link_libraries(test_json PRIVATE snap_symbolicate_json m)
add_test(NAME test_json COMMAND test_json)
set_tests_properties(test_json PROPERTIES TIMEOUT 120)

find_program(SNAP_PYTHON3 NAMES python3 REQUIRED)
string(JOIN " " SNAP_RUN_WITH ${CMAKE_CROSSCOMPILING_EMULATOR})
add_test(NAME test_json_python
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/tools/json_oracle.py
          $<TARGET_FILE:test_json> --run-with "${SNAP_RUN_WITH}")
set_tests_properties(test_json_python PROPERTIES TIMEOUT 120)
