# ctest mcp.servers.install (fixture mcp_servers): installs the pinned MCP servers of test/mcp/package-lock.json
# into DEST (build/<preset>/mcp-servers) with `npm ci`, never globally. Skips the install when DEST already
# holds exactly this lockfile's packages.
#
#   cmake -DNPM=<npm> -DSOURCE=<repo>/test/mcp -DDEST=<dir> [-DCHECK=<package>] -P install.cmake
#
# CHECK names one installed package (default server-filesystem) whose presence, with the stamp, means "done";
# test/mcp/newcomer (server-postgres, server-redis) is installed the same way into <dir>/newcomer.
cmake_minimum_required(VERSION 3.25)
foreach(_var IN ITEMS NPM SOURCE DEST)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "mcp servers: ${_var} is not set")
  endif()
endforeach()

if(NOT CHECK)
  set(CHECK server-filesystem)
endif()
file(MAKE_DIRECTORY "${DEST}")
set(_stamp "${DEST}/installed-package-lock.json")
if(EXISTS "${_stamp}" AND EXISTS "${DEST}/node_modules/@modelcontextprotocol/${CHECK}/package.json")
  file(SHA256 "${_stamp}" _have)
  file(SHA256 "${SOURCE}/package-lock.json" _want)
  if(_have STREQUAL _want)
    message("mcp servers: up to date in ${DEST}")
    return()
  endif()
endif()

file(COPY "${SOURCE}/package.json" "${SOURCE}/package-lock.json" DESTINATION "${DEST}")
message("mcp servers: npm ci in ${DEST}")
execute_process(COMMAND "${NPM}" ci --no-audit --no-fund --ignore-scripts
                WORKING_DIRECTORY "${DEST}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out
                TIMEOUT 580)
message("${_out}")
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "mcp servers: npm ci failed (${_rc})")
endif()
file(COPY_FILE "${SOURCE}/package-lock.json" "${_stamp}")
message("mcp servers: installed in ${DEST}")
