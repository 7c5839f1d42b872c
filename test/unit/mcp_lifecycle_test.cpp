// Issue 21 point 5 against test/mcp/fake_server.py (python only, no database):
// a client is named after the server's serverInfo.name unless the user named
// it; mcp_close_all closes several clients and start_close does not block.
// The timing side (SIGTERM when a server shows no sign of exiting) runs on
// server-redis in mcp_newcomer_test.cpp.
#include <gtest/gtest.h>

#include <csignal>
#include <future>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include <tool_effects/mcp.hpp>

#include "mcp_test_support.hpp"

// Unity-built with the other mcp tests (test/CMakeLists.txt): all below is this file's own.
namespace mcp_lifecycle_test_ns {

namespace te = tool_effects;
using nlohmann::json;

namespace {
te::mcp_client_options options() { return mcp_test::fast_options(); }

te::mcp_error_kind kind_of_call(te::mcp_client& c) {
  try {
    (void)c.call("echo", json{{"text", "x"}});
  } catch (const te::mcp_error& e) {
    return e.kind();
  }
  return te::mcp_error_kind::tool_error;  // no error: not `closed`, which is what the tests expect
}
}  // namespace

TEST(McpLifecycle, AClientIsNamedAfterTheServerUnlessTheUserNamedIt) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  te::mcp_client unstarted(pool, mcp_test::fake_server(), options());
  EXPECT_EQ(unstarted.name(), "fake_server.py") << "before the first initialize: from argv";
  unstarted.start();
  EXPECT_EQ(unstarted.name(), "fake") << "then the server's serverInfo.name";
  auto o = options();
  o.name = "mine";
  auto named = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  EXPECT_EQ(named.name(), "mine");
  te::mcp_close_all(unstarted, named);
}

TEST(McpLifecycle, CloseAllClosesEveryClient) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  std::vector<te::mcp_client> clients;
  std::vector<int> pids;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(te::mcp_client::launch(pool, mcp_test::fake_server(), options()));
    pids.push_back(clients.back().pid());
    EXPECT_EQ(te::mcp_text(clients.back().call("echo", json{{"text", "up"}})), "up");
  }
  te::mcp_close_all(clients);
  for (std::size_t i = 0; i < clients.size(); ++i) {
    EXPECT_EQ(kind_of_call(clients[i]), te::mcp_error_kind::closed) << i;
    EXPECT_NE(::kill(pids[i], 0), 0) << "server " << i << " is gone";
  }
  te::mcp_close_all(clients);  // closing twice is harmless
}

TEST(McpLifecycle, StartCloseReturnsAtOnceAndItsFutureEndsTheServer) {
  MCP_REQUIRE_PYTHON();
  boost::asio::thread_pool pool(2);
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), options());
  const int pid = client.pid();
  // The control: before the close, calls work.
  EXPECT_EQ(te::mcp_text(client.call("echo", json{{"text", "before"}})), "before");
  std::future<void> closing = client.start_close();
  closing.get();
  EXPECT_EQ(kind_of_call(client), te::mcp_error_kind::closed);
  EXPECT_NE(::kill(pid, 0), 0);
}

}  // namespace mcp_lifecycle_test_ns
