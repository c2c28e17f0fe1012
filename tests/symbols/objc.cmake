# objc.cmake — Objective-C method names (test_objc_names, test_objc_absent)
# and demangling (test_demangle, test_demangle_swift_plumbing). Included
# from tests/CMakeLists.txt.

# ---- Demangling -------------------------------------------------------------
# The oracle is c++filt, run on the host at build time: Itanium C++ names
# are the same on every architecture we build for.
find_program(SNAP_CXXFILT NAMES c++filt REQUIRED)
set(demangle_header ${CMAKE_CURRENT_BINARY_DIR}/symbols/demangle_names.h)
add_custom_command(OUTPUT ${demangle_header}
  COMMAND ${CMAKE_COMMAND} -DNAMES=${CMAKE_CURRENT_SOURCE_DIR}/symbols/demangle_names.txt
          -DCXXFILT=${SNAP_CXXFILT} -DOUT=${demangle_header}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/symbols/demangle_gen.cmake
  DEPENDS symbols/demangle_names.txt symbols/demangle_gen.cmake
  COMMENT "c++filt: expected names for test_demangle")
# The project is C only, so nothing links libstdc++ here; the test checks
# at run time that neither it nor __cxa_demangle is present before the
# first call.
snap_test(test_demangle symbols/test_demangle.c)
target_sources(test_demangle PRIVATE ${demangle_header})
target_include_directories(test_demangle PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/symbols)
set_target_properties(test_demangle PROPERTIES ENABLE_EXPORTS ON)
# Exports its own swift_demangle stand-in (a plumbing check, not Swift).
snap_test(test_demangle_swift_plumbing symbols/demangle_swift_standin.c)
set_target_properties(test_demangle_swift_plumbing PROPERTIES ENABLE_EXPORTS ON)

# ---- Objective-C --------------------------------------------------------------
# The fixture is Objective-C for GCC's runtime (libobjc, GNU ABI), so gcc
# builds it whatever compiler builds the rest: clang's GNU-runtime ABI
# targets GNUstep's libobjc2, not GCC's. The test's C part and the link
# use the project's compiler. Native builds use the host gcc (Debian
# package gobjc); the arm64 cross builds use aarch64-linux-gnu-gcc, which
# is the project's compiler there (package gobjc-aarch64-linux-gnu, with
# libobjc-12-dev-arm64-cross).
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  set(SNAP_OBJC_GCC ${CMAKE_C_COMPILER})
elseif(NOT CMAKE_CROSSCOMPILING)
  find_program(SNAP_OBJC_GCC NAMES gcc gcc-12)
endif()
set(objc_ok FALSE)
if(SNAP_OBJC_GCC)
  execute_process(COMMAND ${SNAP_OBJC_GCC} -print-file-name=libobjc.so
    OUTPUT_VARIABLE SNAP_LIBOBJC OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${SNAP_OBJC_GCC} -x objective-c -E -
    INPUT_FILE ${CMAKE_CURRENT_SOURCE_DIR}/symbols/objc_fixture.h
    RESULT_VARIABLE objc_rc OUTPUT_QUIET ERROR_QUIET)
  if(objc_rc EQUAL 0 AND IS_ABSOLUTE "${SNAP_LIBOBJC}" AND EXISTS "${SNAP_LIBOBJC}")
    set(objc_ok TRUE)
  endif()
endif()

if(NOT objc_ok)
  message(WARNING "stacksnap: no gcc with Objective-C support and libobjc "
    "(Debian: gobjc, or gobjc-aarch64-linux-gnu for arm64 cross builds); "
    "test_objc_names and test_objc_absent are not built")
  return()
endif()

# Sanitizers are left out of the gcc-built objects: gcc's ASan/TSan
# runtimes cannot share a process with clang's, which the clang-linked
# executable carries. The C part of the test and the library stay
# instrumented; libobjc never is. CMAKE_C_FLAGS carries the arm64-pac
# -mbranch-protection, which these objects must share.
separate_arguments(objc_extra_flags UNIX_COMMAND "${CMAKE_C_FLAGS}")
set(objc_flags -O1 -g -fno-omit-frame-pointer -fasynchronous-unwind-tables
    -fPIC -Wall -Wextra -Werror ${objc_extra_flags})
set(objc_fixture_obj ${CMAKE_CURRENT_BINARY_DIR}/symbols/objc_fixture.o)
add_custom_command(OUTPUT ${objc_fixture_obj}
  COMMAND ${SNAP_OBJC_GCC} ${objc_flags} -c ${CMAKE_CURRENT_SOURCE_DIR}/symbols/objc_fixture.m
          -o ${objc_fixture_obj}
  DEPENDS symbols/objc_fixture.m symbols/objc_fixture.h
  COMMENT "gcc: Objective-C fixture for test_objc_names")
set(objc_plugin ${CMAKE_CURRENT_BINARY_DIR}/symbols/objc_plugin.so)
add_custom_command(OUTPUT ${objc_plugin}
  COMMAND ${SNAP_OBJC_GCC} ${objc_flags} -shared
          ${CMAKE_CURRENT_SOURCE_DIR}/symbols/objc_plugin.m -o ${objc_plugin} -lobjc
  DEPENDS symbols/objc_plugin.m symbols/objc_fixture.h
  COMMENT "gcc: Objective-C plug-in for test_objc_names")
add_custom_target(snap_objc_plugin DEPENDS ${objc_plugin})

snap_test(test_objc_names symbols/test_objc_names.c)
target_sources(test_objc_names PRIVATE ${objc_fixture_obj})
target_link_libraries(test_objc_names PRIVATE ${SNAP_LIBOBJC})
add_dependencies(test_objc_names snap_objc_plugin)
set(objc_nm_before ${CMAKE_CURRENT_BINARY_DIR}/symbols/test_objc_names.unstripped.nm)
set(objc_nm_after ${CMAKE_CURRENT_BINARY_DIR}/symbols/test_objc_names.stripped.nm)
target_compile_definitions(test_objc_names PRIVATE
  OBJC_PLUGIN_PATH="${objc_plugin}"
  OBJC_NM_UNSTRIPPED="${objc_nm_before}" OBJC_NM_STRIPPED="${objc_nm_after}")
# Stripped after every link: .symtab goes, so the methods have no names
# but the runtime's. nm's listings before and after are the test's proof.
add_custom_command(TARGET test_objc_names POST_BUILD
  COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DSTRIP=${CMAKE_STRIP}
          -DFILE=$<TARGET_FILE:test_objc_names>
          -DBEFORE=${objc_nm_before} -DAFTER=${objc_nm_after}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/symbols/objc_strip.cmake
  COMMENT "strip: test_objc_names")

# A C program without the runtime, then with it dlopen'ed.
snap_test(test_objc_absent symbols/objc_absent.c)
target_compile_definitions(test_objc_absent PRIVATE OBJC_RUNTIME_SONAME="libobjc.so.4")

# Under ASan: see objc_lsan.supp. Harmless in the other configurations.
set_tests_properties(test_objc_names test_objc_absent PROPERTIES ENVIRONMENT
  "ASAN_OPTIONS=fast_unwind_on_malloc=0;LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/symbols/objc_lsan.supp")
