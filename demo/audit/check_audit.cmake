# demo_audit: runs audit_target under libstacksnap_audit.so and checks the
# report: exactly 3 distinct call sites, with counts 2, 1 and 1, whose
# innermost frames are named for the program's own functions that made the
# calls — names checked against nm's listing of the program (NM_FILE,
# written at build time), an oracle outside stacksnap.
#
# cmake -DTARGET=... -DPRELOAD=... -DNM_FILE=... -DWORK_DIR=... -P this

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/private)
set(data ${WORK_DIR}/private/settings.conf)
file(WRITE ${data} "colour=blue\n")
set(report ${WORK_DIR}/report.txt)

# STACKSNAP_AUDIT_APP: the program alone is the app (by default its whole
# directory would be, and the preload is built into the same one, so the
# hook's own frames would count as app frames).
# ASAN_OPTIONS: a preload is never first in the library list, which
# AddressSanitizer checks for; harmless elsewhere.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env
    LD_PRELOAD=${PRELOAD}
    STACKSNAP_AUDIT_PREFIX=${WORK_DIR}/private/
    STACKSNAP_AUDIT_OUT=${report}
    STACKSNAP_AUDIT_JSON=${WORK_DIR}/report.json
    STACKSNAP_AUDIT_APP=${TARGET}
    ASAN_OPTIONS=verify_asan_link_order=0
    ${TARGET} ${data}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "audit_target failed under the preload: ${rc}")
endif()
if(NOT EXISTS ${report})
  message(FATAL_ERROR "no report written to ${report}")
endif()
file(READ ${report} text)
file(READ ${NM_FILE} nm)
message(STATUS "report:\n${text}")

# Sites: a header line "<function> x<count>  <argument>  (<api>; ...)",
# then its frames, each "    <index>   <image>   0x<pc> <symbol> + <off>".
string(REPLACE ";" "," text_nosemi "${text}") # ';' separates CMake lists
string(REPLACE "\n" ";" lines "${text_nosemi}")
set(sites 0)
set(counts "")
set(expect_next FALSE)
foreach(line IN LISTS lines)
  if(line MATCHES "^([a-z0-9]+) x([0-9]+)  ")
    math(EXPR sites "${sites} + 1")
    set(fn ${CMAKE_MATCH_1})
    set(count ${CMAKE_MATCH_2})
    set(expect_next TRUE)
  elseif(expect_next)
    if(NOT line MATCHES " 0x[0-9a-f]+ ([^ ]+) \\+ [0-9]+$")
      message(FATAL_ERROR "site ${fn}: a frame has no name: '${line}'")
    endif()
    set(sym ${CMAKE_MATCH_1})
    # Under a sanitizer its runtime is linked into the program, and its
    # interceptor of the hooked function sits between the program's
    # function and the preload: skip those frames.
    if(sym MATCHES "^_*(interceptor_|asan_|tsan_|sanitizer_|ubsan_)")
      continue()
    endif()
    set(expect_next FALSE)
    # The oracle: a function symbol of the program itself.
    if(NOT nm MATCHES "[0-9a-f]+ [Tt] ${sym}\n")
      message(FATAL_ERROR "site ${fn}: '${sym}' is not a function nm lists "
                          "in the program")
    endif()
    if(fn MATCHES "^open" AND count EQUAL 2 AND sym STREQUAL "audit_read_settings")
      list(APPEND counts settings2)
    elseif(fn STREQUAL "fopen" AND count EQUAL 1 AND sym STREQUAL "audit_read_profile")
      list(APPEND counts profile1)
    elseif(fn STREQUAL "getaddrinfo" AND count EQUAL 1 AND sym STREQUAL "audit_resolve_server")
      list(APPEND counts resolve1)
    else()
      message(FATAL_ERROR "unexpected site: ${fn} x${count} in ${sym}")
    endif()
  endif()
endforeach()
list(SORT counts)
if(NOT sites EQUAL 3 OR NOT counts STREQUAL "profile1;resolve1;settings2")
  message(FATAL_ERROR "expected 3 sites (open x2 in audit_read_settings, "
                      "fopen x1 in audit_read_profile, getaddrinfo x1 in "
                      "audit_resolve_server); got ${sites}: ${counts}")
endif()
message(STATUS "demo_audit: 3 sites, counts 2, 1, 1, names match nm")

# Issue 15: the report lists its images with build ids (readelf -n is the
# oracle), and its JSON form is named by stacksnap-symbolicate like a lag
# report: the sites' innermost frames come out named for the program's
# functions, from the program's file (same build id).
execute_process(COMMAND ${READELF} -n ${TARGET} OUTPUT_VARIABLE notes)
if(NOT notes MATCHES "Build ID: ([0-9a-f]+)")
  message(FATAL_ERROR "readelf -n ${TARGET}: no build id")
endif()
set(id ${CMAKE_MATCH_1})
if(NOT text MATCHES "<${id}> ${TARGET}")
  message(FATAL_ERROR "the report's images do not list ${TARGET} with build id ${id}")
endif()
execute_process(
  COMMAND ${TOOL} --no-default-dirs -o ${WORK_DIR}/named.json ${WORK_DIR}/report.json
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "stacksnap-symbolicate on the audit's JSON: ${rc}: ${err}")
endif()
file(READ ${WORK_DIR}/named.json named)
foreach(fn audit_read_settings audit_read_profile audit_resolve_server)
  if(NOT named MATCHES "\"symbol\": \"${fn}\"")
    message(FATAL_ERROR "the named JSON lacks ${fn}: ${named}")
  endif()
endforeach()
message(STATUS "demo_audit: images with build ids; its JSON named by stacksnap-symbolicate")
