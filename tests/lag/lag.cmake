# The lag watchdog (src/lag/): configuration and report directory in C;
# scenarios, kills and hang_killed through real processes, with reports
# read by python3's json module (an independent parser). Included from the
# part of tests/ that runs on Linux and macOS.
snap_test(test_lag_config lag/test_lag_config.c)
# Issue 13: one lag sampled inside and outside a libc call is one lag.
snap_test(test_annealing lag/test_annealing.c)
# Issue 13: a watchdog starved of CPU (SCHED_IDLE behind a busy worker on
# its CPU) still reports the lag's whole duration. Linux: schedstat,
# SCHED_IDLE and CPU affinity.
if(SNAP_PLATFORM STREQUAL "linux")
  snap_test(test_lag_starved lag/test_lag_starved.c)
  set_tests_properties(test_lag_starved PROPERTIES RESOURCE_LOCK lag_processes)
endif()
# Issue 13: a process stopped while the watchdog samples makes no lag,
# and a real lag under the same sampling waits is still reported.
if(SNAP_PLATFORM STREQUAL "linux")
  snap_test(test_lag_stopped lag/test_lag_stopped.c)
  set_tests_properties(test_lag_stopped PROPERTIES RESOURCE_LOCK lag_processes)
endif()
# Issue 25: a lag's time split covers its stretch and nothing past it,
# also when the watchdog sees the lag (or its end) late. Linux: schedstat.
if(SNAP_PLATFORM STREQUAL "linux")
  snap_test(test_lag_split_own lag/test_lag_split_own.c)
  set_tests_properties(test_lag_split_own PROPERTIES RESOURCE_LOCK lag_processes)
endif()
# Issue 25: identical lags make one report, also when some are seen only
# after they ended (and beside three busy loops); the daily cap's drops
# are counted.
snap_test(test_lag_grouping lag/test_lag_grouping.c)
set_tests_properties(test_lag_grouping PROPERTIES RESOURCE_LOCK lag_processes)
# Issue 13: a lag ends when its stretch ended, not when the watchdog next
# looked (the loop may have run dozens of stretches meanwhile).
snap_test(test_lag_end lag/test_lag_end.c)
set_tests_properties(test_lag_end PROPERTIES RESOURCE_LOCK lag_processes)
# Issue 25 (item 5): the library's own threads are in no report or trace
# (its oracle is /proc's thread names: Linux).
if(SNAP_PLATFORM STREQUAL "linux")
  snap_test(test_lag_ours lag/test_lag_ours.c)
  set_tests_properties(test_lag_ours PROPERTIES RESOURCE_LOCK lag_processes)
endif()
# The same lags while every fsync of a report write takes 150 ms (a busy
# disk): the watchdog's waits on it are not a stopped process. GNU ld's
# --wrap reaches the library's calls in the static archive.
if(SNAP_PLATFORM STREQUAL "linux")
  snap_test(test_lag_slow_disk lag/test_lag_end.c)
  target_compile_definitions(test_lag_slow_disk PRIVATE TEST_SLOW_DISK)
  target_link_options(test_lag_slow_disk PRIVATE -Wl,--wrap=fsync)
  set_tests_properties(test_lag_slow_disk PROPERTIES RESOURCE_LOCK lag_processes)
endif()
# Issue 13 (item 5): a lag's final write that fails (a full tmpfs,
# RLIMIT_FSIZE) is retried, and a restart finishes it: never left ongoing
# by a live process. Linux: inotify, mount namespaces, RLIMIT_FSIZE.
if(SNAP_PLATFORM STREQUAL "linux")
  snap_test(test_lag_final_write lag/test_lag_final_write.c)
  set_tests_properties(test_lag_final_write PROPERTIES RESOURCE_LOCK lag_processes)
endif()
# Issue 12: the lag's state machine, driven without threads or a clock.
snap_test(test_lag_state lag/test_lag_state.c)
# Issue 14: wait chains and deadlock cycles over handmade thread lists, and
# the report's blocked_on / main_blocked_on / deadlock keys.
snap_test(test_wait_chain lag/test_wait_chain.c)
# Issue 14: a lag report names the lock the main thread waits on and its
# owner, for real locks of every glibc kind (a manual loop, and a GLib
# loop where GLib is found). Linux: glibc's lock layouts, /proc.
if(SNAP_PLATFORM STREQUAL "linux")
  snap_test(test_lag_locks lag/test_lag_locks.c)
  if(SNAP_HAVE_GLIB)
    target_compile_definitions(test_lag_locks PRIVATE TEST_HAVE_GLIB)
    target_link_libraries(test_lag_locks PRIVATE PkgConfig::GLIB)
  endif()
  set_tests_properties(test_lag_locks PROPERTIES RESOURCE_LOCK lag_processes)
endif()
# Issue 24 (item 13): an owner that exited holding a normal mutex, its TID
# given to a new thread: the report names no owner. Linux: a PID namespace
# and ns_last_pid (root); skipped (77) where they cannot be had.
if(SNAP_PLATFORM STREQUAL "linux")
  snap_test(test_lag_tid_reuse lag/test_lag_tid_reuse.c)
  set_tests_properties(test_lag_tid_reuse PROPERTIES SKIP_RETURN_CODE 77
                       RESOURCE_LOCK lag_processes)
  if(CMAKE_CROSSCOMPILING_EMULATOR)
    set_property(TEST test_lag_tid_reuse APPEND PROPERTY ENVIRONMENT
                 SNAP_TEST_EMULATED=1)
  endif()
endif()

# Python 3 reads every report: an independent parser.
find_program(SNAP_PYTHON3 NAMES python3 REQUIRED)

# Issue 13: lag-report.py says computing, starved or blocked (in what)
# from a report's time split, on handmade reports.
add_test(NAME test_lag_report_script
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/lag/test_lag_report_script.py
          ${PROJECT_SOURCE_DIR}/scripts/lag-report.py)

# 200 kills at random instants while reports are written (kill_storm.py).
add_executable(lag_churn lag/lag_churn.c)
target_compile_options(lag_churn PRIVATE -fno-omit-frame-pointer -O1)
target_compile_definitions(lag_churn PRIVATE _GNU_SOURCE)
target_link_libraries(lag_churn PRIVATE stacksnap_static ${CMAKE_DL_LIBS})
# Cross builds run the children under the emulator (qemu-user).
string(JOIN " " SNAP_RUN_WITH ${CMAKE_CROSSCOMPILING_EMULATOR})
add_test(NAME test_lag_kills
  COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/lag/kill_storm.py
          $<TARGET_FILE:lag_churn> 200 --run-with "${SNAP_RUN_WITH}")
set_tests_properties(test_lag_kills PROPERTIES TIMEOUT 600
                     RESOURCE_LOCK lag_processes)

# Issue 13: where the time went. Four lags of known kinds (compute, lock,
# sleep, a compute lag starved of CPU), each report's time split against
# the main thread's own getrusage and schedstat (lag_split.py). Linux:
# CPU affinity, /proc.
if(SNAP_PLATFORM STREQUAL "linux")
  add_executable(lag_split lag/lag_split.c)
  target_compile_options(lag_split PRIVATE -fno-omit-frame-pointer -O1)
  target_compile_definitions(lag_split PRIVATE _GNU_SOURCE)
  target_link_libraries(lag_split PRIVATE stacksnap_static ${CMAKE_DL_LIBS})
  set(snap_split_tsan "")
  if(SNAP_SANITIZE STREQUAL "thread")
    set(snap_split_tsan --tsan)
  endif()
  add_test(NAME test_lag_split
    COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/lag/lag_split.py
            $<TARGET_FILE:lag_split> ${PROJECT_SOURCE_DIR}/scripts/lag-report.py
            --run-with "${SNAP_RUN_WITH}" ${snap_split_tsan})
  set_tests_properties(test_lag_split PROPERTIES TIMEOUT 300
                       RESOURCE_LOCK lag_processes)
endif()
# Issue 13 (item 5): a start makes hang_killed only of a gone process's
# report (a live one's is left alone; a zombie is gone). Linux: the test
# reads the start token's oracle from /proc.
if(SNAP_PLATFORM STREQUAL "linux")
  add_executable(lag_holder lag/lag_holder.c)
  target_compile_definitions(lag_holder PRIVATE _GNU_SOURCE)
  target_link_libraries(lag_holder PRIVATE stacksnap_static ${CMAKE_DL_LIBS})
  add_test(NAME test_lag_liveness
    COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/lag/liveness.py
            $<TARGET_FILE:lag_holder> --run-with "${SNAP_RUN_WITH}")
  set_tests_properties(test_lag_liveness PROPERTIES TIMEOUT 600
                       RESOURCE_LOCK lag_processes)
endif()

# The demo's scenarios (demo/lag), each checked for exactly its reports.
# nm of the target's binutils is the oracle for function sizes.
# Linux: the demo (GLib, or its poll loop) and nm -S, which Apple's nm lacks.
if(SNAP_BUILD_DEMO AND SNAP_PLATFORM STREQUAL "linux")
  if(CMAKE_CROSSCOMPILING)
    find_program(SNAP_NM NAMES ${CMAKE_SYSTEM_PROCESSOR}-linux-gnu-nm REQUIRED)
  else()
    find_program(SNAP_NM NAMES nm REQUIRED)
  endif()
  set(snap_scenarios_tsan "")
  if(SNAP_SANITIZE STREQUAL "thread")
    set(snap_scenarios_tsan --tsan)
  endif()
  add_test(NAME test_lag_scenarios
    COMMAND ${SNAP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/lag/scenarios.py
            $<TARGET_FILE:stacksnap_lag_demo> --run-with "${SNAP_RUN_WITH}"
            --nm ${SNAP_NM} ${snap_scenarios_tsan})
  # Not beside the kill storm: CPU shares and timings would be the other
  # test's as much as the demo's.
  set_tests_properties(test_lag_scenarios PROPERTIES TIMEOUT 600
                       RESOURCE_LOCK lag_processes)
else()
  message(STATUS "stacksnap: test_lag_scenarios needs the demo (SNAP_BUILD_DEMO)")
endif()

# The lag tests, for `scripts/test.sh --under-load` (ctest -L lag), which
# runs them while busy loops hold every core: lags happen on loaded
# devices, and every lag test must hold there too (issue 13).
foreach(t test_lag_config test_annealing test_lag_starved test_lag_stopped
          test_lag_end test_lag_slow_disk test_lag_ours test_lag_state
          test_lag_report_script
          test_lag_split test_lag_split_own test_lag_grouping
          test_lag_final_write test_lag_liveness test_lag_kills
          test_lag_scenarios test_wait_chain test_lag_locks
          test_lag_tid_reuse)
  if(TEST ${t})
    set_property(TEST ${t} APPEND PROPERTY LABELS lag)
  endif()
endforeach()
