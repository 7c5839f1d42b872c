// This project's MCP server in the side-by-side benchmark against the official TypeScript SDK's McpServer
// (scripts/bench-mcp-vs-ts --servers, docs/benchmarks.md "The MCP server against the TypeScript SDK's
// McpServer", issue 28 point 8). Serves the same two tools as server.mjs, declared with tool_effects (their
// annotations derived: read-only, idempotent, closed-world), through mcp_server: every call goes through the
// dispatcher under the server's coordinator, as a real server's would.
//   echo {message}  -> the message as text content (a small call)
//   blob {bytes}    -> one text content of `bytes` ASCII characters (a large result; cached per size)
//
//   bench_mcp_vs_ts_server [--threads N]              stdio, until stdin closes
//   bench_mcp_vs_ts_server [--threads N] --http PORT  Streamable HTTP on 127.0.0.1:PORT/mcp, until SIGTERM/SIGINT
// --threads: the thread_pool the server runs on (default 1: the Node server has one thread for JavaScript).
// The server's options are the defaults, so a call runs as a coroutine (as McpServer runs its tools on its event
// loop): its dispatch options have no approver and no journal. --blocking-calls adds an approver (which these
// read-only tools never ask), so each call holds a caller thread, for the A/B.
// bench_mcp_vs_ts_server_auth (the same source with TOOL_EFFECTS_BENCH_AUTH=1, linked with tool_effects::mcp_auth)
// takes, over HTTP, `--jwt ISSUER AUDIENCE JWKS_URL`: an OAuth resource server (audience = resource) whose tokens
// are JWTs verified by mcp_jwt_verifier (what it costs per call: scripts/bench-auth, docs/benchmarks.md).
// Not a test and not Google Benchmark: a program the driver runs, alternating with the TypeScript server.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include <boost/asio/thread_pool.hpp>

#include <nlohmann/json.hpp>

#include <tool_effects/mcp/server.hpp>
#include <tool_effects/mcp/server_http.hpp>
#ifdef TOOL_EFFECTS_BENCH_AUTH
#include <tool_effects/mcp/auth/jwt.hpp>
#include <tool_effects/mcp/auth/resource_server.hpp>
#endif

namespace te = tool_effects;
using nlohmann::json;

namespace {
struct texts {
  static constexpr std::string_view resource_name = "texts";
};

struct echo {
  static constexpr std::string_view name = "echo";
  static constexpr std::string_view description = "Returns its message.";
  static constexpr std::string_view input_schema =
      R"({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]})";
  using side_effects = te::effects<te::reads<texts>>;
  json operator()(const json& args) const { return args.value("message", std::string()); }
};

struct blob {
  static constexpr std::string_view name = "blob";
  static constexpr std::string_view description = "Returns `bytes` characters of text.";
  static constexpr std::string_view input_schema =
      R"({"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]})";
  using side_effects = te::effects<te::reads<texts>>;
  json operator()(const json& args) const {
    const long long n = std::clamp<long long>(args.value("bytes", 0LL), 0, 64LL << 20);
    static std::mutex m;
    static std::map<long long, std::string> cache;
    std::lock_guard lock(m);
    auto& s = cache[n];
    if (s.size() != static_cast<std::size_t>(n)) {
      const std::string line = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.\n";
      s.clear();
      while (s.size() < static_cast<std::size_t>(n)) s += line;
      s.resize(static_cast<std::size_t>(n));
    }
    return s;
  }
};
static_assert(te::mcp_tool_hints_v<echo>.read_only && te::mcp_tool_hints_v<blob>.read_only);

int usage(const char* what) {
  std::fprintf(stderr, "bench_mcp_vs_ts_server: %s\n", what);
  return 2;
}

// Serves over stdio (port < 0) until stdin closes, else Streamable HTTP on 127.0.0.1:port until SIGTERM or SIGINT.
template <class Server>
int serve(Server& server, int port, const sigset_t& stop, [[maybe_unused]] const std::string& jwt_issuer,
          [[maybe_unused]] const std::string& jwt_audience, [[maybe_unused]] const std::string& jwt_jwks) {
  if (port < 0) {
    server.serve_stdio();
    return 0;
  }
  te::mcp_http_server_options http;
#ifdef TOOL_EFFECTS_BENCH_AUTH
  if (!jwt_jwks.empty()) {
    te::mcp_jwt_verifier verify(
        {.issuer = jwt_issuer, .audience = jwt_audience, .jwks_url = jwt_jwks, .require_https = false});
    if (!verify.prefetch()) return usage("the JWKS could not be fetched");
    http.authorization = te::mcp_resource_server{
        .resource = jwt_audience, .authorization_servers = {jwt_issuer}, .verify_token = verify};
  }
#endif
  server.listen_http("127.0.0.1", static_cast<unsigned short>(port), "/mcp", http);
  std::fprintf(stderr, "listening on %d\n", port);
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t threads = 1;
  int port = -1;
  bool caller_threads = false;
  std::string jwt_issuer, jwt_audience, jwt_jwks;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::stoul(argv[++i]);
    else if (a == "--http" && i + 1 < argc) port = std::stoi(argv[++i]);
    else if (a == "--blocking-calls") caller_threads = true;
#ifdef TOOL_EFFECTS_BENCH_AUTH
    else if (a == "--jwt" && i + 3 < argc) {
      jwt_issuer = argv[++i];
      jwt_audience = argv[++i];
      jwt_jwks = argv[++i];
    }
#endif
    else return usage("usage: [--threads N] [--blocking-calls] [--http PORT [--jwt ISSUER AUDIENCE JWKS_URL]]");
  }
  // SIGTERM and SIGINT are waited for by the main thread (blocked here, before any thread starts).
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  te::tool_registry<echo, blob> registry;
  te::json_tool_host host(registry);
  boost::asio::thread_pool pool(threads);
  const te::mcp_server_options options{.name = "bench-server", .version = "1.0.0"};
  if (caller_threads) {
    const auto approve = [](const te::confirmation_request&) { return te::confirmation::approve; };
    te::mcp_server server(pool, host, options,
                          te::run_options{}.with(te::local_coordinator{}).with(te::approver(approve)));
    return serve(server, port, stop, jwt_issuer, jwt_audience, jwt_jwks);
  }
  te::mcp_server server(pool, host, options);
  return serve(server, port, stop, jwt_issuer, jwt_audience, jwt_jwks);
}
