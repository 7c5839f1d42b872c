// Shared by the MCP tests: where node, the installed real servers and the
// fake server are, and skipping when node/python3 are absent.
#ifndef TOOL_EFFECTS_TEST_MCP_SUPPORT_HPP
#define TOOL_EFFECTS_TEST_MCP_SUPPORT_HPP

#include <cstdlib>
#include <filesystem>
#include <chrono>
#include <string>
#include <vector>

#include <tool_effects/mcp.hpp>

// ThreadSanitizer: the reference count of an exception_ptr lives in the
// uninstrumented libstdc++, so an exception thrown on a pool thread, caught
// and read on the test's thread, then released last by the pool thread looks
// like a race on the exception object. Suppressed exactly there. (Each mcp
// test is one translation unit, so this is defined once per executable.)
extern "C" const char* __tsan_default_suppressions();
extern "C" const char* __tsan_default_suppressions() {
  return "race:std::__exception_ptr::exception_ptr::_M_release\n";
}

namespace mcp_test {

inline std::string servers_dir() {
  if (const char* e = std::getenv("TOOL_EFFECTS_MCP_SERVERS"); e && *e) return e;
  return TOOL_EFFECTS_MCP_SERVERS_DIR;
}
// Client options for the tests: short timeouts (initialize 10 s, shutdown grace 500 ms), `request` per request.
inline tool_effects::mcp_client_options fast_options(std::chrono::seconds request = std::chrono::seconds(10)) {
  tool_effects::mcp_client_options o;
  o.request_timeout = request;
  o.initialize_timeout = std::chrono::seconds(10);
  o.shutdown_grace = std::chrono::milliseconds(500);
  return o;
}

inline bool has_program(const char* name) { return !tool_effects::mcp_find_program(name).empty(); }

// The path of an installed server's entry script, e.g. "server-filesystem".
inline std::string server_script(const std::string& package, const std::string& script) {
  return servers_dir() + "/node_modules/@modelcontextprotocol/" + package + "/dist/" + script;
}

inline std::vector<std::string> fake_server(std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{"python3", std::string(TOOL_EFFECTS_MCP_TEST_DIR) + "/fake_server.py"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// The kind of the mcp_error `f` throws (or "no error"); `what` receives its message.
template <class F>
std::string error_kind(F&& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const tool_effects::mcp_error& e) {
    if (what) *what = e.what();
    return std::string(tool_effects::to_string(e.kind()));
  }
  return "no error";
}

// fake_server.py's tools that send a request of their own (elicit, sample,
// roots, ...) answer with the JSON-RPC response they got: that response, and
// its error code (0: none) and message.
inline nlohmann::json response_of(const nlohmann::json& call_result) {
  return call_result.at("structuredContent").at("response");
}
inline int error_code(const nlohmann::json& response) {
  return response.contains("error") ? response["error"]["code"].get<int>() : 0;
}
inline std::string error_message(const nlohmann::json& response) {
  return response.contains("error") ? response["error"]["message"].get<std::string>() : std::string("(no error)");
}

}  // namespace mcp_test

// Skips the test when node is absent; fails it when node is there but the
// servers were not installed (the mcp_servers fixture must have run).
#define MCP_REQUIRE_NODE_SERVERS()                                                                          \
  do {                                                                                                      \
    if (!mcp_test::has_program("node")) GTEST_SKIP() << "node is not installed: real MCP servers skipped";  \
    ASSERT_TRUE(std::filesystem::exists(mcp_test::server_script("server-filesystem", "index.js")))          \
        << "MCP servers not installed in " << mcp_test::servers_dir()                                       \
        << " (ctest runs the fixture mcp.servers.install: npm ci of test/mcp/package-lock.json)";           \
  } while (0)

#define MCP_REQUIRE_PYTHON()                                                                         \
  do {                                                                                               \
    if (!mcp_test::has_program("python3")) GTEST_SKIP() << "python3 is not installed: fake server skipped"; \
  } while (0)

#endif
