# flamegraph.cmake — test_flamegraph: scripts/flamegraph.py (folded stacks
# to a flame-graph SVG), its SVG read back with Python's xml.etree: boxes
# at their counts, widths and places, hostile names, 200,000 lines, exit
# codes, atomic -o, a closed pipe; flamegraph.pl's per-frame counts when it
# is installed (no Debian 12 package ships it). Python only: runs on every
# host, whatever the configuration builds. Included from tests/CMakeLists.txt.
find_program(SNAP_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME test_flamegraph
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/tools/test_flamegraph.py
          ${PROJECT_SOURCE_DIR}/scripts/flamegraph.py)
set_tests_properties(test_flamegraph PROPERTIES TIMEOUT 300)
