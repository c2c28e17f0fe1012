# darwin_cross_rules.cmake — rule overrides for the cross toolchains
# (darwin_cross.cmake): read by CMake after its Darwin platform files.
set(CMAKE_C_ARCHIVE_FINISH "<CMAKE_RANLIB> <TARGET>")
# Darwin.cmake enables rpaths only after asking the host's sw_vers for the
# macOS version; a Linux host has none. Every supported target has rpaths.
set(CMAKE_SHARED_LIBRARY_RUNTIME_C_FLAG "-Wl,-rpath,")
