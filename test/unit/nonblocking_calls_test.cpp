// mcp_server_options::nonblocking_calls: a tools/call runs as a coroutine on the server's executor, with no
// caller thread, under the same coordinator and the same bound of calls at once. Each test has its control:
// the same server without the option (or without the coordinator).
#include <atomic>
#include <cstdint>
#include <optional>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <tool_effects/json.hpp>
#include <tool_effects/mcp/server.hpp>

namespace te = tool_effects;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

// A coordinator that grants every call at once (the control of the lost-update test).
struct no_coordination {
  struct grant_type {
    std::uint64_t fencing_token() const { return 0; }
    bool held() const { return false; }
    void release() {}
  };
  template <class Handler>
  void async_acquire(const te::call_description&, te::acquire_options, Handler&& h) const {
    auto ex = boost::asio::get_associated_executor(h);
    boost::asio::post(ex, [h = std::forward<Handler>(h)]() mutable { std::move(h)(boost::system::error_code{}, grant_type{}); });
  }
  grant_type acquire(const te::call_description&, te::acquire_options) const { return {}; }
  te::acquire_options default_acquire_options() const { return {}; }
};

// One account, incremented by a coroutine tool that reads it, yields to the executor, then writes it back: a
// lost update whenever two increments overlap.
struct account {
  std::mutex m;
  long balance = 0;
  std::atomic<int> running{0};
  std::atomic<int> most_at_once{0};
};

te::call_description account_write(std::string name) {
  return te::describe_runtime(std::move(name), {}, {{"accounts", te::access_mode::write, std::nullopt}});
}

void add_tools(te::json_tool_host<>& host, account& a) {
  host.add(te::dynamic_tool{"add_to_balance", account_write("add_to_balance"), {}},
           [&a](const te::attempt_context&, const json&) -> boost::asio::awaitable<json> {
             const int now = ++a.running;
             for (int seen = a.most_at_once.load(); now > seen && !a.most_at_once.compare_exchange_weak(seen, now);) {
             }
             long v = 0;
             {
               const std::lock_guard l(a.m);
               v = a.balance;
             }
             boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, 1ms);
             co_await t.async_wait(boost::asio::use_awaitable);
             {
               const std::lock_guard l(a.m);
               a.balance = v + 1;
             }
             --a.running;
             co_return json{{"balance", v + 1}};
           });
}

// `n` concurrent tools/calls of `tool` from `sessions` threads (each its own io_context, as a session's strand);
// returns how many failed.
template <class Server>
int call_concurrently(Server& server, const std::string& tool, int sessions, int n) {
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int s = 0; s < sessions; ++s)
    threads.emplace_back([&] {
      boost::asio::io_context io;
      for (int i = 0; i < n; ++i)
        boost::asio::co_spawn(io, server.handle_request("tools/call", json{{"name", tool}, {"arguments", json::object()}}, {}),
                              [&errors](std::exception_ptr e, json r) {
                                if (e || r.value("isError", false)) ++errors;
                              });
      io.run();
    });
  for (auto& t : threads) t.join();
  return errors.load();
}

}  // namespace

// 200 increments from four sessions, without caller threads, lose none under the server's coordinator, and no
// more than max_concurrent_calls run at once. Control: the same server with a coordinator that grants
// everything loses some, and more calls overlap.
TEST(NonblockingCalls, IncrementsFromFourSessionsLoseNoneAndStayWithinTheBound) {
  for (const bool coordinated : {true, false}) {
    SCOPED_TRACE(coordinated ? "coordinated" : "control: no coordination");
    account a;
    te::tool_registry<> reg;
    te::json_tool_host<> host{reg};
    add_tools(host, a);
    boost::asio::thread_pool pool(2);
    const te::mcp_server_options options{.max_concurrent_calls = 3, .nonblocking_calls = true};
    if (coordinated) {
      te::mcp_server server(pool, host, options);
      EXPECT_EQ(call_concurrently(server, "add_to_balance", 4, 50), 0);
      EXPECT_EQ(a.balance, 200);
      EXPECT_EQ(a.most_at_once.load(), 1) << "the coordinator runs the writes one at a time";
    } else {
      te::mcp_server server(pool, host, options, te::run_options{}.with(no_coordination{}));
      EXPECT_EQ(call_concurrently(server, "add_to_balance", 4, 50), 0);
      EXPECT_LT(a.balance, 200) << "the control loses increments";
      EXPECT_GT(a.most_at_once.load(), 1);
      EXPECT_LE(a.most_at_once.load(), 3) << "max_concurrent_calls bounds the calls without a caller thread";
    }
  }
}

// With the option, a call's turn is prepared (here: its target computed by the tool's target_fn) in the
// session's own thread, and no thread but that one and the server's executor takes part. Control: without it,
// on a caller thread.
TEST(NonblockingCalls, NoCallerThreadTakesPartInACall) {
  for (const bool nonblocking : {true, false}) {
    SCOPED_TRACE(nonblocking ? "nonblocking" : "control: caller threads");
    te::tool_registry<> reg;
    te::json_tool_host<> host{reg};
    std::mutex m;
    std::set<std::thread::id> preparing;
    te::identity_policy by_account;
    by_account.target_fn = [&](const json& args) -> std::optional<std::string> {
      const std::lock_guard l(m);
      preparing.insert(std::this_thread::get_id());
      return args.value("acct", std::string("a"));
    };
    host.add(te::dynamic_tool{"add_to_balance", account_write("add_to_balance"), by_account},
             [](const te::attempt_context&, const json&) -> boost::asio::awaitable<json> { co_return json(1); });
    boost::asio::thread_pool pool(1);
    std::thread::id pool_thread;
    boost::asio::post(pool, [&] { pool_thread = std::this_thread::get_id(); });
    boost::asio::post(pool, boost::asio::use_future).get();
    te::mcp_server server(pool, host, te::mcp_server_options{.nonblocking_calls = nonblocking});
    std::thread::id session_thread;
    std::atomic<int> ok{0};
    std::thread session([&] {
      session_thread = std::this_thread::get_id();
      boost::asio::io_context io;
      for (int i = 0; i < 4; ++i)
        boost::asio::co_spawn(io, server.handle_request("tools/call", json{{"name", "add_to_balance"}}, {}),
                              [&ok](std::exception_ptr e, json r) { ok += !e && !r.value("isError", false); });
      io.run();
    });
    session.join();
    EXPECT_EQ(ok.load(), 4);
    const std::lock_guard l(m);
    ASSERT_FALSE(preparing.empty());
    std::set<std::thread::id> others = preparing;
    others.erase(pool_thread);
    others.erase(session_thread);
    if (nonblocking) {
      EXPECT_EQ(preparing.count(session_thread), 1u) << "the turn is prepared in the session's thread";
      EXPECT_TRUE(others.empty()) << "nothing but the session's thread and the server's executor";
    } else {
      EXPECT_EQ(preparing.count(session_thread), 0u);
      EXPECT_FALSE(others.empty()) << "the control prepares on a caller thread";
    }
  }
}

// json_tool_host::async_run gives the outcomes `run` gives for the same turn: a call that cannot run fails alone
// (its reason), the others run; the awaiting coroutine resumes on its own executor.
TEST(NonblockingCalls, AsyncRunGivesWhatRunGives) {
  account a;
  te::tool_registry<> reg;
  te::json_tool_host<> host{reg};
  add_tools(host, a);
  boost::asio::thread_pool pool(2);
  const auto calls = te::parse_tool_calls(R"([{"id": "1", "name": "add_to_balance", "arguments": {}},
                                              {"id": "2", "name": "nope", "arguments": {}},
                                              {"id": "3", "name": "add_to_balance", "arguments": {}}])");
  const auto options = te::run_options{}.with(te::local_coordinator{});
  const std::vector<te::outcome<json>> ran = host.run(pool, options, calls);
  boost::asio::io_context io;
  bool resumed_on_its_executor = false;
  auto f = boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<std::vector<te::outcome<json>>> {
        auto turn = host.async_run(pool.get_executor(), options, calls);  // (a local: g++ 12, as in the library)
        auto out = co_await std::move(turn);
        resumed_on_its_executor = io.get_executor().running_in_this_thread();
        co_return out;
      },
      boost::asio::use_future);
  io.run();
  const std::vector<te::outcome<json>> awaited = f.get();
  EXPECT_TRUE(resumed_on_its_executor);
  ASSERT_EQ(ran.size(), 3u);
  ASSERT_EQ(awaited.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE(k);
    ASSERT_EQ(awaited[k].has_value(), ran[k].has_value());
    if (!ran[k].has_value()) {
      EXPECT_EQ(te::error_message(awaited[k].error()), te::error_message(ran[k].error())) << "the same reason";
    }
  }
  EXPECT_FALSE(awaited[1].has_value()) << "the unknown tool fails alone";
  EXPECT_EQ(a.balance, 4) << "two turns of two increments, one at a time under the coordinator";
  EXPECT_EQ(awaited[0].value()["balance"].get<long>() + awaited[2].value()["balance"].get<long>(), 3 + 4);
}

// The server's destructor waits for a call under way without a caller thread, as it waits for its caller
// threads: the call ends (and its tool's coroutine with it) before the server is gone. Without the wait the
// destructor would return while the tool still sleeps (`ended` false).
TEST(NonblockingCalls, TheDestructorWaitsForACallUnderWay) {
  te::tool_registry<> reg;
  te::json_tool_host<> host{reg};
  std::atomic<bool> started{false}, ended{false};
  host.add(te::dynamic_tool{"slow", account_write("slow"), {}},
           [&](const te::attempt_context&, const json&) -> boost::asio::awaitable<json> {
             started = true;
             boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, 300ms);
             co_await t.async_wait(boost::asio::use_awaitable);
             ended = true;
             co_return json(1);
           });
  boost::asio::thread_pool pool(1);
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread session([&io] { io.run(); });
  {
    te::mcp_server server(pool, host, te::mcp_server_options{.nonblocking_calls = true});
    boost::asio::co_spawn(io, server.handle_request("tools/call", json{{"name", "slow"}}, {}), boost::asio::detached);
    for (int i = 0; i < 5000 && !started; ++i) std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(started.load());
  }  // ~mcp_server
  EXPECT_TRUE(ended.load()) << "the call under way ended before the server was destroyed";
  work.reset();
  session.join();
}
