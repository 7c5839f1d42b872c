// Shared by the gateway tests (test/unit/gateway_*_test.cpp): the program under test (tool-effects-gateway) is
// driven from outside, as a client drives it: a child process spoken to in JSON-RPC over its stdin and stdout
// (`gateway_rpc`), or the official TypeScript SDK client (test/mcp/gateway_clients.cjs) over stdio or HTTP.
// The upstream servers are test/mcp/gateway_upstream.py (which records its effects in a log), the bank of
// test/mcp/bank_server.cpp, and the npm servers of the mcp_servers fixture.
#ifndef TOOL_EFFECTS_TEST_GATEWAY_SUPPORT_HPP
#define TOOL_EFFECTS_TEST_GATEWAY_SUPPORT_HPP

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "process_support.hpp"
#include "scratch_dirs.hpp"

namespace gateway_test {

using json = nlohmann::json;
namespace fs = std::filesystem;

inline std::string gateway() { return TOOL_EFFECTS_GATEWAY; }
inline std::string bank_server() { return TOOL_EFFECTS_MCP_BANK_SERVER; }
inline std::string upstream_script() { return std::string(TOOL_EFFECTS_MCP_TEST_DIR) + "/gateway_upstream.py"; }
using process_test::servers_dir;
inline bool has_node_servers() {
  return std::system("node --version > /dev/null 2>&1") == 0 &&
         fs::exists(servers_dir() + "/node_modules/@modelcontextprotocol/sdk/package.json");
}
#define GATEWAY_REQUIRE_NODE()                                                                              \
  do {                                                                                                      \
    if (std::system("node --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "node is not installed";       \
    ASSERT_TRUE(gateway_test::has_node_servers())                                                           \
        << "the npm packages are not installed in " << gateway_test::servers_dir()                          \
        << " (ctest runs the fixture mcp.servers.install: npm ci of test/mcp/package-lock.json)";           \
  } while (0)

// A directory of its own for one test, emptied.
inline fs::path fresh_dir(const std::string& name) { return te_test::scratch_dir("te_gateway", name); }
inline void write_file(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
inline std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
inline std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}
// An upstream entry of mcpServers running gateway_upstream.py with its effects log (and, optionally, a file
// its starts are counted in); `extra` is merged into the entry.
inline json upstream(const fs::path& log, json extra = json::object(), const fs::path& started = {}) {
  json args = {upstream_script(), "--log", log.string()};
  if (!started.empty()) args.insert(args.end(), {"--started", started.string()});
  json e = {{"command", "python3"}, {"args", args}};
  e.update(extra);
  return e;
}

// Runs `cmd` through the shell; its exit status and stdout.
inline std::pair<int, std::string> run(const std::string& cmd) {
  auto [status, out] = process_test::shell(cmd);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::move(out)};
}

// The TypeScript SDK client of test/mcp/gateway_clients.cjs on `scenario`, over `transport` ("stdio <command
// ...>" or "http <url>"), with `env` ("NAME=value ...") in its environment; its one JSON line.
inline json sdk(const json& scenario, const std::string& transport, const std::string& env = "") {
  std::string quoted = scenario.dump();
  std::string escaped;
  for (const char c : quoted) escaped += c == '\'' ? std::string("'\\''") : std::string(1, c);
  const auto [status, out] = run(env + " node " TOOL_EFFECTS_MCP_TEST_DIR "/gateway_clients.cjs " + servers_dir() +
                                 "/node_modules '" + escaped + "' " + transport);
  return process_test::json_result(status, out);
}

// A child process with its stdin and stdout as pipes (stderr to a file), killed (SIGKILL) if still running
// when destroyed.
class child {
 public:
  explicit child(const std::vector<std::string>& argv, const fs::path& stderr_file = "/dev/null") {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      const int err = ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (err >= 0) ::dup2(err, 2);
      std::vector<char*> a;
      for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      ::execvp(a[0], a.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  child(const child&) = delete;
  child& operator=(const child&) = delete;
  ~child() {
    if (to_ >= 0) ::close(to_);
    if (from_ >= 0) ::close(from_);
    if (status_ < 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  [[nodiscard]] pid_t pid() const { return pid_; }
  void write_line(const std::string& line) {
    const std::string l = line + "\n";
    for (std::size_t off = 0; off < l.size();) {
      const ssize_t n = ::write(to_, l.data() + off, l.size() - off);
      if (n <= 0) return;
      off += static_cast<std::size_t>(n);
    }
  }
  void close_stdin() {
    if (to_ >= 0) ::close(to_);
    to_ = -1;
  }
  // The next line of its stdout, or nothing after `timeout` (or at its end).
  std::optional<std::string> read_line(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string l = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return l;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{from_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char b[65536];
      const ssize_t n = ::read(from_, b, sizeof b);
      if (n <= 0) return std::nullopt;
      buf_.append(b, static_cast<std::size_t>(n));
    }
  }
  void signal(int sig) const { ::kill(pid_, sig); }
  // Waits for its exit (at most `timeout`; then SIGKILL): its exit status, or 128 + the signal.
  int wait(std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    if (status_ >= 0) return status_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int st = 0;
    while (::waitpid(pid_, &st, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  int status_ = -1;
  std::string buf_;
};

// A JSON-RPC client of an MCP server over a child's stdio (the protocol version 2025-06-18). With an
// `on_elicit` handler it declares elicitation and answers elicitation/create with what the handler returns.
class rpc {
 public:
  explicit rpc(const std::vector<std::string>& argv, std::function<json(const json& params)> on_elicit = {},
               const fs::path& stderr_file = "/dev/null")
      : c_(argv, stderr_file), on_elicit_(std::move(on_elicit)) {}

  json initialize() {
    json caps = json::object();
    if (on_elicit_) caps["elicitation"] = json::object();
    json r = request("initialize", {{"protocolVersion", "2025-06-18"},
                                    {"capabilities", caps},
                                    {"clientInfo", {{"name", "gateway-test"}, {"version", "1"}}}});
    c_.write_line(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}.dump());
    return r;
  }
  // The response (its "result" or "error" object, or {"no_response": true} after the timeout).
  json request(const std::string& method, json params, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const int id = ++next_;
    c_.write_line(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}.dump());
    return await(id, timeout);
  }
  // Sends tools/call (with the idempotency key `key` under _meta unless empty) and returns its id.
  int send_call(const std::string& tool, json args, const std::string& key = "") {
    const int id = ++next_;
    json params = {{"name", tool}, {"arguments", std::move(args)}};
    if (!key.empty()) params["_meta"] = {{"io.github.tool-effects/idempotency-key", key}};
    c_.write_line(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", params}}.dump());
    return id;
  }
  json call(const std::string& tool, json args, const std::string& key = "") {
    return await(send_call(tool, std::move(args), key), std::chrono::seconds(30));
  }
  json await(int id, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const auto it = early_.find(id); it != early_.end()) {
        json r = it->second;
        early_.erase(it);
        return r;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      const auto line = c_.read_line(std::max(left, std::chrono::milliseconds(1)));
      if (!line) return json{{"no_response", true}};
      const json m = json::parse(*line);
      if (m.contains("method") && m.contains("id")) {  // a request of the server's
        ++asked_;
        json result = m["method"] == "elicitation/create" && on_elicit_ ? on_elicit_(m["params"]) : json();
        if (result.is_null())
          c_.write_line(json{{"jsonrpc", "2.0"}, {"id", m["id"]}, {"error", {{"code", -32601}, {"message", "no"}}}}.dump());
        else
          c_.write_line(json{{"jsonrpc", "2.0"}, {"id", m["id"]}, {"result", result}}.dump());
        continue;
      }
      if (!m.contains("id")) continue;  // a notification
      const json r = m.contains("result") ? m["result"] : m.value("error", json());
      if (m["id"] == id) return r;
      early_[m["id"].get<int>()] = r;
    }
  }
  [[nodiscard]] int asked() const { return asked_; }  // requests the server sent (elicitations)
  child& process() { return c_; }

 private:
  child c_;
  std::function<json(const json&)> on_elicit_;
  int next_ = 0;
  int asked_ = 0;
  std::map<int, json> early_;
};

// The text of a tools/call result.
inline std::string text_of(const json& result) {
  std::string out;
  if (result.contains("content"))
    for (const auto& c : result["content"])
      if (c.value("type", "") == "text") out += c.value("text", "");
  return out;
}

// A gateway serving Streamable HTTP (`--listen 127.0.0.1:0`) for `config`: its port, read from the first line
// of its stdout.
class http_gateway {
 public:
  explicit http_gateway(const fs::path& config, const fs::path& stderr_file = "/dev/null")
      : c_({gateway(), "--config", config.string(), "--listen", "127.0.0.1:0"}, stderr_file) {
    const auto line = c_.read_line(std::chrono::seconds(30));
    port_ = line ? std::atoi(line->c_str()) : 0;
  }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }
  child& process() { return c_; }

 private:
  child c_;
  int port_ = 0;
};

}  // namespace gateway_test

#endif  // TOOL_EFFECTS_TEST_GATEWAY_SUPPORT_HPP
