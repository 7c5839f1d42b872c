# Build settings of the project's own targets (tests, examples, benchmarks, fuzzers) — never of the
# exported interface targets. Included from the top-level CMakeLists.txt.
#
# Provides:
#   tool_effects_warnings      INTERFACE target: -Wall -Wextra -Wpedantic -Werror
#   tool_effects_sanitizers    INTERFACE target: the TOOL_EFFECTS_SANITIZER flags (compile and link)
#   tool_effects_project_target(<target> [NO_SANITIZERS])
#                              links the above plus tool_effects (and tool_effects::json, ::mcp when available)
#   tool_effects_add_exe_test(NAME <name> TARGET <target> [ARGS ...] [TIMEOUT s] [LABELS ...])
#                              add_test that runs <target> under the test launcher
#   TOOL_EFFECTS_LAUNCHER      the effective test launcher (a list, possibly empty)
include_guard(GLOBAL)

# --- warnings --------------------------------------------------------------
add_library(tool_effects_warnings INTERFACE)
target_compile_options(tool_effects_warnings INTERFACE -Wall -Wextra -Wpedantic -Werror)
set(TOOL_EFFECTS_WARNING_FLAGS -Wall -Wextra -Wpedantic -Werror)

# --- sanitizers ------------------------------------------------------------
add_library(tool_effects_sanitizers INTERFACE)
string(REPLACE "," ";" _te_sanitizers "${TOOL_EFFECTS_SANITIZER}")
list(TRANSFORM _te_sanitizers STRIP)
list(REMOVE_ITEM _te_sanitizers "")
list(REMOVE_DUPLICATES _te_sanitizers)
set(TOOL_EFFECTS_SANITIZERS "${_te_sanitizers}")
if(TOOL_EFFECTS_SANITIZERS)
  foreach(_san IN LISTS TOOL_EFFECTS_SANITIZERS)
    if(NOT _san MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "TOOL_EFFECTS_SANITIZER: unknown sanitizer '${_san}' (use thread, address, undefined, leak)")
    endif()
  endforeach()
  if("thread" IN_LIST TOOL_EFFECTS_SANITIZERS AND ("address" IN_LIST TOOL_EFFECTS_SANITIZERS
                                                    OR "leak" IN_LIST TOOL_EFFECTS_SANITIZERS))
    message(FATAL_ERROR "TOOL_EFFECTS_SANITIZER: thread cannot be combined with address/leak")
  endif()
  list(JOIN TOOL_EFFECTS_SANITIZERS "," _san_joined)
  set(_san_flags "-fsanitize=${_san_joined}" -fno-omit-frame-pointer)
  if("undefined" IN_LIST TOOL_EFFECTS_SANITIZERS)
    list(APPEND _san_flags -fno-sanitize-recover=all)  # any UB report fails the test
    if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      # clang 14 cannot compile C++20 coroutines (Asio awaitables) with the
      # `function` check of UBSan ("Cannot represent a difference across
      # sections", llvm/llvm-project#49689); every other UBSan check stays on.
      list(APPEND _san_flags -fno-sanitize=function)
    endif()
  endif()
  target_compile_options(tool_effects_sanitizers INTERFACE ${_san_flags})
  target_link_options(tool_effects_sanitizers INTERFACE ${_san_flags})
  list(JOIN _san_flags " " _san_text)
  message(STATUS "tool_effects: sanitizers for project targets: ${_san_text}")
endif()

# --- test launcher (TSan and ASLR) -----------------------------------------
# clang 14's TSan runtime aborts with "FATAL: ThreadSanitizer: unexpected memory mapping" on kernels whose
# mmap randomisation (vm.mmap_rnd_bits) is larger than it expects. Running with ASLR off (`setarch <arch> -R`)
# avoids it. With TOOL_EFFECTS_TEST_LAUNCHER=auto we build and run a tiny TSan program at configure time and,
# only if it fails plainly but passes under setarch -R, run every test (and gtest discovery) through setarch.
function(_tool_effects_probe_tsan out_var)
  set(_dir "${PROJECT_BINARY_DIR}/CMakeFiles/tool_effects_tsan_probe")
  file(WRITE "${_dir}/probe.cpp"
       "#include <thread>\nint counter;\nint main() {\n  std::thread t([] { counter = 1; });\n  t.join();\n"
       "  return counter == 1 ? 0 : 1;\n}\n")
  try_compile(_ok "${_dir}/build" SOURCES "${_dir}/probe.cpp"
              CMAKE_FLAGS -DCMAKE_CXX_STANDARD=20
              COMPILE_DEFINITIONS -fsanitize=thread
              LINK_OPTIONS -fsanitize=thread
              LINK_LIBRARIES Threads::Threads
              COPY_FILE "${_dir}/probe"
              OUTPUT_VARIABLE _out)
  if(NOT _ok)
    message(WARNING "tool_effects: cannot build a TSan program:\n${_out}")
    set(${out_var} "" PARENT_SCOPE)
    return()
  endif()
  execute_process(COMMAND "${_dir}/probe" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out TIMEOUT 60)
  if(_rc EQUAL 0)
    message(STATUS "tool_effects: TSan probe runs as is; no test launcher needed")
    set(${out_var} "" PARENT_SCOPE)
    return()
  endif()
  find_program(TOOL_EFFECTS_SETARCH setarch)
  if(TOOL_EFFECTS_SETARCH)
    set(_launcher "${TOOL_EFFECTS_SETARCH}" "${CMAKE_HOST_SYSTEM_PROCESSOR}" -R)
    execute_process(COMMAND ${_launcher} "${_dir}/probe" RESULT_VARIABLE _rc2 OUTPUT_VARIABLE _out2
                    ERROR_VARIABLE _out2 TIMEOUT 60)
    if(_rc2 EQUAL 0)
      message(STATUS "tool_effects: TSan needs ASLR off here; tests run through: ${_launcher}")
      set(${out_var} "${_launcher}" PARENT_SCOPE)
      return()
    endif()
  endif()
  message(WARNING "tool_effects: a trivial TSan program fails on this machine, even under setarch -R:\n${_out}")
  set(${out_var} "" PARENT_SCOPE)
endfunction()

if(TOOL_EFFECTS_TEST_LAUNCHER STREQUAL "auto")
  set(TOOL_EFFECTS_LAUNCHER "")
  if("thread" IN_LIST TOOL_EFFECTS_SANITIZERS)
    set(_probe_key "${CMAKE_CXX_COMPILER};${CMAKE_CXX_COMPILER_VERSION}")
    if(NOT DEFINED CACHE{_TOOL_EFFECTS_TSAN_PROBE_KEY} OR NOT "$CACHE{_TOOL_EFFECTS_TSAN_PROBE_KEY}" STREQUAL
                                                            "${_probe_key}")
      _tool_effects_probe_tsan(_launcher)
      set(_TOOL_EFFECTS_TSAN_PROBE_KEY "${_probe_key}" CACHE INTERNAL "")
      set(_TOOL_EFFECTS_TSAN_LAUNCHER "${_launcher}" CACHE INTERNAL "")
    endif()
    set(TOOL_EFFECTS_LAUNCHER "$CACHE{_TOOL_EFFECTS_TSAN_LAUNCHER}")
  endif()
elseif(TOOL_EFFECTS_TEST_LAUNCHER STREQUAL "none")
  set(TOOL_EFFECTS_LAUNCHER "")
else()
  set(TOOL_EFFECTS_LAUNCHER "${TOOL_EFFECTS_TEST_LAUNCHER}")
endif()
if(TOOL_EFFECTS_LAUNCHER)
  message(STATUS "tool_effects: test launcher: ${TOOL_EFFECTS_LAUNCHER}")
endif()

# The environment of every test, as test properties (TOOL_EFFECTS_TEST_PROPERTIES: empty, or
# "ENVIRONMENT_MODIFICATION;<change>"). The python3 on PATH may be a version manager's shim: pyenv's is a bash
# script that costs about 0.4 s of CPU per start against the interpreter's 0.07 s, and the tests start Python
# servers hundreds of times per preset. Where python3 is such a shim, the tests find the interpreter it resolves
# to first on their PATH.
set(TOOL_EFFECTS_TEST_PROPERTIES "")
find_program(_te_python3 python3 NO_CACHE)
if(_te_python3)
  execute_process(COMMAND "${_te_python3}" -c "import sys; print(sys.executable)" RESULT_VARIABLE _te_rc
                  OUTPUT_VARIABLE _te_python3_real OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  get_filename_component(_te_python3_dir "${_te_python3}" DIRECTORY)
  if(_te_rc EQUAL 0 AND IS_ABSOLUTE "${_te_python3_real}")
    get_filename_component(_te_python3_real_dir "${_te_python3_real}" DIRECTORY)
    if(NOT _te_python3_real_dir STREQUAL _te_python3_dir AND NOT _te_python3_real_dir MATCHES ";")
      set(TOOL_EFFECTS_TEST_PROPERTIES ENVIRONMENT_MODIFICATION "PATH=path_list_prepend:${_te_python3_real_dir}")
      message(STATUS "tool_effects: tests find python3 in ${_te_python3_real_dir} (${_te_python3} is a shim)")
    endif()
  endif()
endif()

# --- helpers ---------------------------------------------------------------
# Links a project target to the library (and tool_effects::json when available), the warnings and,
# unless NO_SANITIZERS, the sanitizers.
function(tool_effects_project_target target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "NO_SANITIZERS" "" "")
  target_link_libraries(${target} PRIVATE tool_effects tool_effects_warnings)
  if(TARGET tool_effects_json)
    target_link_libraries(${target} PRIVATE tool_effects_json)
  endif()
  if(TARGET tool_effects_mcp)
    target_link_libraries(${target} PRIVATE tool_effects_mcp)
  endif()
  if(TARGET tool_effects_sqlite)
    target_link_libraries(${target} PRIVATE tool_effects_sqlite)
  endif()
  if(NOT ARG_NO_SANITIZERS)
    target_link_libraries(${target} PRIVATE tool_effects_sanitizers)
  endif()
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "EXECUTABLE" AND TOOL_EFFECTS_LAUNCHER)
    # Used by gtest_discover_tests, both for discovery and for the discovered tests.
    set_target_properties(${target} PROPERTIES CROSSCOMPILING_EMULATOR "${TOOL_EFFECTS_LAUNCHER}")
  endif()
endfunction()

# True when a source should be skipped because it needs nlohmann_json (its name starts with "json" or
# "etcd") or the MCP component (its name starts with "mcp"), or the token verifiers ("auth_": tool_effects::mcp_auth).
function(tool_effects_needs_missing_json out_var source)
  get_filename_component(_stem "${source}" NAME_WE)
  if((_stem MATCHES "^(json|etcd|coordination_soak)" AND NOT TOOL_EFFECTS_HAS_JSON) OR
     (_stem MATCHES "^sqlite|gateway_backends" AND NOT TOOL_EFFECTS_HAS_SQLITE) OR (_stem MATCHES "^mcp" AND NOT TOOL_EFFECTS_HAS_MCP) OR
     (_stem MATCHES "^auth_" AND NOT TOOL_EFFECTS_HAS_MCP_AUTH))
    set(${out_var} TRUE PARENT_SCOPE)
  else()
    set(${out_var} FALSE PARENT_SCOPE)
  endif()
endfunction()

# add_test running an executable target under the launcher.
function(tool_effects_add_exe_test)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "NAME;TARGET;TIMEOUT;WORKING_DIRECTORY" "ARGS;LABELS")
  if(NOT ARG_WORKING_DIRECTORY)
    set(ARG_WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  add_test(NAME ${ARG_NAME} COMMAND ${TOOL_EFFECTS_LAUNCHER} $<TARGET_FILE:${ARG_TARGET}> ${ARG_ARGS}
           WORKING_DIRECTORY "${ARG_WORKING_DIRECTORY}")
  if(TOOL_EFFECTS_TEST_PROPERTIES)
    set_tests_properties(${ARG_NAME} PROPERTIES ${TOOL_EFFECTS_TEST_PROPERTIES})
  endif()
  if(ARG_TIMEOUT)
    set_tests_properties(${ARG_NAME} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  endif()
  if(ARG_LABELS)
    set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}")
  endif()
endfunction()
