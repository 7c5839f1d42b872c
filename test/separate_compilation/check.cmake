# ctest separate_compilation.defined_once: with TOOL_EFFECTS_SEPARATE_COMPILATION, the README example's object
# defines none of what tool_effects::compiled compiles once (the engine, the recovery drivers and their spawn,
# the approver's erasure, the failure records), and the library defines every one of them. Control in the same
# run: the header-only object of the same source must define them all, so a check that cannot see them fails.
# With -DSET=mcp (ctest separate_compilation.mcp_defined_once) the same for the MCP client and
# tool_effects::mcp_compiled: the client's members, the session, the connection and both transports.
#
#   cmake -DNM=<nm> [-DSET=core|mcp] -DHEADER_ONLY=<tu.o> -DCOMPILED_TU=<tu.o> -DLIBRARY=<lib.a> -P check.cmake
cmake_minimum_required(VERSION 3.25)
foreach(_var IN ITEMS NM HEADER_ONLY COMPILED_TU LIBRARY)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "separate_compilation: ${_var} is not set")
  endif()
endforeach()

# The compiled-once functions, as nm -C prints their names (the objects are compiled at -O0, so that the
# header-only one emits every function it uses).
if(DEFINED SET AND SET STREQUAL "mcp")
  set(_symbols
      "tool_effects::mcp_client::make_stdio_state("
      "tool_effects::mcp_client::make_http_state("
      "tool_effects::mcp_client::list_tools"
      "tool_effects::mcp_client::call_op("
      "tool_effects::mcp_text("
      "tool_effects::detail::basic_mcp_session<void>::"  # the session: a class template (basic_mcp_session)
      "tool_effects::detail::mcp_connection::"
      "tool_effects::detail::mcp_stdio_child_transport::"
      "tool_effects::detail::mcp_http_transport::")
else()
set(_symbols
    "tool_effects::detail::plan_engine::complete("
    "tool_effects::detail::plan_engine::start("
    "tool_effects::detail::recover<std::"  # the steady clock (std::chrono::_V2:: in libstdc++, std::__1:: in libc++)
    "tool_effects::detail::recover_to_error<std::"
    "void tool_effects::detail::spawn_recovery<"
    "tool_effects::approver::ask_async("
    "tool_effects::make_failure_record("
    "tool_effects::call_failure::call_failure(")
endif()

# The names of the functions `file` defines (text symbols, strong or weak), one per line.
function(_te_defined out_var file)
  execute_process(COMMAND "${NM}" -C --defined-only "${file}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                  ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "separate_compilation: ${NM} ${file} failed (${_rc}): ${_err}")
  endif()
  set(${out_var} "${_out}" PARENT_SCOPE)
endfunction()

# Whether `text` (nm output) defines a text symbol whose name contains `name` (a function template's
# demangled name starts with its return type).
function(_te_has out_var text name)
  string(REGEX REPLACE "([][+*.?^$()|\\\\])" "\\\\\\1" _re "${name}")
  if(text MATCHES "(^|\n)[0-9a-f]* [TtWw] [^\n]*${_re}")
    set(${out_var} TRUE PARENT_SCOPE)
  else()
    set(${out_var} FALSE PARENT_SCOPE)
  endif()
endfunction()

_te_defined(_header_only "${HEADER_ONLY}")
_te_defined(_compiled_tu "${COMPILED_TU}")
_te_defined(_library "${LIBRARY}")
set(_errors "")
foreach(_s IN LISTS _symbols)
  _te_has(_in_header_only "${_header_only}" "${_s}")
  _te_has(_in_compiled_tu "${_compiled_tu}" "${_s}")
  _te_has(_in_library "${_library}" "${_s}")
  message("separate_compilation: ${_s}...  header-only TU: ${_in_header_only}, separate TU: ${_in_compiled_tu}, "
          "library: ${_in_library}")
  if(NOT _in_header_only)
    string(APPEND _errors "  control: the header-only object does not define ${_s}...\n")
  endif()
  if(_in_compiled_tu)
    string(APPEND _errors "  the separately compiled object defines ${_s}... (it should only declare it)\n")
  endif()
  if(NOT _in_library)
    string(APPEND _errors "  the library does not define ${_s}...\n")
  endif()
endforeach()
if(_errors)
  message(FATAL_ERROR "separate_compilation:\n${_errors}")
endif()
list(LENGTH _symbols _n)
message("separate_compilation: ${_n} functions defined by the library only (the header-only object defines them all)")
