// This project's MCP client in the side-by-side benchmark against the official TypeScript SDK client
// (scripts/bench-mcp-vs-ts, docs/benchmarks.md "The MCP client against the TypeScript SDK"). Same protocol
// work as client.mjs: connect, list tools, warm up, then batches of `concurrency` tools/call in flight at once,
// each batch waiting for the last. Two paths:
//   raw   mcp_client::async_call, co_spawned `concurrency` at a time
//   host  json_tool_host::run of a turn of `concurrency` calls, the tools registered with add_mcp_server
//         (trusted annotations: the server's tools are read-only, so a turn runs all its calls at once)
// Prints one JSON line: calls, result bytes, wall seconds, this process's CPU seconds (getrusage RUSAGE_SELF,
// user + system: the server is another process and is not counted) over the timed part, peak RSS (kB, VmHWM).
//
//   bench_mcp_vs_ts_client --path host --transport stdio --server "node server.mjs" --tool blob --bytes 1048576
//   bench_mcp_vs_ts_client --path raw --transport http --url http://127.0.0.1:PORT/mcp --concurrency 16
// Options: --context pool|io (the client's execution context: a thread_pool, the default, or an io_context run
// by one thread), --threads N (the thread_pool, default 1), --calls N, --warmup N, --idle N (HTTP: the endpoint's
// max_idle_connections; default: the library's).
// bench_mcp_vs_ts_client_boost_json is the same program built with TOOL_EFFECTS_JSON_BOOST_PARSER=1 (the
// optional Boost.JSON lexer of parse_untrusted_json, json/detail/boost_json_parse.hpp), and
// bench_mcp_vs_ts_client_nlohmann with TOOL_EFFECTS_JSON_FAST_PARSER=0 (nlohmann's lexer only).
// Not a test and not Google Benchmark: a program the driver runs, alternating with the TS SDK client.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#if defined(TOOL_EFFECTS_JSON_BOOST_PARSER) && TOOL_EFFECTS_JSON_BOOST_PARSER
#include <boost/json/src.hpp>  // bench_mcp_vs_ts_client_boost_json: Boost.JSON's compiled part, in this one TU
#endif
#include <tool_effects/json.hpp>
#include <tool_effects/mcp.hpp>
#include <tool_effects/mcp/http.hpp>

namespace te = tool_effects;
using nlohmann::json;

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// VmHWM of /proc/self/status: the peak RSS of this program (getrusage's ru_maxrss survives exec, so it
// would report the driver's peak when that is larger).
long peak_rss_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::size_t text_size(const json& result) {
  const auto& c = result.at("content");
  return c.at(0).at("text").get_ref<const std::string&>().size();
}

int usage(const char* what) {
  std::fprintf(stderr, "bench_mcp_vs_ts_client: %s\n", what);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> opt{{"path", "raw"},  {"transport", "stdio"}, {"tool", "echo"},
                                         {"bytes", "0"},   {"concurrency", "1"},   {"calls", "1000"},
                                         {"warmup", "50"}, {"threads", "1"},       {"context", "pool"}};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k.rfind("--", 0) != 0) return usage("options are --name value pairs");
    opt[k.substr(2)] = argv[i + 1];
  }
  const std::size_t concurrency = std::stoul(opt["concurrency"]);
  const std::size_t calls = std::stoul(opt["calls"]);
  const std::size_t warmup = std::stoul(opt["warmup"]);
  const bool host_path = opt["path"] == "host";
  if (!host_path && opt["path"] != "raw") return usage("--path raw|host");
  if (concurrency == 0) return usage("--concurrency must be at least 1");

  // The body, on `pool`: the thread_pool (default) or, with --context io, an io_context run by one thread.
  auto body = [&](auto& pool) -> int {
    te::mcp_client client = [&] {
      if (opt["transport"] == "http") {
        te::mcp_http_endpoint ep{.url = opt["url"]};
        if (!opt["idle"].empty()) ep.max_idle_connections = std::stoul(opt["idle"]);
        if (!opt["bearer"].empty()) ep.headers["Authorization"] = "Bearer " + opt["bearer"];
        return te::mcp_client::connect(pool, ep);
      }
      return te::mcp_client::launch(pool, split(opt["server"]));
    }();
    const json arguments =
        opt["tool"] == "blob" ? json{{"bytes", std::stoll(opt["bytes"])}} : json{{"message", "hello, benchmark"}};

    te::tool_registry<> registry;
    te::json_tool_host<> host(registry);
    if (host_path)
      (void)te::add_mcp_server(host, client, te::server_trust::trusted);
    else
      (void)client.list_tools();

    std::size_t turn = 0;
    // One batch of n calls in flight at once; returns the bytes of text they brought.
    auto batch = [&](std::size_t n) -> std::size_t {
      std::size_t bytes = 0;
      if (host_path) {
        std::vector<te::tool_call> turn_calls(n);
        for (std::size_t k = 0; k < n; ++k)
          turn_calls[k] = te::tool_call{"c" + std::to_string(k), opt["tool"], arguments};
        auto out = host.run(pool, te::run_options{}, turn_calls, "turn-" + std::to_string(++turn));
        for (auto& o : out) {
          if (!o.has_value()) std::rethrow_exception(o.error());
          bytes += text_size(o.value());
        }
      } else {
        std::vector<std::future<json>> f;
        f.reserve(n);
        for (std::size_t k = 0; k < n; ++k)
          f.push_back(boost::asio::co_spawn(pool, client.async_call(opt["tool"], arguments), boost::asio::use_future));
        for (auto& r : f) bytes += text_size(r.get());
      }
      return bytes;
    };

    for (std::size_t i = 0; i < warmup; ++i) (void)batch(1);
    const double cpu0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    std::size_t done = 0, bytes = 0;
    while (done < calls) {
      const std::size_t n = std::min(concurrency, calls - done);
      bytes += batch(n);
      done += n;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    const long rss = peak_rss_kb();
    client.close();
#if defined(TOOL_EFFECTS_JSON_BOOST_PARSER) && TOOL_EFFECTS_JSON_BOOST_PARSER
    opt["path"] += "+boost.json";
#endif
    std::printf(R"({"client":"cpp-%s","calls":%zu,"bytes":%zu,"wall_s":%.6f,"cpu_s":%.6f,"maxrss_kb":%ld})"
                "\n",
                opt["path"].c_str(), done, bytes, wall, cpu, rss);
    return 0;
  };
  if (opt["context"] == "io") {
    boost::asio::io_context io(1);
    auto guard = boost::asio::make_work_guard(io);
    std::thread runner([&] { io.run(); });
    const int rc = body(io);
    guard.reset();
    runner.join();
    return rc;
  }
  if (opt["context"] != "pool") return usage("--context pool|io");
  boost::asio::thread_pool pool(std::stoul(opt["threads"]));
  return body(pool);
}
