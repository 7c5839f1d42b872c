// The awaitable form of the client's handlers (mcp_handler in
// mcp/capabilities.hpp) against test/mcp/fake_server.py: a handler that
// returns boost::asio::awaitable holds no thread while it waits (the control:
// the same wait in a synchronous handler holds the only thread of the pool,
// and a call behind it waits for it), and it is cancelled when its request
// ends without it — at handler_timeout, or when the server cancels the
// request.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <tool_effects/mcp.hpp>

#include "mcp_test_support.hpp"

namespace mcp_async_handlers_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {

using mcp_test::response_of;
using mcp_test::error_code;

// Waits (at most `limit`) until `flag` is set; true if it was.
bool eventually(const std::atomic<bool>& flag, milliseconds limit = milliseconds(10000)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!flag.load() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(milliseconds(5));
  return flag.load();
}

// An awaitable elicitation handler that waits on a timer of `wait` and
// reports how the wait ended; it answers decline.
struct waiting_handler {
  milliseconds wait;
  std::atomic<bool> started{false}, ended{false}, aborted{false};

  te::mcp_elicitation_handler handler() {
    return [this](const te::mcp_elicitation_request&) -> asio::awaitable<te::mcp_elicitation_response> {
      started = true;
      asio::steady_timer t(co_await asio::this_coro::executor, wait);
      auto [ec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
      aborted = ec == asio::error::operation_aborted;
      ended = true;
      co_return te::mcp_elicitation_response::decline();
    };
  }
};

}  // namespace

TEST(McpAsyncHandlers, AnAwaitableHandlerHoldsNoThreadWhileItWaits) {
  MCP_REQUIRE_PYTHON();
  for (const bool awaitable : {false, true}) {
    SCOPED_TRACE(awaitable ? "awaitable handler" : "synchronous handler (control)");
    asio::thread_pool pool(1);  // one thread: a handler that blocks it blocks the client
    std::atomic<bool> started{false}, returned{false};
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    auto o = mcp_test::fast_options(std::chrono::seconds(20));
    if (awaitable) {
      o.on_elicitation = [&](const te::mcp_elicitation_request&) -> asio::awaitable<te::mcp_elicitation_response> {
        started = true;
        asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::seconds(2));
        (void)co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        returned = true;
        co_return te::mcp_elicitation_response::decline();
      };
    } else {
      o.on_elicitation = [&](const te::mcp_elicitation_request&) {
        started = true;
        (void)released.wait_for(std::chrono::seconds(2));
        returned = true;
        return te::mcp_elicitation_response::decline();
      };
    }
    auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
    auto pending = std::async(std::launch::async, [&] { return response_of(client.call("elicit")); });
    ASSERT_TRUE(eventually(started));
    const json echoed = client.call("echo", {{"text", "meanwhile"}});
    EXPECT_EQ(echoed["structuredContent"]["text"], "meanwhile");
    // Awaitable: the call was served while the handler waited. Synchronous: only after it returned.
    EXPECT_EQ(returned.load(), !awaitable);
    release.set_value();
    EXPECT_EQ(error_code(pending.get()), 0);
    client.close();
  }
}

TEST(McpAsyncHandlers, AnAwaitableHandlerIsCancelledAtTheTimeout) {
  MCP_REQUIRE_PYTHON();
  asio::thread_pool pool(2);
  auto o = mcp_test::fast_options(std::chrono::seconds(20));
  o.handler_timeout = milliseconds(300);
  waiting_handler slow{std::chrono::seconds(30)};
  o.on_elicitation = slow.handler();
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  const json late = response_of(client.call("elicit"));
  EXPECT_EQ(error_code(late), -32603) << late;
  ASSERT_TRUE(eventually(slow.ended)) << "the handler was not cancelled: it still waits on its 30 s timer";
  EXPECT_TRUE(slow.aborted.load());

  // Control: a handler within the timeout is not cancelled.
  waiting_handler quick{milliseconds(10)};
  auto o2 = o;
  o2.on_elicitation = quick.handler();
  auto client2 = te::mcp_client::launch(pool, mcp_test::fake_server(), o2);
  const json answered = response_of(client2.call("elicit"));
  EXPECT_EQ(answered["result"]["action"], "decline") << answered;
  EXPECT_TRUE(quick.ended.load());
  EXPECT_FALSE(quick.aborted.load());
  client.close();
  client2.close();
}

TEST(McpAsyncHandlers, ARequestTheServerCancelsCancelsItsAwaitableHandler) {
  MCP_REQUIRE_PYTHON();
  asio::thread_pool pool(2);
  auto o = mcp_test::fast_options(std::chrono::seconds(20));
  waiting_handler slow{std::chrono::seconds(30)};
  o.on_elicitation = slow.handler();
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  // The server cancels its elicitation after 100 ms and waits 1.5 s for an answer (none may come).
  const json none = response_of(client.call("cancel_elicit", {{"ms", 100}}));
  EXPECT_TRUE(none.is_null()) << none;
  ASSERT_TRUE(eventually(slow.ended));
  EXPECT_TRUE(slow.aborted.load());
  client.close();
}

TEST(McpAsyncHandlers, SamplingAndAModernServersInputTakeTheAwaitableForm) {
  MCP_REQUIRE_PYTHON();
  asio::thread_pool pool(2);
  auto o = mcp_test::fast_options(std::chrono::seconds(20));
  o.on_sampling = [](const te::mcp_sampling_request& r) -> asio::awaitable<json> {
    asio::steady_timer t(co_await asio::this_coro::executor, milliseconds(20));
    (void)co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    co_return json{{"role", "assistant"},
                   {"content", {{"type", "text"}, {"text", "max " + r.params["maxTokens"].dump()}}},
                   {"model", "awaited"}};
  };
  auto client = te::mcp_client::launch(pool, mcp_test::fake_server(), o);
  const json sampled = response_of(client.call("sample"));
  EXPECT_EQ(sampled["result"]["content"]["text"], "max 100") << sampled;
  client.close();

  auto modern = o;
  modern.protocol_versions = {"2026-07-28"};
  auto m = te::mcp_client::launch(pool, mcp_test::fake_server({"--era", "modern"}), modern);
  const json r = m.call("mrtr", {{"kind", "sample"}});
  EXPECT_EQ(r["structuredContent"]["inputResponses"]["model"]["model"], "awaited") << r;
  m.close();
}

}  // namespace mcp_async_handlers_test_ns
