# ctest mcp.include_split: include cost follows the split of the MCP headers. Runs `${CXX} -H -E` (the
# preprocessor alone: which headers a translation unit parses is decided there) on tiny translation units and
# checks the headers each parses:
#   stdio_only.cpp (<tool_effects/mcp.hpp>):      no boost/beast, no HTTP-only header of ours;
#   http_only.cpp  (<tool_effects/mcp/http.hpp>): no boost/process, no stdio transport.
# Both must parse the session (mcp/protocol/detail/session.hpp): a list without it means -H printed nothing useful,
# and the test fails rather than passing on an empty list (the control of the part below).
# A server-only TU (server_stdio_only.cpp, server_http_only.cpp) parses no header of the client and no
# Boost.Process; over stdio no Beast.
# Then both client TUs again with TOOL_EFFECTS_SEPARATE_COMPILATION (tool_effects::mcp_compiled, issue 27's compile cost):
# neither parses the session, the transports, Boost.Process or Beast; both still parse the client's declarations.
# Usage: cmake -DCXX=<compiler> -DSOURCE_DIR=<repo> [-DINCLUDE_DIR=<headers, default <repo>/include>]
#              [-DFLAGS="<extra flags;...>"] -P check.cmake
foreach(_v CXX SOURCE_DIR)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "check.cmake: -D${_v}=... is required")
  endif()
endforeach()
set(_dir "${SOURCE_DIR}/test/mcp/include_split")
if(NOT DEFINED INCLUDE_DIR)
  set(INCLUDE_DIR "${SOURCE_DIR}/include")
endif()
set(_failed FALSE)

function(_headers_of tu out_var)
  execute_process(COMMAND "${CXX}" -std=c++20 -H -E -o /dev/null -DBOOST_PROCESS_USE_STD_FS=1
                          "-I${INCLUDE_DIR}" ${FLAGS} ${ARGN} "${_dir}/${tu}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${tu} does not compile (${_rc}):\n${_err}")
  endif()
  set(${out_var} "${_err}" PARENT_SCOPE)  # -H writes the include tree to stderr
endfunction()

function(_expect tu list what regex present)
  string(REGEX MATCHALL "[^\n]*${regex}[^\n]*" _hits "${list}")
  list(LENGTH _hits _n)
  if(present AND _n EQUAL 0)
    message(SEND_ERROR "${tu}: does not parse ${what} (expected; else the list is not what -H prints)")
    set(_failed TRUE PARENT_SCOPE)
  elseif(NOT present AND _n GREATER 0)
    list(GET _hits 0 _first)
    string(STRIP "${_first}" _first)
    message(SEND_ERROR "${tu}: parses ${_n} header(s) of ${what}, e.g. ${_first}")
    set(_failed TRUE PARENT_SCOPE)
  else()
    message(STATUS "${tu}: ${what}: ${_n} header(s), as expected")
  endif()
endfunction()

_headers_of(stdio_only.cpp _stdio)
_expect(stdio_only.cpp "${_stdio}" "the session" "tool_effects/mcp/protocol/detail/session\\.hpp" TRUE)
_expect(stdio_only.cpp "${_stdio}" "the stdio transport" "tool_effects/mcp/transport/detail/stdio_child\\.hpp" TRUE)
_expect(stdio_only.cpp "${_stdio}" "Boost.Beast" "boost/beast/" FALSE)
_expect(stdio_only.cpp "${_stdio}" "the HTTP transport" "tool_effects/mcp/(transport/detail/http_client|auth/detail/oauth_flow)\\.hpp" FALSE)
_expect(stdio_only.cpp "${_stdio}" "HTTP-only x-mcp-header code" "tool_effects/mcp/client/detail/param_headers\\.hpp" FALSE)

_headers_of(http_only.cpp _http)
_expect(http_only.cpp "${_http}" "the session" "tool_effects/mcp/protocol/detail/session\\.hpp" TRUE)
_expect(http_only.cpp "${_http}" "the HTTP transport" "tool_effects/mcp/transport/detail/http_client\\.hpp" TRUE)
_expect(http_only.cpp "${_http}" "Boost.Process" "boost/process/" FALSE)
_expect(http_only.cpp "${_http}" "the stdio transport" "tool_effects/mcp/transport/detail/stdio_child\\.hpp" FALSE)

# The server apart from the client: a server-only TU parses the protocol session (the control: -H lists it) and
# no header of the client's room, no Boost.Process; over stdio no Beast either.
set(_client_headers "tool_effects/mcp/(client|host|http)\\.hpp|tool_effects/mcp/client/|tool_effects/mcp/transport/detail/(stdio_child|http_client)\\.hpp")
foreach(_tu IN ITEMS server_stdio_only.cpp server_http_only.cpp)
  _headers_of(${_tu} _srv)
  _expect(${_tu} "${_srv}" "the session" "tool_effects/mcp/protocol/detail/session\\.hpp" TRUE)
  _expect(${_tu} "${_srv}" "the client" "${_client_headers}" FALSE)
  _expect(${_tu} "${_srv}" "Boost.Process" "boost/process/" FALSE)
  if(_tu STREQUAL "server_stdio_only.cpp")
    _expect(${_tu} "${_srv}" "Boost.Beast" "boost/beast/" FALSE)
  endif()
endforeach()

foreach(_tu IN ITEMS stdio_only.cpp http_only.cpp)
  _headers_of(${_tu} _sep -DTOOL_EFFECTS_SEPARATE_COMPILATION)
  set(_tu "${_tu} (separate compilation)")
  _expect("${_tu}" "${_sep}" "the client's declarations" "tool_effects/mcp/client\\.hpp" TRUE)
  _expect("${_tu}" "${_sep}" "the session" "tool_effects/mcp/protocol/detail/session\\.hpp" FALSE)
  _expect("${_tu}" "${_sep}" "a transport" "tool_effects/mcp/transport/detail/(stdio_child|http_client)\\.hpp" FALSE)
  _expect("${_tu}" "${_sep}" "the client's definitions" "tool_effects/mcp/client/impl/" FALSE)
  _expect("${_tu}" "${_sep}" "Boost.Process" "boost/process/" FALSE)
  _expect("${_tu}" "${_sep}" "Boost.Beast" "boost/beast/" FALSE)
endforeach()

if(_failed)
  message(FATAL_ERROR "mcp.include_split: the include lists above break the split")
endif()
