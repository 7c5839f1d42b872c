// Shared by the tests that run a program and read its one JSON line (the TypeScript SDK's clients, the gateway):
// where the npm packages are, running a shell command, and reading what it printed.
#ifndef TOOL_EFFECTS_TEST_PROCESS_SUPPORT_HPP
#define TOOL_EFFECTS_TEST_PROCESS_SUPPORT_HPP

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace process_test {

// Where the npm packages (the SDK, the reference servers) are installed.
inline std::string servers_dir() {
  if (const char* e = std::getenv("TOOL_EFFECTS_MCP_SERVERS"); e && *e) return e;
  return TOOL_EFFECTS_MCP_SERVERS_DIR;
}

// Runs `cmd` through the shell: its wait status (as pclose gives it) and its stdout.
inline std::pair<int, std::string> shell(const std::string& cmd) {
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  std::string out;
  char buf[4096];
  while (const std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  return {::pclose(p), std::move(out)};
}

// A program's one JSON line with, when it failed, its "exit_status"; {"failed": what it printed, "exit_status"}
// when that is not JSON.
inline nlohmann::json json_result(int status, const std::string& out) {
  try {
    nlohmann::json j = nlohmann::json::parse(out);
    if (status != 0) j["exit_status"] = status;
    return j;
  } catch (const std::exception&) {
    return nlohmann::json{{"failed", out}, {"exit_status", status}};
  }
}

}  // namespace process_test

#endif  // TOOL_EFFECTS_TEST_PROCESS_SUPPORT_HPP
