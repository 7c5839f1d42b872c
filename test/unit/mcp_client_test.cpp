// The MCP client against test/mcp/fake_server.py, a server that misbehaves on
// request: handshake and version negotiation, pagination, many calls in
// flight, server-initiated requests and notifications, and every fault
// (hang, crash mid-call, garbage, oversize line, unknown ids) ending in an
// outcome, never a hang.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <tool_effects/mcp.hpp>

#include "mcp_test_support.hpp"

namespace te = tool_effects;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {

te::mcp_client_options fast_options() { return mcp_test::fast_options(); }

using mcp_test::error_kind;

}  // namespace

TEST(McpClient, HandshakeNegotiatesTheNewestVersionAndListsEveryPage) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  EXPECT_EQ(client.name(), "fake");  // serverInfo.name (issue 21 point 5)
  EXPECT_EQ(client.protocol_version(), "2025-11-25");
  EXPECT_EQ(client.server_info()["serverInfo"]["name"], "fake");
  const json tools = client.list_tools();
  ASSERT_EQ(tools["tools"].size(), 13U);  // two pages
  EXPECT_EQ(tools["tools"][0]["name"], "echo");
  EXPECT_EQ(tools["tools"][12]["name"], "notify");
  client.ping();
  const json r = client.call("echo", {{"text", "hello"}});
  EXPECT_EQ(te::mcp_text(r), "hello");
  EXPECT_EQ(r["structuredContent"]["text"], "hello");
  EXPECT_GT(client.pid(), 0);
  client.close();
}

TEST(McpClient, AcceptsTheOlderVersionAndRefusesAnUnknownOne) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto older = te::mcp_client::launch(pool, mcp_test::fake_server({"--version", "2025-06-18"}), fast_options());
  EXPECT_EQ(older.protocol_version(), "2025-06-18");
  older.close();
  std::string what;
  EXPECT_EQ(error_kind([&] { (void)te::mcp_client::launch(pool, mcp_test::fake_server({"--version", "1999-01-01"}),
                                                          fast_options()); },
                       &what),
            "unsupported_protocol_version");
  EXPECT_NE(what.find("\"1999-01-01\""), std::string::npos) << what;
  EXPECT_NE(what.find("2025-11-25 2025-06-18"), std::string::npos) << what;
}

TEST(McpClient, ManyCallsInFlightAtOnce) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::future<json>> results;
  for (int i = 0; i < 16; ++i)
    results.push_back(boost::asio::co_spawn(pool, client.async_call("slow", {{"ms", 300}, {"text", std::to_string(i)}}),
                                            boost::asio::use_future));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(te::mcp_text(results[i].get()), std::to_string(i));
  // Sequentially 16 * 300 ms = 4.8 s; in flight together, about 300 ms.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(3000));
}

TEST(McpClient, ToolErrorAndRpcErrorAreNotTransient) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  try {
    (void)client.call("fail");
    FAIL() << "no error";
  } catch (const te::mcp_tool_error& e) {
    EXPECT_NE(std::string(e.what()).find("the fake tool failed on purpose"), std::string::npos) << e.what();
    EXPECT_EQ(e.result()["isError"], true);
    EXPECT_FALSE(te::mcp_transient()(std::current_exception()));
  }
  try {
    (void)client.call("no_such_tool");
    FAIL() << "no error";
  } catch (const te::mcp_rpc_error& e) {
    EXPECT_EQ(e.code(), -32602);
    EXPECT_FALSE(te::mcp_transient()(std::current_exception()));
  }
}

TEST(McpClient, TimeoutSendsCancellationAndFailsTransiently) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)client.call("hang", json::object(), milliseconds(200));
    FAIL() << "no error";
  } catch (const te::mcp_transient_error& e) {
    EXPECT_EQ(e.kind(), te::mcp_error_kind::timeout);
    EXPECT_TRUE(te::mcp_transient()(std::current_exception()));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(client.timeouts(), 1U);
  EXPECT_EQ(te::mcp_text(client.call("echo", {{"text", "still here"}})), "still here");
}

TEST(McpClient, CrashMidCallFailsEveryPendingCallThenRestarts) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  const int first_pid = client.pid();
  std::vector<std::future<json>> pending;
  for (int i = 0; i < 5; ++i)
    pending.push_back(boost::asio::co_spawn(pool, client.async_call("slow", {{"ms", 5000}}), boost::asio::use_future));
  pending.push_back(boost::asio::co_spawn(pool, client.async_call("hang"), boost::asio::use_future));
  std::this_thread::sleep_for(milliseconds(100));
  std::string what;
  EXPECT_EQ(error_kind([&] { (void)client.call("crash"); }, &what), "server_exited");
  EXPECT_NE(what.find("exited with status 3"), std::string::npos) << what;
  EXPECT_NE(what.find("crashing on purpose"), std::string::npos) << what;
  EXPECT_NE(what.find("\"fake\""), std::string::npos) << what;
  for (auto& f : pending) EXPECT_EQ(error_kind([&] { (void)f.get(); }), "server_exited");
  // The next call restarts the server.
  EXPECT_EQ(te::mcp_text(client.call("echo", {{"text", "back"}})), "back");
  EXPECT_EQ(client.restarts(), 1U);
  EXPECT_NE(client.pid(), first_pid);
}

TEST(McpClient, GarbageIsAProtocolErrorForEveryPendingCall) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  auto pending = boost::asio::co_spawn(pool, client.async_call("hang"), boost::asio::use_future);
  std::this_thread::sleep_for(milliseconds(50));
  std::string what;
  EXPECT_EQ(error_kind([&] { (void)client.call("garbage"); }, &what), "protocol_error");
  EXPECT_NE(what.find("this is not JSON {"), std::string::npos) << what;
  EXPECT_EQ(error_kind([&] { (void)pending.get(); }), "protocol_error");
  EXPECT_EQ(te::mcp_text(client.call("echo", {{"text", "recovered"}})), "recovered");
}

TEST(McpClient, GarbageBeforeTheHandshakeFailsTheLaunch) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto o = fast_options();
  o.restart_on_exit = false;
  std::string what;
  EXPECT_EQ(error_kind([&] { (void)te::mcp_client::launch(pool, mcp_test::fake_server({"--garbage-on-start"}), o); },
                       &what),
            "protocol_error");
  EXPECT_EQ(error_kind([&] { (void)te::mcp_client::launch(pool, mcp_test::fake_server({"--die-on-start"}), o); },
                       &what),
            "server_exited");
  EXPECT_NE(what.find("dying on start"), std::string::npos) << what;
  EXPECT_EQ(error_kind([&] { (void)te::mcp_client::launch(pool, {"no-such-program-for-mcp"}, o); }), "launch_failed");
}

TEST(McpClient, OversizeLineIsAProtocolErrorUnderTheLimitItIsFine) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto o = fast_options();
  o.max_line_bytes = 256 * 1024;
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  EXPECT_EQ(te::mcp_text(client.call("huge", {{"bytes", 200000}})).size(), 200000U);
  std::string what;
  EXPECT_EQ(error_kind([&] { (void)client.call("huge", {{"bytes", 1000000}}); }, &what), "protocol_error");
  EXPECT_NE(what.find("exceeds the limit of 262144 bytes"), std::string::npos) << what;
  EXPECT_EQ(te::mcp_text(client.call("echo", {{"text", "ok"}})), "ok");
}

TEST(McpClient, UnknownResponseIdsAreIgnored) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  EXPECT_EQ(te::mcp_text(client.call("wrong_id")), "right id");
  EXPECT_EQ(client.unknown_responses(), 2U);
}

TEST(McpClient, AnswersPingAndRefusesOtherServerRequests) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  EXPECT_EQ(te::mcp_text(client.call("ping_me")), "pong");
  EXPECT_EQ(te::mcp_text(client.call("ask_unknown")), "-32601");
}

TEST(McpClient, NotificationsReachTheirHandlers) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  std::atomic<int> list_changed{0}, logs{0}, progress{0};
  auto o = fast_options();
  o.on_tools_list_changed = [&] { ++list_changed; };
  o.on_log = [&](const json& p) {
    if (p["data"] == "hello from the fake") ++logs;
  };
  o.on_progress = [&](const json& p) {
    if (p["total"] == 2) ++progress;
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  EXPECT_EQ(te::mcp_text(client.call("notify")), "notified");  // notifications come before the response
  EXPECT_EQ(list_changed.load(), 1);
  EXPECT_EQ(logs.load(), 1);
  EXPECT_EQ(progress.load(), 1);
}

// server_info(), protocol_version() and restarts() read a snapshot: they work
// anywhere, even in a notification handler, which runs on the client's own
// strand, where a blocking member throws std::logic_error (the control).
TEST(McpClient, InfoReadsAreCheapEvenOnTheClientsOwnStrand) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto o = fast_options();
  te::mcp_client* self = nullptr;
  std::promise<std::string> seen;
  o.on_tools_list_changed = [&] {
    std::string blocking = "no error";
    try {
      self->ping();
    } catch (const std::logic_error& e) {
      blocking = e.what();
    }
    seen.set_value(self->protocol_version() + " " + std::to_string(self->restarts()) + " " +
                   self->server_info()["serverInfo"]["name"].get<std::string>() + " | " + blocking);
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  self = &client;
  EXPECT_EQ(te::mcp_text(client.call("notify")), "notified");
  auto f = seen.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  const std::string got = f.get();
  EXPECT_EQ(got.substr(0, got.find(" | ")), "2025-11-25 0 fake");
  EXPECT_NE(got.find("tool_effects::mcp_client: blocking call from a thread that runs its executor"),
            std::string::npos)
      << got;
  EXPECT_EQ(client.server_info()["protocolVersion"], "2025-11-25");
  client.close();
}

TEST(McpClient, CloseFailsPendingCallsAndLaterOnes) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), fast_options());
  auto pending = boost::asio::co_spawn(pool, client.async_call("hang"), boost::asio::use_future);
  std::this_thread::sleep_for(milliseconds(50));
  const auto start = std::chrono::steady_clock::now();
  client.close();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(error_kind([&] { (void)pending.get(); }), "closed");
  EXPECT_EQ(error_kind([&] { (void)client.call("echo"); }), "closed");
  // The server saw its stdin close and exited on its own.
  const auto tail = client.stderr_tail();
  ASSERT_FALSE(tail.empty());
  EXPECT_EQ(tail.back(), "fake server: stdin closed, exiting");
}

TEST(McpClient, RestartsAreBounded) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto o = fast_options();
  o.max_restarts = 1;
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  EXPECT_EQ(error_kind([&] { (void)client.call("crash"); }), "server_exited");
  EXPECT_EQ(error_kind([&] { (void)client.call("crash"); }), "server_exited");  // after the one restart
  EXPECT_EQ(error_kind([&] { (void)client.call("echo"); }), "server_exited");   // no more restarts
  EXPECT_EQ(client.restarts(), 1U);
}
