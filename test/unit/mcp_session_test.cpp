// The role-neutral JSON-RPC session (mcp/protocol/detail/session.hpp) on its own: two
// sessions joined by an in-memory transport, one in the server role (its
// handler answers tools/call, sends progress for it and asks the peer a
// question while it runs, or throws an error response) and one in the client
// role. What issue 28's server builds on, tested without a process or a socket.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <tool_effects/mcp.hpp>

namespace mcp_session_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;
namespace d = tool_effects::detail;
using nlohmann::json;
using std::chrono::milliseconds;

// Carries each message to the peer session's strand, as one text.
class loop_transport final : public d::mcp_transport {
 public:
  std::weak_ptr<d::mcp_session> peer;
  std::vector<std::string> sent;  // on the own strand
  void start(const std::shared_ptr<d::mcp_session>&) override {}
  void send(std::string message, std::int64_t, d::mcp_outgoing) override {
    sent.push_back(message);
    if (auto p = peer.lock()) asio::post(p->strand(), [p, m = std::move(message)] { p->deliver(m); });
  }
  void abandon(std::int64_t) override {}
  void initialized(const std::string&) override {}
  asio::awaitable<void> shutdown() override { co_return; }
  void stop() noexcept override {}
};

struct pair_of_sessions {
  asio::thread_pool pool{2};
  std::shared_ptr<d::mcp_session> server;
  std::shared_ptr<d::mcp_session> client;
  std::shared_ptr<loop_transport> to_client = std::make_shared<loop_transport>();
  std::shared_ptr<loop_transport> to_server = std::make_shared<loop_transport>();
  std::shared_ptr<d::mcp_progress_routes> routes = std::make_shared<d::mcp_progress_routes>();

  explicit pair_of_sessions(std::size_t max_handlers = 4) {
    d::mcp_session_settings s;
    s.name = "server-side";
    s.max_handler_requests = max_handlers;
    server = std::make_shared<d::mcp_session>(asio::make_strand(pool.get_executor()), s);
    d::mcp_session_settings c;
    c.name = "client-side";
    c.progress = routes;
    client = std::make_shared<d::mcp_session>(asio::make_strand(pool.get_executor()), c);
    to_client->peer = client;
    to_server->peer = server;
  }
  void start() {
    server->start(to_client);
    client->start(to_server);
  }
  // A request of the client's, awaited from the test's thread.
  json call(std::string method, json params, milliseconds timeout = milliseconds(5000)) {
    return asio::co_spawn(client->strand(), d::mcp_session::request(client, std::move(method), std::move(params), timeout),
                          asio::use_future)
        .get();
  }
  ~pair_of_sessions() {
    // The sessions hold each other's transports weakly; end both on their strands, then the pool.
    for (auto s : {server, client})
      asio::co_spawn(s->strand(), d::mcp_session::shutdown(s, nullptr), asio::use_future).get();
    pool.join();
  }
};

// The server's handler reports progress for the request it serves and asks the
// client (elicitation/create) while it runs; the client's handler answers; the
// result carries the answer, and the progress reached the caller's token.
TEST(McpSession, AHandlerSendsProgressAndAsksThePeerWhileItRuns) {
  pair_of_sessions p;
  p.server->on_request("tools/call", [](d::mcp_request_context ctx) -> asio::awaitable<json> {
    // (arguments made before the co_await: g++ 12 mishandles braced literals there)
    const std::string note = "half way";
    co_await ctx.progress(0.5, 1.0, note);
    json question = {{"message", "name?"}};
    json answer = co_await ctx.request("elicitation/create", std::move(question), milliseconds(5000));
    co_return json{{"asked", answer}, {"tool", ctx.params["name"]}};
  });
  p.client->on_request("elicitation/create", [](d::mcp_request_context ctx) -> asio::awaitable<json> {
    co_return json{{"action", "accept"}, {"content", {{"said", ctx.params["message"]}}}};
  });
  p.start();
  std::promise<json> progress;
  d::mcp_progress_routes::registration reg(*p.routes, [&](const json& params) { progress.set_value(params); });
  const json r = p.call("tools/call", {{"name", "greet"}, {"_meta", {{"progressToken", reg.token()}}}});
  EXPECT_EQ(r, (json{{"asked", {{"action", "accept"}, {"content", {{"said", "name?"}}}}}, {"tool", "greet"}}));
  auto f = progress.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  const json pr = f.get();
  EXPECT_EQ(pr["progress"], 0.5);
  EXPECT_EQ(pr["total"], 1.0);
  EXPECT_EQ(pr["message"], "half way");
}

// An error response a handler throws reaches the peer as it is (code, message,
// data); anything else it throws is -32603 naming it; a method without a
// handler is -32601; ping is answered {} without one.
TEST(McpSession, AHandlersErrorIsTheResponseAndUnknownMethodsAreRefused) {
  pair_of_sessions p;
  p.server->on_request("tools/call", [](d::mcp_request_context ctx) -> asio::awaitable<json> {
    if (ctx.params.value("name", "") == "bad")
      throw te::mcp_handler_error(-32602, "Invalid params: no such tool", {{"at", "/params/name"}});
    throw std::runtime_error("disk on fire");
    co_return json();
  });
  p.start();
  try {
    (void)p.call("tools/call", {{"name", "bad"}});
    ADD_FAILURE() << "no error";
  } catch (const te::mcp_rpc_error& e) {
    EXPECT_EQ(e.code(), -32602);
    EXPECT_NE(std::string(e.what()).find("Invalid params: no such tool"), std::string::npos) << e.what();
    EXPECT_EQ(e.data(), (json{{"at", "/params/name"}}));
  }
  try {
    (void)p.call("tools/call", {{"name", "other"}});
    ADD_FAILURE() << "no error";
  } catch (const te::mcp_rpc_error& e) {
    EXPECT_EQ(e.code(), -32603);
    EXPECT_NE(std::string(e.what()).find("the handler failed: disk on fire"), std::string::npos) << e.what();
  }
  try {
    (void)p.call("prompts/list", nullptr);
    ADD_FAILURE() << "no error";
  } catch (const te::mcp_rpc_error& e) {
    EXPECT_EQ(e.code(), -32601);
  }
  EXPECT_EQ(p.call("ping", json::object()), json::object());
}

// A role's one method table (on_requests, as mcp_server::bind registers it): its handler serves every method
// the table names, with the request's own method and params; a handler registered for one method comes first
// (a gateway's tools/list over the server's); a method the table does not name is -32601.
TEST(McpSession, ARolesMethodTableServesWhatItNamesAndARegisteredHandlerComesFirst) {
  pair_of_sessions p;
  std::atomic<int> asked{0};
  p.server->on_requests(
      [&](std::string_view m) {
        ++asked;
        return m == "tools/call" || m == "tools/list";
      },
      [](d::mcp_request_context ctx) -> asio::awaitable<json> {
        co_return json{{"table", ctx.method}, {"params", ctx.params}};
      });
  p.server->on_request("tools/list", [](d::mcp_request_context) -> asio::awaitable<json> { co_return json{{"own", true}}; });
  p.start();
  EXPECT_EQ(p.call("tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}}),
            (json{{"table", "tools/call"}, {"params", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}}}}));
  EXPECT_EQ(p.call("tools/list", json::object()), (json{{"own", true}}));
  try {
    (void)p.call("prompts/list", nullptr);
    ADD_FAILURE() << "no error";
  } catch (const te::mcp_rpc_error& e) {
    EXPECT_EQ(e.code(), -32601);
  }
  EXPECT_EQ(asked.load(), 2);  // tools/call and prompts/list: a registered handler is found without the table
}

// Cancellation both ways: a request of the client's that times out sends
// notifications/cancelled, and that cancels the server's running handler (its
// wait ends with operation_aborted long before its 10 s); no response follows.
TEST(McpSession, ATimedOutRequestCancelsThePeersRunningHandler) {
  pair_of_sessions p;
  std::promise<boost::system::error_code> ended;
  p.server->on_request("tools/call", [&ended](d::mcp_request_context) -> asio::awaitable<json> {
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::seconds(10));
    auto [ec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    ended.set_value(ec);
    co_return json::object();
  });
  p.start();
  try {
    (void)p.call("tools/call", {{"name", "slow"}}, milliseconds(200));
    ADD_FAILURE() << "no timeout";
  } catch (const te::mcp_error& e) {
    EXPECT_EQ(e.kind(), te::mcp_error_kind::timeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("cancellation sent"), std::string::npos) << e.what();
  }
  auto f = ended.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready) << "the handler was not cancelled";
  EXPECT_EQ(f.get(), asio::error::operation_aborted);
  EXPECT_EQ(p.client->counters().timeouts.load(), 1U);
}

// A bad message from the peer fails alone: a request the bounded parse refuses
// (too deep) gets -32600 and the session lives on; text that is not JSON ends it.
TEST(McpSession, ABadMessageFailsAloneAndGarbageEndsTheSession) {
  pair_of_sessions p;
  p.start();
  std::string deep = R"({"jsonrpc":"2.0","id":7,"method":"x","params":)";
  for (int i = 0; i < 1000; ++i) deep += '[';
  for (int i = 0; i < 1000; ++i) deep += ']';
  deep += '}';
  asio::co_spawn(p.server->strand(), [&]() -> asio::awaitable<void> {
    p.server->deliver(deep);
    co_return;
  }, asio::use_future).get();
  EXPECT_EQ(p.call("ping", json::object()), json::object());  // the client's own traffic goes on
  // the server answered the deep request with -32600, to the client (which counts it as unknown)
  const auto answered = asio::co_spawn(p.server->strand(), [&]() -> asio::awaitable<bool> {
    for (const auto& m : p.to_client->sent)
      if (m.find("\"id\":7") != std::string::npos && m.find("-32600") != std::string::npos) co_return true;
    co_return false;
  }, asio::use_future).get();
  EXPECT_TRUE(answered);
  asio::co_spawn(p.client->strand(), [&]() -> asio::awaitable<void> {
    p.client->deliver("this is not json");
    co_return;
  }, asio::use_future).get();
  EXPECT_FALSE(p.client->alive());
  try {
    (void)p.call("ping", json::object());
    ADD_FAILURE() << "no error";
  } catch (const te::mcp_error& e) {
    EXPECT_EQ(e.kind(), te::mcp_error_kind::protocol_error) << e.what();
    EXPECT_NE(std::string(e.what()).find("its output is not JSON"), std::string::npos) << e.what();
  }
}

}  // namespace mcp_session_test_ns
