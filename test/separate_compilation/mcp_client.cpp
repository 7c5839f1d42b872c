// ctest separate_compilation.mcp_client: the MCP client with TOOL_EFFECTS_SEPARATE_COMPILATION, linked with
// tool_effects::mcp_compiled. This translation unit parses only the client's declarations (no session, no
// Boost.Process, no Beast: mcp.include_split checks that); the program runs real servers through the compiled
// library: @modelcontextprotocol/server-everything over stdio, then the same server over Streamable HTTP on a
// free port of 127.0.0.1 (started here, stopped by pid). Each lists its tools and calls `echo`.
// separate_compilation.mcp_defined_once checks (nm) that this object defines none of the compiled-once functions.
//
//   separate_compilation_mcp_client <mcp-servers dir>   (exit 0: both passed; 77: node or the server missing)
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>
#include <tool_effects/mcp/http.hpp>

namespace te = tool_effects;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}

// Lists the tools and calls echo; `how` names the transport in the output.
void exercise(te::mcp_client& c, const std::string& how) {
  const nlohmann::json tools = c.list_tools()["tools"];
  bool has_echo = false;
  for (const auto& t : tools) has_echo = has_echo || t.value("name", "") == "echo";
  expect(has_echo, how + ": tools/list names echo (" + std::to_string(tools.size()) + " tools)");
  const std::string text = te::mcp_text(c.call("echo", {{"message", "separate " + how}}));
  expect(text == "Echo: separate " + how, how + ": echo answered \"" + text + "\"");
  c.close();
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0) {
    std::perror("free port");
    std::exit(1);
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <mcp-servers dir>\n", argv[0]);
    return 2;
  }
  const std::string script =
      std::string(argv[1]) + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
  if (te::mcp_find_program("node").empty() || !std::filesystem::exists(script)) {
    std::printf("skipped: node or %s missing\n", script.c_str());
    return 77;
  }
  boost::asio::thread_pool pool(2);

  auto stdio = te::mcp_client::launch(pool, {"node", script});
  exercise(stdio, "stdio");

  const int port = free_port();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string env = "PORT=" + std::to_string(port);
    ::putenv(const_cast<char*>(env.c_str()));
    ::execlp("node", "node", script.c_str(), "streamableHttp", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  std::optional<te::mcp_client> http;
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
  for (int i = 0; i < 300 && !http; ++i) {
    try {
      http = te::mcp_client::connect(pool, {.url = url});
    } catch (const te::mcp_transient_error&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // not listening yet
    }
  }
  expect(http.has_value(), "http: connected to " + url);
  if (http) exercise(*http, "http");
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  return failures == 0 ? 0 : 1;
}
