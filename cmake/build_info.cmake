# The build's provenance (harness/provenance.h): the commit the sources were built from,
# whether the tree differed from it, and a SHA-256 of that difference, so a result file names
# exactly the code that produced it.
#   Differences counted: tracked changes and untracked (not ignored) files among the sources
#   (core, strategies, harness, tests, cmake, scripts, configs, presets, the CMake files); a
#   result file or an edit of README.md is not code.
# Run at every build (-DOUT=<file>: writes the generated C++ source, only when its text
# changes, so nothing relinks otherwise), and by walbench at run time (-DFORMAT=json: prints
# {"git_sha", "git_dirty", "git_diff_hash"} to compare the source tree with the binary).
# Inputs: -DSRC=<source dir> [-DBASE=<commit>] [-DOUT=<file> -DBUILD_TYPE=... -DCOMPILER=... -DFLAGS=...
#         -DCMAKE_BIN=<this cmake, for walbench to run this script again>]
#         [-DFORMAT=json]
set(sha "unknown")
set(dirty "false")
set(diff_hash "")
set(git git -c core.quotePath=false)
set(sources core strategies harness tests cmake scripts configs presets CMakeLists.txt
            CMakePresets.json)
# With -DBASE=<commit> (walbench at run time: the commit the binary was built from) the
# difference is taken against BASE, so that the hash equals the build's exactly when the
# sources are the same, whatever commits of other files (results, README) came since.
execute_process(COMMAND ${git} rev-parse HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE rc)
if(NOT BASE)
  set(BASE HEAD)
endif()
if(rc EQUAL 0 AND head)
  set(sha "${head}")
  execute_process(COMMAND ${git} diff ${BASE} --binary --no-ext-diff --no-textconv --no-color
                          -- ${sources}
                  WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE diff ERROR_QUIET)
  execute_process(COMMAND ${git} ls-files --others --exclude-standard -- ${sources}
                  WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE untracked ERROR_QUIET)
  string(REPLACE "\n" ";" untracked "${untracked}")
  foreach(f IN LISTS untracked)
    if(f AND EXISTS "${SRC}/${f}" AND NOT IS_DIRECTORY "${SRC}/${f}")
      file(SHA256 "${SRC}/${f}" h)
      string(APPEND diff "untracked ${f} ${h}\n")
    endif()
  endforeach()
  if(NOT diff STREQUAL "")
    set(dirty "true")
    string(SHA256 diff_hash "${diff}")
  endif()
endif()

if(FORMAT STREQUAL "json")
  execute_process(COMMAND ${CMAKE_COMMAND} -E echo
                  "{\"git_sha\": \"${sha}\", \"git_dirty\": ${dirty}, \"git_diff_hash\": \"${diff_hash}\"}")
  return()
endif()

string(REPLACE "\\" "\\\\" FLAGS "${FLAGS}")
string(REPLACE "\"" "\\\"" FLAGS "${FLAGS}")
set(text "// Generated at build time by cmake/build_info.cmake; do not edit.
#include \"harness/provenance.h\"
namespace walbench {
const BuildInfo& build_info() {
  static const BuildInfo info{\"${sha}\", ${dirty}, \"${diff_hash}\", \"${BUILD_TYPE}\",
                              \"${COMPILER}\", \"${FLAGS}\", \"${SRC}\", \"${CMAKE_BIN}\"};
  return info;
}
}  // namespace walbench
")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
