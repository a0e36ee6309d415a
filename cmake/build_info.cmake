# Writes the build's provenance (harness/provenance.h) into OUT, at build time, every build:
# the commit the sources were built from, whether the tree differed from it (tracked changes,
# or untracked files outside results/), and a SHA-256 of that difference, so a result file
# names exactly the code that produced it. OUT is rewritten only when its text changes (no
# relink otherwise).
# Inputs: -DSRC=<source dir> -DOUT=<file> -DBUILD_TYPE=... -DCOMPILER=... -DFLAGS=...
set(sha "unknown")
set(dirty "false")
set(diff_hash "")
execute_process(COMMAND git rev-parse HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE rc)
if(rc EQUAL 0 AND head)
  set(sha "${head}")
  execute_process(COMMAND git status --porcelain WORKING_DIRECTORY ${SRC}
                  OUTPUT_VARIABLE status ERROR_QUIET)
  string(REGEX REPLACE "[^\n]*results/[^\n]*\n?" "" status "${status}")
  if(NOT status STREQUAL "")
    set(dirty "true")
    execute_process(COMMAND git diff HEAD --binary -- . ":(exclude)results" WORKING_DIRECTORY ${SRC}
                    OUTPUT_VARIABLE diff ERROR_QUIET)
    execute_process(COMMAND git ls-files --others --exclude-standard -- . ":(exclude)results"
                    WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE untracked ERROR_QUIET)
    string(REPLACE "\n" ";" untracked "${untracked}")
    foreach(f IN LISTS untracked)
      if(f AND EXISTS "${SRC}/${f}" AND NOT IS_DIRECTORY "${SRC}/${f}")
        file(SHA256 "${SRC}/${f}" h)
        string(APPEND diff "untracked ${f} ${h}\n")
      endif()
    endforeach()
    string(SHA256 diff_hash "${diff}")
  endif()
endif()
string(REPLACE "\\" "\\\\" FLAGS "${FLAGS}")
string(REPLACE "\"" "\\\"" FLAGS "${FLAGS}")
set(text "// Generated at build time by cmake/build_info.cmake; do not edit.
#include \"harness/provenance.h\"
namespace walbench {
const BuildInfo& build_info() {
  static const BuildInfo info{\"${sha}\", ${dirty}, \"${diff_hash}\", \"${BUILD_TYPE}\",
                              \"${COMPILER}\", \"${FLAGS}\", \"${SRC}\"};
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
