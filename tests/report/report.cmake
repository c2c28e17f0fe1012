# The library's files (src/report/; issue 24, items 1-5): whoever can write
# the report directory cannot make the library write through a link, hang
# on a FIFO, read a report it should not, delete a name it never writes,
# or replace a FIFO, link or device with snap_trace_write; what it writes
# is the owner's alone unless configured. docs/security.md.
# The grammar of our names and the modes a config may choose.
snap_test(test_report_names report/test_report_names.c)
# The one decimal formatter (src/decimal.c, issue 27) against printf.
snap_test(test_decimal report/test_decimal.c)
snap_test(test_report_fifo report/test_report_fifo.c)
# Skipped (77) where it cannot spawn itself again (qemu-user).
set_tests_properties(test_report_fifo PROPERTIES SKIP_RETURN_CODE 77)
snap_test(test_report_modes report/test_report_modes.c)
snap_test(test_report_retention report/test_report_retention.c)
snap_test(test_report_trace_targets report/test_report_trace_targets.c)
# The same binary on a device node it makes with mknod (needs CAP_MKNOD,
# else skipped): never the system's /dev/null.
add_test(NAME test_report_trace_device
  COMMAND test_report_trace_targets device)
set_tests_properties(test_report_trace_device PROPERTIES TIMEOUT 120
  SKIP_RETURN_CODE 77)
set_tests_properties(test_report_fifo test_report_modes test_report_retention
  PROPERTIES RESOURCE_LOCK lag_processes)
# The racer's view of the directory comes from inotify (Linux).
if(SNAP_PLATFORM STREQUAL "linux")
  snap_test(test_report_links report/test_report_links.c)
  set_tests_properties(test_report_links PROPERTIES RESOURCE_LOCK lag_processes)
endif()
# One writer: no file outside src/report/ (and the platform under it) calls
# the file primitives of platform.h, so every file the library writes
# gets the same care.
add_test(NAME arrows_files_through_report
  COMMAND sh -c "! grep -rnE 'snap__plat_(file_[a-z_]+|dir_[a-z]+|path_kind|random)[[:space:]]*\\(' '${PROJECT_SOURCE_DIR}/src' | grep -vE '^${PROJECT_SOURCE_DIR}/src/(report|platform)/'")
