# The real MCP servers the MCP tests and the MCP demo drive (test/mcp/package.json, pinned by its lockfile),
# installed by the ctest fixture `mcp_servers` into ${TOOL_EFFECTS_MCP_SERVERS_DIR} (default <build>/mcp-servers;
# the presets set <source>/build/mcp-servers).
# Included from the top-level CMakeLists.txt when tool_effects::mcp is available and tests or examples are built.
#
# Provides:
#   TOOL_EFFECTS_MCP_SERVERS_DIR       where the servers are (node_modules/@modelcontextprotocol/...)
#   TOOL_EFFECTS_MCP_TEST_DIR          test/mcp (the fake misbehaving server lives there)
#   tool_effects_mcp_target(<target>)  compile definitions naming both, and the fixture for <test>s below
#   ctest mcp.servers.install          FIXTURES_SETUP mcp_servers (only when npm is found)
include_guard(GLOBAL)

# The presets share one install, build/mcp-servers (./scripts/demo --mcp uses it too): npm ci runs once per
# checkout, not once per preset.
set(TOOL_EFFECTS_MCP_SERVERS_DIR "${PROJECT_BINARY_DIR}/mcp-servers" CACHE PATH
    "Where the MCP tests and the MCP demo install and find the pinned servers of test/mcp")
set(TOOL_EFFECTS_MCP_TEST_DIR "${PROJECT_SOURCE_DIR}/test/mcp")
find_program(TOOL_EFFECTS_NPM npm)
if(TOOL_EFFECTS_NPM)
  add_test(NAME mcp.servers.install
           COMMAND "${CMAKE_COMMAND}" "-DNPM=${TOOL_EFFECTS_NPM}" "-DSOURCE=${TOOL_EFFECTS_MCP_TEST_DIR}"
                   "-DDEST=${TOOL_EFFECTS_MCP_SERVERS_DIR}" -P "${TOOL_EFFECTS_MCP_TEST_DIR}/install.cmake")
  set_tests_properties(mcp.servers.install PROPERTIES FIXTURES_SETUP mcp_servers TIMEOUT 600 LABELS mcp)
  # The newcomer scenario's servers (issue 21: server-postgres, server-redis), a second setup of the same fixture.
  add_test(NAME mcp.servers.install_newcomer
           COMMAND "${CMAKE_COMMAND}" "-DNPM=${TOOL_EFFECTS_NPM}" "-DSOURCE=${TOOL_EFFECTS_MCP_TEST_DIR}/newcomer"
                   "-DDEST=${TOOL_EFFECTS_MCP_SERVERS_DIR}/newcomer" -DCHECK=server-redis
                   -P "${TOOL_EFFECTS_MCP_TEST_DIR}/install.cmake")
  set_tests_properties(mcp.servers.install_newcomer PROPERTIES FIXTURES_SETUP mcp_servers TIMEOUT 600 LABELS mcp)
else()
  message(STATUS "tool_effects: npm not found; the tests against real MCP servers will skip")
endif()

# https for the HTTP transport (<tool_effects/mcp/http.hpp>) needs OpenSSL: TOOL_EFFECTS_MCP_TLS=1 where found.
find_package(OpenSSL QUIET)

function(tool_effects_mcp_target target)
  target_compile_definitions(${target} PRIVATE "TOOL_EFFECTS_MCP_SERVERS_DIR=\"${TOOL_EFFECTS_MCP_SERVERS_DIR}\""
                                               "TOOL_EFFECTS_MCP_TEST_DIR=\"${TOOL_EFFECTS_MCP_TEST_DIR}\""
                                               "TOOL_EFFECTS_MCP_MAKE_CERTS=\"${PROJECT_SOURCE_DIR}/test/etcd/make_certs.sh\"")
  if(OpenSSL_FOUND)
    target_compile_definitions(${target} PRIVATE TOOL_EFFECTS_MCP_TLS=1)
    target_link_libraries(${target} PRIVATE OpenSSL::SSL OpenSSL::Crypto)
  endif()
endfunction()
