// subscriptions/listen (2026-07-28, basic/patterns/subscriptions; issue 27 point 5): a modern server's change
// notifications reach the client on the stream of a long-lived subscriptions/listen request, which the client
// opens when the server's discover result declares a list change it has a handler for, reopens with the
// transport's backoff (bounded), and drops on close. Against test/mcp/http_server.py --era modern --listen MODE,
// started here and stopped by pid (it logs every request, so the tests read what the client sent), and over
// stdio against test/mcp/fake_server.py --era modern --listen.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>
#include <tool_effects/mcp/http.hpp>

#include "mcp_test_support.hpp"

// Unity-built with the other mcp tests (test/CMakeLists.txt): all below is this file's own.
namespace mcp_listen_test_ns {

namespace te = tool_effects;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// test/mcp/http_server.py --era modern with `flags`; its port once it listens.
struct modern_server {
  explicit modern_server(std::vector<std::string> flags = {}) : dir(mcp_test::scratch_dir("te_mcp_listen")) {
    std::vector<std::string> argv{"python3",   std::string(TOOL_EFFECTS_MCP_TEST_DIR) + "/http_server.py",
                                  "--port-file", (dir / "port").string(),
                                  "--log",       (dir / "log").string(),
                                  "--era",       "modern"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    proc = std::make_unique<mcp_test::server_process>(argv);
    port = mcp_test::port_from(dir / "port", 500);
  }
  ~modern_server() {
    proc.reset();
    fs::remove_all(dir);
  }
  [[nodiscard]] te::mcp_http_endpoint endpoint() const {
    return {.url = "http://127.0.0.1:" + std::to_string(port) + "/mcp"};
  }
  // The subscriptions/listen requests the server got, in order.
  [[nodiscard]] std::vector<json> listens() const {
    std::vector<json> out;
    for (auto& e : mcp_test::json_lines(dir / "log"))
      if (e["rpc"] == "subscriptions/listen") out.push_back(std::move(e));
    return out;
  }
  fs::path dir;
  std::unique_ptr<mcp_test::server_process> proc;
  int port = 0;
};

// Polls `pred` every 10 ms for up to `limit`.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 5s) {
  for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

bool lists(const json& tools, const std::string& name) {
  return std::any_of(tools["tools"].begin(), tools["tools"].end(), [&](const json& t) { return t["name"] == name; });
}

// Closes `c` and joins `pool` in the background: whether both ended within `limit`.
bool closes_within(te::mcp_client& c, boost::asio::thread_pool& pool, std::chrono::milliseconds limit) {
  auto done = std::async(std::launch::async, [&] {
    c.close();
    pool.join();
  });
  const bool in_time = done.wait_for(limit) == std::future_status::ready;
  if (!in_time) pool.stop();
  done.wait();
  return in_time;
}

}  // namespace

// The server declares tools.listChanged: the client opens one subscriptions/listen asking for toolsListChanged
// (with the per-request _meta and Mcp-Method header), the server's notifications/tools/list_changed on it reaches
// on_tools_list_changed, and a listing after it shows the new tool. Control (by hand): with start_listening's
// call in client_state.hpp removed, no listen is sent and the change is never seen (the wait below fails).
TEST(McpListen, AModernServersToolChangeReachesTheClient) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  modern_server s({"--listen", "ok"});
  std::atomic<int> changed{0};
  te::mcp_client_options o;
  o.on_tools_list_changed = [&] { ++changed; };
  auto c = te::mcp_client::connect(pool, s.endpoint(), o);
  EXPECT_FALSE(lists(c.list_tools(), "added"));
  ASSERT_TRUE(eventually([&] { return s.listens().size() == 1; }));
  const json first = s.listens()[0];
  EXPECT_EQ(first["mcp_method"], "subscriptions/listen");
  EXPECT_EQ(first["version"], "2026-07-28");
  EXPECT_EQ(te::mcp_text(c.call("add_tool", json::object())), "added");
  ASSERT_TRUE(eventually([&] { return changed.load() == 1; })) << "no tools/list_changed arrived";
  EXPECT_TRUE(lists(c.list_tools(), "added"));
  EXPECT_EQ(s.listens().size(), 1u);  // one stream, kept open: not reopened
  c.close();
}

// Over stdio the listen shares the channel: the server's list_changed (tagged with the listen's id) reaches
// on_tools_list_changed, and close() ends the child with the listen still open.
TEST(McpListen, OverStdioTheChangeArrivesToo) {
  MCP_REQUIRE_PYTHON();
  const fs::path dir = mcp_test::scratch_dir("te_mcp_listen_stdio");
  const fs::path log = dir / "log";
  boost::asio::thread_pool pool(2);
  std::atomic<int> changed{0};
  te::mcp_client_options o;
  o.on_tools_list_changed = [&] { ++changed; };
  auto c = te::mcp_client::launch(pool, mcp_test::fake_server({"--era", "modern", "--listen", "--log", log.string()}), o);
  const auto listens = [&] {
    std::size_t n = 0;
    for (const auto& m : mcp_test::json_lines(log)) n += m.value("method", "") == "subscriptions/listen";
    return n;
  };
  ASSERT_TRUE(eventually([&] { return listens() == 1; }));
  EXPECT_EQ(te::mcp_text(c.call("change_tools", json::object())), "changed");
  ASSERT_TRUE(eventually([&] { return changed.load() == 1; })) << "no tools/list_changed arrived";
  EXPECT_TRUE(closes_within(c, pool, 10s));
  EXPECT_EQ(listens(), 1u);
  fs::remove_all(dir);
}

// Nothing to listen for, nothing opened: a server that declares no listChanged, or a client without a handler
// for the change the server declares. (The control of both: the test above, where the two meet and one is sent.)
TEST(McpListen, NoListenWithoutACapabilityAndAHandler) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  {
    modern_server s;  // tools: {} in its discover result
    te::mcp_client_options o;
    o.on_tools_list_changed = [] {};
    auto c = te::mcp_client::connect(pool, s.endpoint(), o);
    EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "hi"}})), "hi");
    c.close();
    EXPECT_TRUE(s.listens().empty());
  }
  {
    modern_server s({"--listen", "ok"});
    auto c = te::mcp_client::connect(pool, s.endpoint());
    EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "hi"}})), "hi");
    c.close();
    EXPECT_TRUE(s.listens().empty());
  }
  EXPECT_TRUE(te::detail::mcp_connection::listen_filter({{"capabilities", {{"tools", {{"listChanged", "yes"}}}}}},
                                                        te::mcp_client_options{.on_tools_list_changed = [] {}})
                  .is_null());  // only true declares it
}

// A listen the server refuses every time (HTTP 500): reopened after the endpoint's backoff, at most
// max_reconnects times in a row, then given up with one warning to on_log; the client's requests are served
// all along. Control (by hand): with the bound removed from reopen_delay, the server gets a listen every 100 ms
// for as long as the client lives (the count below grows past 3).
TEST(McpListen, ARefusedListenIsRetriedBoundedlyThenGivenUp) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  modern_server s({"--listen", "fail"});
  std::mutex m;
  std::vector<json> logs;
  te::mcp_client_options o;
  o.on_tools_list_changed = [] {};
  o.on_log = [&](const json& p) {
    const std::lock_guard lock(m);
    logs.push_back(p);
  };
  auto ep = s.endpoint();
  ep.max_reconnects = 2;
  ep.default_retry = 100ms;
  ep.max_retry = 200ms;
  auto c = te::mcp_client::connect(pool, ep, o);
  EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "still here"}})), "still here");
  ASSERT_TRUE(eventually([&] {
    const std::lock_guard lock(m);
    return !logs.empty();
  }));
  std::this_thread::sleep_for(500ms);  // more than the backoff would wait before another try
  EXPECT_EQ(s.listens().size(), 3u);   // the first and two reopenings
  {
    const std::lock_guard lock(m);
    ASSERT_EQ(logs.size(), 1u);
    EXPECT_EQ(logs[0]["level"], "warning");
    EXPECT_EQ(logs[0]["logger"], "tool_effects/mcp");
    const std::string text = logs[0]["data"].get<std::string>();
    EXPECT_EQ(text.rfind("subscriptions/listen given up: it ended 3 times in a row without the server's "
                         "acknowledgement",
                         0),
              0u)
        << text;
    EXPECT_NE(text.find("HTTP 500"), std::string::npos) << text;  // the last failure, quoted
  }
  EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "after"}})), "after");
  c.close();
}

// A stream that is acknowledged and then ends (a server that closes it, an intermediary's timeout) is reopened
// after the backoff each time: an acknowledged stream resets the count, so it is not given up, and the backoff
// keeps the rate down (about one per default_retry here, not a storm).
TEST(McpListen, AnAcknowledgedStreamThatEndsIsReopenedAtTheBackoffsPace) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  modern_server s({"--listen", "end"});
  te::mcp_client_options o;
  o.on_tools_list_changed = [] {};
  auto ep = s.endpoint();
  ep.max_reconnects = 1;
  ep.default_retry = 100ms;
  auto c = te::mcp_client::connect(pool, ep, o);
  ASSERT_TRUE(eventually([&] { return s.listens().size() >= 4; }));  // past max_reconnects: not given up
  std::this_thread::sleep_for(300ms);
  const auto n = s.listens().size();
  EXPECT_LE(n, 12u);  // ~1 s at >= 100 ms each
  EXPECT_EQ(te::mcp_text(c.call("echo", {{"text", "hi"}})), "hi");
  c.close();
}

// close() with a listen open returns at once and leaves nothing behind on the executor (the pool joins): the
// listen's request fails with the session and its stream is closed. With a listen waiting out its backoff
// (30 s here), the same: close cancels the wait. Control (by hand): without listen_timer_.cancel() in
// stop_listening, the second close's pool.join waits the 30 s out and the 10 s bound below fails.
TEST(McpListen, CloseReturnsPromptlyWithAListenOpenOrWaiting) {
  MCP_REQUIRE_PYTHON();
  {
    boost::asio::thread_pool pool(2);
    modern_server s({"--listen", "ok"});
    te::mcp_client_options o;
    o.on_tools_list_changed = [] {};
    auto c = te::mcp_client::connect(pool, s.endpoint(), o);
    ASSERT_TRUE(eventually([&] { return s.listens().size() == 1; }));
    EXPECT_TRUE(closes_within(c, pool, 10s));
  }
  {
    boost::asio::thread_pool pool(2);
    modern_server s({"--listen", "fail"});
    te::mcp_client_options o;
    o.on_tools_list_changed = [] {};
    auto ep = s.endpoint();
    ep.default_retry = 30s;
    auto c = te::mcp_client::connect(pool, ep, o);
    ASSERT_TRUE(eventually([&] { return s.listens().size() == 1; }));
    std::this_thread::sleep_for(100ms);  // its 500 came: the backoff runs
    EXPECT_TRUE(closes_within(c, pool, 10s));
    EXPECT_EQ(s.listens().size(), 1u);
  }
}

}  // namespace mcp_listen_test_ns
