# The lag watchdog (src/lag/): configuration and report directory in C;
# scenarios, kills and hang_killed through real processes, with reports
# read by python3's json module (an independent parser). Included from the
# part of tests/ that runs on Linux and macOS.
snap_test(test_lag_config lag/test_lag_config.c)

# Python 3 reads every report: an independent parser.
find_program(SNAP_PYTHON3 NAMES python3 REQUIRED)

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
set_tests_properties(test_lag_kills PROPERTIES TIMEOUT 600)
