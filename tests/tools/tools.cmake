# The programs installed beside the library (tools/). Included from the
# Linux part of tests/CMakeLists.txt.
#
# stacksnap-symbolicate's JSON reader (yyjson) and writer: exact cases and
# hostile input in C (test_json); Python's json module as the oracle on
# random documents and on mutated texts (test_json_python).
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

# libFuzzer over the report reader (yyjson and json.c, compiled in: the asan configuration with
# SNAP_FUZZ_SECONDS, like fuzz_unwind), for half that budget: parse, and
# what parses must write, re-parse and write to the identical text, then
# the report's checks, naming pass (no files) and text (terminal-safe
# whatever the report held: issue 24). The sources are
# compiled in (not linked from the libraries) so that libFuzzer's coverage
# sees them. The committed corpus: real lag reports and edge cases.
if(SNAP_FUZZ_SECONDS GREATER 0 AND TARGET snap_symbolicate_dwarf)
  set(symb ${PROJECT_SOURCE_DIR}/tools/symbolicate)
  add_executable(fuzz_report_json tools/fuzz_report_json.c ${symb}/json.c
                 ${PROJECT_SOURCE_DIR}/third_party/yyjson/yyjson.c
                 ${symb}/report_names.c ${symb}/report_text.c
                 ${symb}/symbol_files.c ${symb}/atos.c ${symb}/dwarf_lines.c
                 ${symb}/image_probe.c ${symb}/text_escape.c
                 ${fuzz_sources})
  target_include_directories(fuzz_report_json PRIVATE ${symb}
                             ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include
                             ${PROJECT_SOURCE_DIR}/third_party/yyjson)
  target_compile_definitions(fuzz_report_json PRIVATE _GNU_SOURCE YYJSON_DISABLE_WRITER=1)
  target_link_libraries(fuzz_report_json PRIVATE Threads::Threads ${CMAKE_DL_LIBS}
                        PkgConfig::SNAP_LIBDW)
  target_compile_options(fuzz_report_json PRIVATE -fsanitize=fuzzer -fno-omit-frame-pointer)
  target_link_options(fuzz_report_json PRIVATE -fsanitize=fuzzer)
  math(EXPR json_fuzz_seconds "(${SNAP_FUZZ_SECONDS} + 1) / 2")
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz_work_json)
  add_test(NAME fuzz_report_json COMMAND fuzz_report_json
           -max_total_time=${json_fuzz_seconds} -timeout=10 -rss_limit_mb=2048
           -print_final_stats=1 -dict=${CMAKE_CURRENT_SOURCE_DIR}/tools/fuzz_json.dict
           ${CMAKE_CURRENT_BINARY_DIR}/fuzz_work_json
           ${CMAKE_CURRENT_SOURCE_DIR}/tools/fuzz_corpus_json)
  math(EXPR json_fuzz_timeout "${json_fuzz_seconds} + 120")
  set_tests_properties(fuzz_report_json PROPERTIES TIMEOUT ${json_fuzz_timeout})
endif()
