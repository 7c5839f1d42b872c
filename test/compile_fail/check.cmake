# Compile-fail harness of tool_effects: proves that a piece of code is REJECTED by the compiler, for the
# reason stated in the case file.
#
# Run by ctest (test/CMakeLists.txt registers every test/compile_fail/*.cpp as compile_fail.<stem>):
#   cmake -DCASE=<case.cpp> -DCONFIG=<build>/test/compile_fail/config.cmake -P check.cmake
# CONFIG is generated at configure time and sets TE_CXX (the build's CMAKE_CXX_COMPILER), TE_COMPILER
# ("gcc" or "clang"), TE_COMPILER_MAJOR (e.g. 19) and TE_FLAGS (CMAKE_CXX_FLAGS, -std=c++20 or the build's standard, -Wall -Wextra -Wpedantic -Werror, -I<repo>/include,
# -isystem for Boost/nlohmann_json when they are not in a default include dir).
#
# Protocol of a case file
#   * Expectations are whole-line comments, anywhere in the file:
#       // expected-error: <regex>          applies to every compiler
#       // expected-error(gcc): <regex>     only when compiling with g++
#       // expected-error(clang): <regex>   only when compiling with clang++
#       // expected-error(clang19): <regex> only with clang++ 19, replacing the (clang) lines there
#     <regex> is a CMake regular expression (ERE-like: . * + ? | () [] ^ $; no \d, \s, {n}, no lazy
#     quantifiers), matched case-sensitively, leading/trailing blanks removed. Every line that starts with
#     "// expected-error" must have this form; any other compiler tag is an error.
#   * Every expectation that applies to the current compiler must match the compiler's output (stdout and
#     stderr together, with each newline replaced by a space, so one regex may span an error and its notes).
#     The compiler runs with LC_ALL=C (plain ASCII quotes '...') and -fdiagnostics-color=never.
#   * At least one expectation must apply to the current compiler; a case that states nothing fails.
#   * Control build: the case is first compiled with -DTOOL_EFFECTS_COMPILE_FAIL_CONTROL and must compile
#     cleanly (warnings are errors). Guard the offending code with #ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL.
#     This proves the failure comes from the guarded code, not from a typo or a missing include.
#   * Then it is compiled without the macro and must fail, with every applicable regex matching.
#   The failing compile uses -fsyntax-only (templates are still instantiated, static_asserts and constraints
#   checked); the control is compiled to an object through TE_LAUNCHER (the build's ccache) when set, so that
#   it is cached.
#   On any failure the script prints the reason, the compiler command, its output and the regexes, and exits
#   non-zero. Cases whose file name starts with "json" are skipped when nlohmann_json is not found.
cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED CASE OR NOT DEFINED CONFIG)
  message(FATAL_ERROR "usage: cmake -DCASE=<case.cpp> -DCONFIG=<config.cmake> -P check.cmake")
endif()
if(NOT EXISTS "${CASE}")
  message(FATAL_ERROR "compile_fail: case file not found: ${CASE}")
endif()
include("${CONFIG}")
get_filename_component(_case_name "${CASE}" NAME)

# Prints the reason and `details` (one string, newlines kept) and exits non-zero.
function(_fail reason details)
  message("compile_fail: FAIL ${_case_name} [${reason}]\n${details}")
  message(FATAL_ERROR "compile_fail: ${_case_name}: ${reason}")
endfunction()

# --- read the expectations ------------------------------------------------
# Split the file into lines without CMake's list syntax getting in the way of ';', '[' or ']'.
file(READ "${CASE}" _text)
string(REPLACE "\r" "" _text "${_text}")
string(REPLACE ";" "@TE_SEMICOLON@" _text "${_text}")
string(REPLACE "[" "@TE_LBRACKET@" _text "${_text}")
string(REPLACE "]" "@TE_RBRACKET@" _text "${_text}")
string(REPLACE "\\" "@TE_BACKSLASH@" _text "${_text}")
string(REPLACE "\n" ";" _lines "${_text}")

# Applicable: the untagged lines, plus the lines tagged with this compiler's versioned name (e.g. "clang19")
# if the case has any, else those tagged with its family ("gcc", "clang"). So a "(clang19)" line replaces the
# "(clang)" lines for clang 19 only, where its wording really differs.
set(_versioned_tag "${TE_COMPILER}${TE_COMPILER_MAJOR}")
set(_n 0)
set(_lineno 0)
foreach(_kind IN ITEMS generic family versioned)
  set(_count_${_kind} 0)
endforeach()
foreach(_line IN LISTS _lines)
  math(EXPR _lineno "${_lineno} + 1")
  if(NOT _line MATCHES "^[ \t]*//[ \t]*expected-error")
    continue()
  endif()
  if(NOT _line MATCHES "^[ \t]*//[ \t]*expected-error(\\(([^)]*)\\))?:(.*)$")
    _fail("malformed expectation" "line ${_lineno}: expected '// expected-error[(gcc|clang|clangNN|gccNN)]: <regex>'")
  endif()
  set(_tag "${CMAKE_MATCH_2}")
  set(_re "${CMAKE_MATCH_3}")
  string(STRIP "${_re}" _re)
  string(REPLACE "@TE_SEMICOLON@" ";" _re "${_re}")
  string(REPLACE "@TE_LBRACKET@" "[" _re "${_re}")
  string(REPLACE "@TE_RBRACKET@" "]" _re "${_re}")
  string(REPLACE "@TE_BACKSLASH@" "\\" _re "${_re}")
  if(NOT _tag STREQUAL "" AND NOT _tag MATCHES "^(gcc|clang)([0-9]+)?$")
    _fail("unknown compiler tag"
          "line ${_lineno}: expected-error(${_tag}): only (gcc), (clang) and versioned ones like (clang19) are known")
  endif()
  if(_re STREQUAL "")
    _fail("empty regex" "line ${_lineno}")
  endif()
  if(_tag STREQUAL "")
    set(_kind generic)
  elseif(_tag STREQUAL TE_COMPILER)
    set(_kind family)
  elseif(_tag STREQUAL _versioned_tag)
    set(_kind versioned)
  else()
    continue()
  endif()
  math(EXPR _count_${_kind} "${_count_${_kind}} + 1")
  set(_re_${_kind}_${_count_${_kind}} "${_re}")
  set(_re_line_${_kind}_${_count_${_kind}} "${_lineno}")
endforeach()
set(_kinds generic versioned)
if(_count_versioned EQUAL 0)
  set(_kinds generic family)
endif()
foreach(_kind IN LISTS _kinds)
  if(_count_${_kind} EQUAL 0)
    continue()
  endif()
  foreach(_i RANGE 1 ${_count_${_kind}})
    math(EXPR _n "${_n} + 1")
    set(_re_${_n} "${_re_${_kind}_${_i}}")
    set(_re_line_${_n} "${_re_line_${_kind}_${_i}}")
  endforeach()
endforeach()
if(_n EQUAL 0)
  _fail("no expectation" "the case has no '// expected-error:' line that applies to ${TE_COMPILER}")
endif()

# --- compile ----------------------------------------------------------------
set(ENV{LC_ALL} C)
set(ENV{LANG} C)
set(ENV{LANGUAGE} "")
set(_cmd "${TE_CXX}" ${TE_FLAGS} -fsyntax-only -fdiagnostics-color=never)

function(_compile out_rc out_text)
  execute_process(COMMAND ${_cmd} ${ARGN} "${CASE}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out
                  TIMEOUT 240)
  set(${out_rc} "${_rc}" PARENT_SCOPE)
  set(${out_text} "${_out}" PARENT_SCOPE)
endfunction()

list(JOIN _cmd " " _cmd_text)

# 1. control build: must compile. Through the build's compiler cache when it has one (TE_LAUNCHER), as an object
# file (a cache keeps objects, not -fsyntax-only runs): a control that compiled once is not compiled again.
if(TE_LAUNCHER)
  set(_control_cmd ${TE_LAUNCHER} "${TE_CXX}" ${TE_FLAGS} -fdiagnostics-color=never -c -o
                   "${CMAKE_CURRENT_BINARY_DIR}/${_case_name}.control.o")
  execute_process(COMMAND ${_control_cmd} -DTOOL_EFFECTS_COMPILE_FAIL_CONTROL "${CASE}" RESULT_VARIABLE _rc
                  OUTPUT_VARIABLE _out ERROR_VARIABLE _out TIMEOUT 240)
  file(REMOVE "${CMAKE_CURRENT_BINARY_DIR}/${_case_name}.control.o")
else()
  _compile(_rc _out -DTOOL_EFFECTS_COMPILE_FAIL_CONTROL)
endif()
if(NOT _rc EQUAL 0)
  _fail("control build failed"
        "The case must compile with -DTOOL_EFFECTS_COMPILE_FAIL_CONTROL (guard the bad code with
#ifndef TOOL_EFFECTS_COMPILE_FAIL_CONTROL). Command:
  ${_cmd_text} -DTOOL_EFFECTS_COMPILE_FAIL_CONTROL ${CASE}
Exit: ${_rc}. Compiler output:
${_out}")
endif()

# 2. the real build: must fail, and every applicable regex must match. A compiler cache keeps only what compiled,
# so the harness keeps the result of a compile that failed itself, where the build compiles through one
# (TE_LAUNCHER; off with TOOL_EFFECTS_COMPILE_FAIL_CACHE=OFF): in ${CCACHE_DIR}-results (or
# ~/.cache/tool_effects-ccache-results), keyed by the SHA-256 of the compiler's --version, the flags and the case
# preprocessed with its line markers (the source tree's path replaced, so that a clone elsewhere hits). A hit
# gives the exit code and the output the same input gave the same compiler, and the expectations are matched
# against it as below.
set(_cache_dir "")
if(TE_LAUNCHER AND NOT "$ENV{TOOL_EFFECTS_COMPILE_FAIL_CACHE}" MATCHES "^(OFF|0|NO|FALSE)$")
  if(DEFINED ENV{CCACHE_DIR} AND NOT "$ENV{CCACHE_DIR}" STREQUAL "")
    set(_cache_dir "$ENV{CCACHE_DIR}-results")
  elseif(DEFINED ENV{HOME})
    set(_cache_dir "$ENV{HOME}/.cache/tool_effects-ccache-results")
  endif()
endif()
set(_key "")
if(_cache_dir)
  execute_process(COMMAND "${TE_CXX}" --version OUTPUT_VARIABLE _version ERROR_QUIET)
  execute_process(COMMAND "${TE_CXX}" ${TE_FLAGS} -E "${CASE}" RESULT_VARIABLE _pp_rc OUTPUT_VARIABLE _pp
                  ERROR_QUIET TIMEOUT 120)
  if(_pp_rc EQUAL 0)
    string(REPLACE "${TE_SOURCE_DIR}" "@TE_SOURCE_DIR@" _pp "${_pp}")
    string(REPLACE "${TE_SOURCE_DIR}" "@TE_SOURCE_DIR@" _flags_text "${_cmd_text}")
    string(SHA256 _key "${_version}\n${_flags_text}\n${_pp}")
    unset(_pp)
  endif()
endif()
if(_key AND EXISTS "${_cache_dir}/${_key}.rc" AND EXISTS "${_cache_dir}/${_key}.out")
  file(READ "${_cache_dir}/${_key}.rc" _rc)
  file(READ "${_cache_dir}/${_key}.out" _out)
  string(REPLACE "@TE_SOURCE_DIR@" "${TE_SOURCE_DIR}" _out "${_out}")
  message("compile_fail: the failing compile's result comes from ${_cache_dir}/${_key}")
else()
  _compile(_rc _out)
  if(_key AND _rc MATCHES "^[1-9][0-9]*$")
    file(MAKE_DIRECTORY "${_cache_dir}")
    string(REPLACE "${TE_SOURCE_DIR}" "@TE_SOURCE_DIR@" _stored "${_out}")
    string(RANDOM LENGTH 12 _tmp)
    file(WRITE "${_cache_dir}/${_key}.out.${_tmp}" "${_stored}")
    file(RENAME "${_cache_dir}/${_key}.out.${_tmp}" "${_cache_dir}/${_key}.out")
    file(WRITE "${_cache_dir}/${_key}.rc.${_tmp}" "${_rc}")
    file(RENAME "${_cache_dir}/${_key}.rc.${_tmp}" "${_cache_dir}/${_key}.rc")
  endif()
endif()
string(REPLACE "\r" "" _flat "${_out}")
string(REPLACE "\n" " " _flat "${_flat}")
set(_report "")
set(_mismatches 0)
foreach(_i RANGE 1 ${_n})
  if(_rc EQUAL 0)
    string(APPEND _report "  expected  line ${_re_line_${_i}}: ${_re_${_i}}\n")
  elseif(_flat MATCHES "${_re_${_i}}")
    string(APPEND _report "  matched   line ${_re_line_${_i}}: ${_re_${_i}}\n")
  else()
    string(APPEND _report "  NO MATCH  line ${_re_line_${_i}}: ${_re_${_i}}\n")
    math(EXPR _mismatches "${_mismatches} + 1")
  endif()
endforeach()
if(_rc EQUAL 0)
  _fail("compiled" "The case compiled, but it must not. Command:
  ${_cmd_text} ${CASE}
Expectations (${TE_COMPILER}):
${_report}Compiler output:
${_out}")
endif()
if(NOT _rc MATCHES "^[0-9]+$")
  _fail("compiler did not run" "  ${_cmd_text} ${CASE}\nResult: ${_rc}\n${_out}")
endif()
if(_mismatches GREATER 0)
  _fail("diagnostic mismatch" "${_mismatches} of ${_n} expectation(s) for ${TE_COMPILER} did not match. Command:
  ${_cmd_text} ${CASE}
Expectations (regexes are matched against the output with newlines replaced by spaces):
${_report}Compiler output:
${_out}")
endif()

message("compile_fail: PASS ${_case_name} (${TE_COMPILER}: control build compiled; ${_n} expectation(s) matched)")
