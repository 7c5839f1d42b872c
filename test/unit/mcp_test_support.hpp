// Shared by the MCP tests: where node, the installed real servers and the
// fake server are, and skipping when node/python3 are absent.
#ifndef TOOL_EFFECTS_TEST_MCP_SUPPORT_HPP
#define TOOL_EFFECTS_TEST_MCP_SUPPORT_HPP

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tool_effects/mcp.hpp>

#include "process_support.hpp"
#include "scratch_dirs.hpp"

// ThreadSanitizer: the reference count of an exception_ptr lives in the
// uninstrumented libstdc++, so an exception thrown on a pool thread, caught
// and read on the test's thread, then released last by the pool thread looks
// like a race on the exception object. Suppressed exactly there, by
// test/mcp/tsan_suppressions.cpp, linked into the executable of the mcp tests
// (test/CMakeLists.txt): once per executable, however its files are batched.

namespace mcp_test {

using process_test::servers_dir;
// Client options for the tests: short timeouts (initialize 10 s, shutdown grace 500 ms), `request` per request.
// The probe waits up to 2.5 s (not the default 1 s): a fake server started on a loaded machine may take longer
// than a second to answer its first request, and would then be taken for a legacy one.
inline tool_effects::mcp_client_options fast_options(std::chrono::seconds request = std::chrono::seconds(10)) {
  tool_effects::mcp_client_options o;
  o.request_timeout = request;
  o.initialize_timeout = std::chrono::seconds(10);
  o.discover_timeout = std::chrono::milliseconds(2500);
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

// A server process started by a test (in its own process group), killed and reaped by pid.
class server_process {
 public:
  explicit server_process(std::vector<std::string> argv, std::vector<std::string> env = {}) {
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    const std::string exe = tool_effects::mcp_find_program(argv[0]).string();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      for (auto& e : env) ::putenv(e.data());
      ::execv(exe.c_str(), a.data());
      ::_exit(127);
    }
  }
  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;
  ~server_process() { stop(); }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }
  [[nodiscard]] int pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// A fresh, empty directory under the system's temporary one: <tmp>/<tag>_<pid>_<n>.
inline std::filesystem::path scratch_dir(const std::string& tag) {
  static std::atomic<int> n{0};
  return te_test::scratch_dir(tag, std::to_string(n++));
}

// The port a test server wrote to `port_file`, waiting for it `polls` x 10 ms at most (0: none came).
inline int port_from(const std::filesystem::path& port_file, int polls) {
  for (int i = 0; i < polls && !std::filesystem::exists(port_file); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  int port = 0;
  std::ifstream(port_file) >> port;
  return port;
}

// A log of one JSON document per line (the Python test servers' request logs).
inline std::vector<nlohmann::json> json_lines(const std::filesystem::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// A raw client of `mcp_server::serve_fds` over two pipes: writes lines, reads lines (each read bounded by 10 s).
struct pipe_peer {
  int to_server[2]{-1, -1};
  int from_server[2]{-1, -1};
  std::string buffer;
  pipe_peer() {
    if (::pipe(to_server) != 0 || ::pipe(from_server) != 0) throw std::runtime_error("pipe");
  }
  pipe_peer(const pipe_peer&) = delete;
  pipe_peer& operator=(const pipe_peer&) = delete;
  ~pipe_peer() {
    for (int fd : {to_server[0], to_server[1], from_server[0], from_server[1]})
      if (fd >= 0) ::close(fd);
  }
  void send(const nlohmann::json& message) {
    const std::string line = message.dump() + "\n";
    ASSERT_EQ(::write(to_server[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
  }
  void close_input() {
    ::close(to_server[1]);
    to_server[1] = -1;
  }
  // The stdio handshake of a 2025-11-25 client declaring `capabilities`: initialize (id 1), its answer, then
  // notifications/initialized.
  void initialize(nlohmann::json capabilities = nlohmann::json::object()) {
    send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
          {"params", {{"protocolVersion", "2025-11-25"}, {"capabilities", std::move(capabilities)},
                      {"clientInfo", {{"name", "scripted"}, {"version", "1"}}}}}});
    const nlohmann::json r = next();
    ASSERT_EQ(r["id"], 1) << r.dump();
    send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  }
  // The next line the server writes, parsed; null when none comes within 10 s.
  nlohmann::json next() {
    for (;;) {
      if (const auto nl = buffer.find('\n'); nl != std::string::npos) {
        nlohmann::json j = nlohmann::json::parse(buffer.substr(0, nl));
        buffer.erase(0, nl + 1);
        return j;
      }
      pollfd p{from_server[0], POLLIN, 0};
      if (::poll(&p, 1, 10000) <= 0) return nullptr;
      char chunk[65536];
      const ssize_t n = ::read(from_server[0], chunk, sizeof chunk);
      if (n <= 0) return nullptr;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
  }
};

// A JSON-RPC request.
inline nlohmann::json rpc(int id, const std::string& method, nlohmann::json params) {
  return nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
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
