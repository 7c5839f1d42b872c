// The bound on a tool's log messages per call (mcp_server_options::max_log_messages): past it the messages are
// dropped and one warning after the call, before its response, says how many; the count starts again with each
// call, and only messages at or above the session's level count. Over stdio with a raw pipe peer.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include <tool_effects/mcp/host.hpp>
#include <tool_effects/mcp/server.hpp>

#include "mcp_test_support.hpp"

// Unity-built with the other mcp tests (test/CMakeLists.txt): all below is this file's own.
namespace mcp_server_log_bound_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {

struct chatter : te::resource<> {
  static constexpr std::string_view resource_name = "chatter";
};
// Logs `n` info messages "m0", "m1", ... and one debug message.
struct noisy {
  static constexpr std::string_view name = "noisy";
  using side_effects = te::effects<te::reads<chatter>>;
  json operator()(const te::attempt_context& ctx, const json& args) const {
    const int n = args.value("n", 0);
    for (int i = 0; i < n; ++i) ctx.report_log("info", "m" + std::to_string(i));
    ctx.report_log("debug", "quiet");
    return "done";
  }
};
using host_type = te::json_tool_host<noisy>;

// The notifications/message data before the response to `id`, and that response.
std::pair<std::vector<json>, json> logs_until(mcp_test::pipe_peer& peer, int id) {
  std::vector<json> logs;
  for (;;) {
    json m = peer.next();
    if (m.is_null()) return {logs, m};
    if (m.value("method", "") == "notifications/message") logs.push_back(m["params"]);
    if (m.contains("id") && m["id"] == id) return {logs, m};
  }
}
json info(const std::string& data) { return {{"level", "info"}, {"logger", "noisy"}, {"data", data}}; }

}  // namespace

// Bound 4: ten info messages give the first four and one warning counting the other six (the debug message is
// over the bound too when the session's level lets it through). Per call: the next call gets its four again. At
// level warning the info messages do not pass, so nothing is dropped and no warning comes. (Control checked by
// hand: without the bound in mcp_request_reporter::log every message comes through and the first expectation
// fails.)
TEST(McpServerLogBound, MessagesPastTheBoundAreDroppedAndCountedOnce) {
  te::tool_registry<noisy> reg;
  host_type host(reg);
  boost::asio::thread_pool pool(2);
  {
    te::mcp_server_options o;
    o.max_log_messages = 4;
    te::mcp_server<host_type> server(pool, host, o);
    mcp_test::pipe_peer peer;
    std::thread serving([&] { server.serve_fds(peer.to_server[0], peer.from_server[1]); });
    peer.initialize();
    const std::vector<json> four{info("m0"), info("m1"), info("m2"), info("m3")};
    auto dropped = [](int n) {
      return json{{"level", "warning"},
                  {"logger", "noisy"},
                  {"data", std::to_string(n) +
                               " log message(s) of this call dropped past the bound of 4 per call (max_log_messages)"}};
    };
    for (int id : {2, 3}) {
      peer.send(mcp_test::rpc(id, "tools/call", {{"name", "noisy"}, {"arguments", {{"n", 10}}}}));
      auto [logs, response] = logs_until(peer, id);
      std::vector<json> want = four;
      want.push_back(dropped(7));  // six info messages and the debug one (every level until one is set)
      EXPECT_EQ(logs, want) << "call " << id;
      EXPECT_EQ(response["result"]["content"][0]["text"], "done");
    }
    // Under the bound: everything, no warning.
    peer.send(mcp_test::rpc(4, "tools/call", {{"name", "noisy"}, {"arguments", {{"n", 3}}}}));
    EXPECT_EQ(logs_until(peer, 4).first,
              (std::vector<json>{info("m0"), info("m1"), info("m2"),
                                 {{"level", "debug"}, {"logger", "noisy"}, {"data", "quiet"}}}));
    // At level warning nothing passes, so nothing counts.
    peer.send(mcp_test::rpc(5, "logging/setLevel", {{"level", "warning"}}));
    EXPECT_EQ(logs_until(peer, 5).second["result"], json::object());
    peer.send(mcp_test::rpc(6, "tools/call", {{"name", "noisy"}, {"arguments", {{"n", 10}}}}));
    EXPECT_TRUE(logs_until(peer, 6).first.empty());
    peer.close_input();
    serving.join();
  }
  pool.join();
}

}  // namespace mcp_server_log_bound_test_ns
