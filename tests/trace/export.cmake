# The sampling trace's exporters (issue 16): spans to slices, and the three
# file formats read back by readers nobody here wrote. Included from the
# Linux part of tests/CMakeLists.txt (Python and its packages are there).
#
# test_trace_slices: slices from synthetic spans, every slice known.
snap_test(test_trace_slices trace/test_trace_slices.c)

# test_trace_export writes a synthetic snapshot (the issue's pattern, a
# worker, marks, hostile names, and a 30 s benchmark snapshot) in the three
# formats; test_trace_export.py reads them with the Perfetto protos of the
# `perfetto` PyPI package (and `protobuf`), Python's json module and the
# folded format's rules, and fails (never skips) without those packages.
snap_test(test_trace_export trace/test_trace_export.c)
set_tests_properties(test_trace_export PROPERTIES TIMEOUT 300)
add_test(NAME test_trace_export_python
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/trace/test_trace_export.py
          $<TARGET_FILE:test_trace_export> --run-with "${SNAP_RUN_WITH}")
set_tests_properties(test_trace_export_python PROPERTIES TIMEOUT 300)
