// Throughput of the MCP client through one real server, and its overhead per
// call against a minimal hand-written JSON-RPC loop over the same kind of
// pipe. Server: @modelcontextprotocol/server-filesystem (installed by the
// mcp_servers ctest fixture into build/<preset>/mcp-servers, or
// TOOL_EFFECTS_MCP_SERVERS), tool `list_allowed_directories` (no disk I/O, so
// the numbers are the protocol path: pipe, JSON, the server's dispatch).
//
//   BM_McpClient/inflight:N   N calls in flight at once (async_call on a
//                             2-thread pool), items/s = calls/s
//   BM_HandWrittenLoop        one request line written, one line read and
//                             parsed, blocking, no client at all
//
// The client's overhead per call ~ time/call of BM_McpClient/inflight:1 minus
// that of BM_HandWrittenLoop.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>

#include <tool_effects/mcp.hpp>

namespace te = tool_effects;
using nlohmann::json;

namespace {

std::string server_script() {
  std::string dir;
  if (const char* e = std::getenv("TOOL_EFFECTS_MCP_SERVERS"); e && *e) dir = e;
#ifdef TOOL_EFFECTS_MCP_SERVERS_DIR
  else dir = TOOL_EFFECTS_MCP_SERVERS_DIR;
#endif
  return dir + "/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js";
}

bool have_server(benchmark::State& state) {
  if (te::mcp_find_program("node").empty() || !std::filesystem::exists(server_script())) {
    state.SkipWithError("needs node and server-filesystem (TOOL_EFFECTS_MCP_SERVERS)");
    return false;
  }
  return true;
}

void BM_McpClient(benchmark::State& state) {
  if (!have_server(state)) return;
  const auto inflight = static_cast<int>(state.range(0));
  boost::asio::thread_pool pool(2);
  const auto ws = std::filesystem::temp_directory_path();
  auto client = te::mcp_client::launch(pool, {"node", server_script(), ws.string()});
  std::vector<std::future<json>> results(static_cast<std::size_t>(inflight));
  for (int i = 0; i < 200; ++i) (void)client.call("list_allowed_directories");  // warm the server up
  for (auto _ : state) {
    for (auto& r : results)
      r = boost::asio::co_spawn(pool, client.async_call("list_allowed_directories"), boost::asio::use_future);
    for (auto& r : results) benchmark::DoNotOptimize(r.get());
  }
  state.SetItemsProcessed(state.iterations() * inflight);
  state.counters["us_per_call"] = benchmark::Counter(static_cast<double>(state.iterations() * inflight),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
                                                     benchmark::Counter::kIs1000);
  client.close();
}
BENCHMARK(BM_McpClient)->ArgName("inflight")->Arg(1)->Arg(4)->Arg(16)->UseRealTime()->MinTime(2.0);

// The baseline: the same server, the same pipes (Boost.Process v2), a blocking
// write of one request line and a blocking read of one response line, parsed.
void BM_HandWrittenLoop(benchmark::State& state) {
  if (!have_server(state)) return;
  namespace bp = boost::process::v2;
  boost::asio::io_context ctx;
  boost::asio::writable_pipe in(ctx);
  boost::asio::readable_pipe out(ctx);
  const auto ws = std::filesystem::temp_directory_path();
  bp::process proc(ctx, te::mcp_find_program("node"), {server_script(), ws.string()},
                   bp::process_stdio{in, out, nullptr});
  std::string buf;
  std::int64_t id = 0;
  auto exchange = [&](const std::string& method, const json& params) {
    json msg = {{"jsonrpc", "2.0"}, {"id", ++id}, {"method", method}, {"params", params}};
    const std::string line = msg.dump() + "\n";
    boost::asio::write(in, boost::asio::buffer(line));
    const std::size_t n = boost::asio::read_until(out, boost::asio::dynamic_buffer(buf), '\n');
    json r = json::parse(buf.substr(0, n));
    buf.erase(0, n);
    return r;
  };
  (void)exchange("initialize", {{"protocolVersion", "2025-11-25"},
                                {"capabilities", json::object()},
                                {"clientInfo", {{"name", "bench"}, {"version", "0"}}}});
  const std::string initialized = R"({"jsonrpc":"2.0","method":"notifications/initialized"})" "\n";
  boost::asio::write(in, boost::asio::buffer(initialized));
  const json call = {{"name", "list_allowed_directories"}, {"arguments", json::object()}};
  for (int i = 0; i < 200; ++i) (void)exchange("tools/call", call);
  for (auto _ : state) benchmark::DoNotOptimize(exchange("tools/call", call));
  state.SetItemsProcessed(state.iterations());
  state.counters["us_per_call"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert,
                                                     benchmark::Counter::kIs1000);
  in.close();
  proc.wait();
}
BENCHMARK(BM_HandWrittenLoop)->UseRealTime()->MinTime(2.0);

}  // namespace
