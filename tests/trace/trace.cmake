# The sampling trace (src/trace/), end to end: a program with a known
# pattern traced at 1 kHz, its files read by readers nobody here wrote
# (Perfetto's protos from the `perfetto` package, Python's json).
add_executable(trace_pattern trace/trace_pattern.c)
target_compile_options(trace_pattern PRIVATE -fno-omit-frame-pointer -O1)
target_compile_definitions(trace_pattern PRIVATE _GNU_SOURCE)
target_include_directories(trace_pattern PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(trace_pattern PRIVATE stacksnap_static Threads::Threads ${CMAKE_DL_LIBS})
add_test(NAME test_trace_pattern
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/trace/test_trace_pattern.py
          $<TARGET_FILE:trace_pattern> --run-with "${SNAP_RUN_WITH}")
set_tests_properties(test_trace_pattern PROPERTIES TIMEOUT 120)

# The storage's memory cap over 10 minutes at 1 kHz (simulated clock), the
# newest data kept; the span encoding against a reference.
snap_test(test_trace_storage trace/test_trace_storage.c)
# The API's errors and lifecycle.
snap_test(test_trace_api trace/test_trace_api.c)
# Issue 23's state decisions with Apple's facts are src/blocked/'s now:
# test_blocked_state (tests/CMakeLists.txt).
# Issue 24 (item 14): every max_bytes the header documents starts a trace;
# an empty window written in every format, under the sanitizers too
# (Perfetto's export called qsort with a NULL array).
snap_test(test_trace_budget trace/test_trace_budget.c)
target_compile_definitions(test_trace_budget PRIVATE
  SNAP_HEADER="${PROJECT_SOURCE_DIR}/include/stacksnap.h")
snap_test(test_trace_empty_window trace/test_trace_empty_window.c)
# A window holds the span drawn at its start (test_trace_pattern's first
# phase, drawn late beside busy tests).
snap_test(test_trace_window trace/test_trace_window.c)

# Issue 25 ("one sampler"): the trace and the lag watchdog on together, the
# trace's phase edges held to the program's own clocks, quiet (20 ms) and
# beside three busy loops (40 ms).
add_executable(trace_lag_phases trace/trace_lag_phases.c)
target_compile_options(trace_lag_phases PRIVATE -fno-omit-frame-pointer -O1)
target_compile_definitions(trace_lag_phases PRIVATE _GNU_SOURCE)
target_include_directories(trace_lag_phases PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(trace_lag_phases PRIVATE stacksnap_static Threads::Threads ${CMAKE_DL_LIBS})
add_test(NAME test_trace_lag_edges
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/trace/test_trace_lag_edges.py
          $<TARGET_FILE:trace_lag_phases> --bound-ms 20 --run-with "${SNAP_RUN_WITH}")
add_test(NAME test_trace_lag_edges_busy
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/trace/test_trace_lag_edges.py
          $<TARGET_FILE:trace_lag_phases> --busy 3 --bound-ms 40 --run-with "${SNAP_RUN_WITH}")
set_tests_properties(test_trace_lag_edges test_trace_lag_edges_busy
  PROPERTIES TIMEOUT 120 LABELS "trace;lag")
# A thread's samples of itself: its CPU-time timer and lock-free ring
# (never a sample of a sleeping thread, nor one after the stop).
snap_test(test_trace_self_ring trace/test_trace_self_ring.c)
set_tests_properties(test_trace_self_ring PROPERTIES SKIP_RETURN_CODE 77
  LABELS "trace")
# A main thread that shares its CPU with busy threads, whose CPU-time
# timer the kernel's ticks starve, is still sampled while it computes.
snap_test(test_trace_starved trace/test_trace_starved.c)
set_tests_properties(test_trace_starved PROPERTIES SKIP_RETURN_CODE 77
  LABELS "trace")
