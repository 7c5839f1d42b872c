# ctest mcp.unused_coroutines (g++ only): a server-only translation unit that uses nothing compiles no coroutine of
# ours. g++ emits every inline non-template coroutine at -O0 (its actor and destroy clones, and every template
# they instantiate), used or not: the MCP wing's coroutines are in class or function templates
# (basic_mcp_session, ...), which a translation unit that does not use them never instantiates. Compiles
# server_stdio_only.cpp and server_http_only.cpp with `${CXX} -O0 -c` and lists, with `nm -C`, the coroutine
# actors (`[clone .actor]`) in namespace tool_effects. The control, coroutine_control.cpp, holds one such
# coroutine: the check must find it, or it could not see what it is meant to catch.
# Usage: cmake -DCXX=<g++> -DNM=<nm> -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch> -P coroutines.cmake
cmake_minimum_required(VERSION 3.25)
foreach(_v CXX NM SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "coroutines.cmake: -D${_v}=... is required")
  endif()
endforeach()
set(_dir "${SOURCE_DIR}/test/mcp/include_split")
file(MAKE_DIRECTORY "${WORK_DIR}")
# What is known and allowed: the approver's ask (impl/confirmation.ipp), a coroutine of the core that every
# dispatcher includes.
set(_allowed "tool_effects::approver::ask_async")
set(_failed FALSE)

function(_actors tu out_var)
  set(_obj "${WORK_DIR}/${tu}.o")
  execute_process(COMMAND "${CXX}" -std=c++20 -O0 -g0 -c -o "${_obj}" "-I${SOURCE_DIR}/include" "${_dir}/${tu}"
                  RESULT_VARIABLE _rc ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${tu} does not compile (${_rc}):\n${_err}")
  endif()
  # The symbols filtered by grep (a regex over a 20 MB object's symbol list takes CMake minutes).
  execute_process(COMMAND "${NM}" -C --defined-only "${_obj}" COMMAND grep -F "[clone .actor]"
                  RESULTS_VARIABLE _rcs OUTPUT_VARIABLE _syms ERROR_VARIABLE _err)
  list(GET _rcs 0 _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "nm ${_obj} failed (${_rc}):\n${_err}")
  endif()
  string(REGEX MATCHALL "[^\n]*tool_effects::[^\n]*" _lines "${_syms}")
  set(_names "")
  foreach(_l IN LISTS _lines)
    string(REGEX REPLACE "^[0-9a-fA-F]+ [A-Za-z] " "" _l "${_l}")
    string(REGEX REPLACE "\\(.*" "" _l "${_l}")
    string(REGEX REPLACE "\\[abi:[a-z0-9]+\\]" "" _l "${_l}")
    if(NOT _l IN_LIST _allowed)
      list(APPEND _names "${_l}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES _names)
  set(${out_var} "${_names}" PARENT_SCOPE)
  file(REMOVE "${_obj}")
endfunction()

_actors(coroutine_control.cpp _control)
if(NOT "tool_effects::detail::include_split_control_coroutine" IN_LIST _control)
  message(FATAL_ERROR "coroutine_control.cpp: its unused coroutine was not found (found: ${_control}); the check "
                      "cannot see what g++ emits")
endif()
message(STATUS "coroutine_control.cpp: the unused coroutine is emitted and found, as expected")

foreach(_tu IN ITEMS server_stdio_only.cpp server_http_only.cpp)
  _actors(${_tu} _found)
  list(LENGTH _found _n)
  if(_n GREATER 0)
    list(JOIN _found ", " _text)
    message(SEND_ERROR "${_tu}: compiles ${_n} coroutine(s) it does not use: ${_text}")
    set(_failed TRUE)
  else()
    message(STATUS "${_tu}: no coroutine of ours compiled, as expected")
  endif()
endforeach()

if(_failed)
  message(FATAL_ERROR "mcp.unused_coroutines: a server-only translation unit compiles coroutines it does not use")
endif()
