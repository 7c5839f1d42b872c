// Calls without a caller thread: a tools/call runs as a coroutine on the server's executor, with no caller
// thread, under the same coordinator and the same bound of calls at once, with mcp_server_options::
// nonblocking_calls and by default, when the dispatch options start a turn without blocking (no approver, no
// journal). Each test has its control: the same server whose options hold an approver, without the option (or
// without the coordinator). Both eras: a 2026-07-28 tools/call (run as a parked MRTR call, whose tool may ask its
// client by InputRequiredResult) takes the same route.
#include <atomic>
#include <cstdint>
#include <optional>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
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

#include "coordinator_support.hpp"

namespace te = tool_effects;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

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

// The params of a tools/call of `tool`: of the 2026-07-28 era (`modern`: the per-request _meta, the client
// declaring `capabilities`) or of the earlier one (its session's initialize declares them).
json call_params(const std::string& tool, bool modern, json capabilities = json::object()) {
  json p = {{"name", tool}, {"arguments", json::object()}};
  if (modern)
    p["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                  {"io.modelcontextprotocol/clientInfo", {{"name", "test"}, {"version", "1"}}},
                  {"io.modelcontextprotocol/clientCapabilities", std::move(capabilities)}};
  return p;
}

// `n` concurrent tools/calls of `tool` from `sessions` threads (each its own io_context, as a session's strand);
// returns how many failed.
template <class Server>
int call_concurrently(Server& server, const std::string& tool, int sessions, int n, bool modern = false) {
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int s = 0; s < sessions; ++s)
    threads.emplace_back([&] {
      boost::asio::io_context io;
      for (int i = 0; i < n; ++i)
        boost::asio::co_spawn(io, server.handle_request("tools/call", call_params(tool, modern), {}),
                              [&errors](std::exception_ptr e, json r) {
                                if (e || r.value("isError", false)) ++errors;
                              });
      io.run();
    });
  for (auto& t : threads) t.join();
  return errors.load();
}

// The threads that prepare the calls of `host`'s tool "add_to_balance" (its target_fn), and those of the pool
// the server runs on and of the session (the test's thread) that sends them.
struct threads_seen {
  std::mutex m;
  std::set<std::thread::id> preparing;
  std::thread::id pool_thread;
  std::thread::id session_thread = std::this_thread::get_id();
  te::identity_policy recording() {
    te::identity_policy by_account;
    by_account.target_fn = [this](const json& args) -> std::optional<std::string> {
      const std::lock_guard l(m);
      preparing.insert(std::this_thread::get_id());
      return args.value("acct", std::string("a"));
    };
    return by_account;
  }
  void learn_pool_thread(boost::asio::thread_pool& pool) {
    boost::asio::post(pool, [this] { pool_thread = std::this_thread::get_id(); });
    boost::asio::post(pool, boost::asio::use_future).get();
  }
  // Those that are neither the session's nor the pool's: the server's caller threads.
  std::set<std::thread::id> others() {
    const std::lock_guard l(m);
    std::set<std::thread::id> out = preparing;
    out.erase(pool_thread);
    out.erase(session_thread);
    return out;
  }
};

// How a test's server runs its calls: with the option; by default (the option off, dispatch options without an
// approver or a journal); or, the control, the option off and an approver in the dispatch options, whose turn
// may block as it starts, so it starts on a caller thread.
enum class route { option, by_default, control };

const char* route_name(route r) {
  return r == route::option ? "nonblocking_calls" : r == route::by_default ? "by default" : "control: caller threads";
}

// Calls body(server) with a server of route `r` on `pool` and `host`.
template <class Body>
void with_server(route r, boost::asio::thread_pool& pool, te::json_tool_host<>& host, Body body) {
  const te::mcp_server_options options{.nonblocking_calls = r == route::option};
  if (r == route::control) {
    const auto approve = [](const te::confirmation_request&) { return te::confirmation::approve; };
    te::mcp_server server(pool, host, options,
                          te::run_options{}.with(te::local_coordinator{}).with(te::approver(approve)));
    body(server);
  } else {
    te::mcp_server server(pool, host, options);
    body(server);
  }
}

// The answer to one request sent from this thread, or "CODE message" of its error.
template <class Server>
json answer(Server& server, json params, te::mcp_server_request request = {}) {
  boost::asio::io_context io;
  auto f = boost::asio::co_spawn(io, server.handle_request("tools/call", std::move(params), std::move(request)),
                                 boost::asio::use_future);
  io.run();
  try {
    return f.get();
  } catch (const te::mcp_server_error& e) {
    return std::to_string(e.code()) + " " + e.what();
  }
}

}  // namespace

// 200 increments from four sessions, without caller threads (with the option and by default), lose none under the
// server's coordinator, and no more than max_concurrent_calls run at once. Control: the same server with a
// coordinator that grants everything loses some, and more calls overlap.
// Both eras: a 2026-07-28 call goes through the same admission queue and coordinator.
TEST(NonblockingCalls, IncrementsFromFourSessionsLoseNoneAndStayWithinTheBound) {
  for (const bool option : {true, false})
    for (const auto& [modern, coordinated] :
         {std::pair{false, true}, std::pair{false, false}, std::pair{true, true}, std::pair{true, false}}) {
      SCOPED_TRACE(option ? "nonblocking_calls" : "by default");
      SCOPED_TRACE(modern ? "2026-07-28" : "2025-11-25");
      SCOPED_TRACE(coordinated ? "coordinated" : "control: no coordination");
      account a;
      te::tool_registry<> reg;
      te::json_tool_host<> host{reg};
      add_tools(host, a);
      boost::asio::thread_pool pool(2);
      const te::mcp_server_options options{.max_concurrent_calls = 3, .nonblocking_calls = option};
      if (coordinated) {
        te::mcp_server server(pool, host, options);
        EXPECT_EQ(call_concurrently(server, "add_to_balance", 4, 50, modern), 0);
        EXPECT_EQ(a.balance, 200);
        EXPECT_EQ(a.most_at_once.load(), 1) << "the coordinator runs the writes one at a time";
      } else {
        te::mcp_server server(pool, host, options, te::run_options{}.with(coordinator_test::grant_everything{}));
        EXPECT_EQ(call_concurrently(server, "add_to_balance", 4, 50, modern), 0);
        EXPECT_LT(a.balance, 200) << "the control loses increments";
        EXPECT_GT(a.most_at_once.load(), 1);
        EXPECT_LE(a.most_at_once.load(), 3) << "max_concurrent_calls bounds the calls without a caller thread";
      }
    }
}

// With the option, and by default, a call's turn is prepared (here: its target computed by the tool's target_fn)
// in the session's own thread, and no thread but that one and the server's executor takes part. A 2026-07-28 call
// (a parked MRTR call, which may outlive its first request when its tool asks) is prepared on the server's
// executor. Control: with an approver in the options and without the option, on a caller thread.
TEST(NonblockingCalls, NoCallerThreadTakesPartInACall) {
  for (const bool modern : {false, true})
    for (const route way : {route::option, route::by_default, route::control}) {
      const bool nonblocking = way != route::control;
      SCOPED_TRACE(modern ? "2026-07-28" : "2025-11-25");
      SCOPED_TRACE(route_name(way));
      te::tool_registry<> reg;
      te::json_tool_host<> host{reg};
      threads_seen seen;
      host.add(te::dynamic_tool{"add_to_balance", account_write("add_to_balance"), seen.recording()},
               [](const te::attempt_context&, const json&) -> boost::asio::awaitable<json> { co_return json(1); });
      boost::asio::thread_pool pool(1);
      seen.learn_pool_thread(pool);
      std::atomic<int> ok{0};
      with_server(way, pool, host, [&](auto& server) {
        std::thread session([&] {
          seen.session_thread = std::this_thread::get_id();
          boost::asio::io_context io;
          for (int i = 0; i < 4; ++i)
            boost::asio::co_spawn(io, server.handle_request("tools/call", call_params("add_to_balance", modern), {}),
                                  [&ok, modern](std::exception_ptr e, json r) {
                                    ok += !e && !r.value("isError", false) &&
                                          (!modern || r.value("resultType", "") == "complete");
                                  });
          io.run();
        });
        session.join();
      });
      EXPECT_EQ(ok.load(), 4);
      const std::set<std::thread::id> others = seen.others();
      const std::lock_guard l(seen.m);
      ASSERT_FALSE(seen.preparing.empty());
      if (nonblocking) {
        EXPECT_EQ(seen.preparing.count(seen.session_thread), modern ? 0u : 1u)
            << "the turn is prepared in the session's thread (of a 2026-07-28 call: on the server's executor)";
        EXPECT_TRUE(others.empty()) << "nothing but the session's thread and the server's executor";
      } else {
        EXPECT_EQ(seen.preparing.count(seen.session_thread), 0u);
        EXPECT_FALSE(others.empty()) << "the control prepares on a caller thread";
      }
    }
}

// With the option, a 2026-07-28 call whose tool asks its client (roots/list) is answered with an
// InputRequiredResult, and the request sent again with the answer and the requestState gets the tool's result,
// no caller thread taking part: a coroutine tool awaits the ask (no thread waits), a synchronous one blocks
// the executor's thread while it waits (as with a call of the earlier era), here the pool's only thread (the
// ask runs on the server's own asks thread). The same by default. Control: with an approver in the options and
// without the option, on a caller thread.
TEST(NonblockingCalls, AModernCallThatAsksItsClientGetsItsAnswer) {
  for (const route way : {route::option, route::by_default, route::control})
    for (const bool coroutine : {true, false}) {
      const bool nonblocking = way != route::control;
      SCOPED_TRACE(route_name(way));
      SCOPED_TRACE(coroutine ? "coroutine tool" : "synchronous tool");
      te::tool_registry<> reg;
      te::json_tool_host<> host{reg};
      threads_seen seen;
      std::atomic<int> runs{0};
      const te::dynamic_tool tool{"add_to_balance", account_write("add_to_balance"), seen.recording()};
      auto first_root = [](const json& roots) { return roots.at("roots").at(0).at("uri").get<std::string>(); };
      if (coroutine)
        host.add(tool, [&](const te::attempt_context& ctx, const json&) -> boost::asio::awaitable<json> {
          ++runs;
          const te::mcp_client_asker* asker = te::mcp_client_asker_of(ctx);
          if (!asker) throw std::runtime_error("no asker");
          co_return json(first_root(co_await asker->async_list_roots()));
        });
      else
        host.add(tool, [&](const te::attempt_context& ctx, const json&) -> json {
          ++runs;
          const te::mcp_client_asker* asker = te::mcp_client_asker_of(ctx);
          if (!asker) throw std::runtime_error("no asker");
          return first_root(asker->list_roots());
        });
      boost::asio::thread_pool pool(1);
      seen.learn_pool_thread(pool);
      with_server(way, pool, host, [&](auto& server) {
        const json caps = {{"roots", json::object()}};
        const json first = answer(server, call_params("add_to_balance", true, caps));
        ASSERT_EQ(first.value("resultType", ""), "input_required") << first.dump();
        ASSERT_EQ(first.at("inputRequests").size(), 1u) << first.dump();
        const std::string key = first["inputRequests"].begin().key();
        EXPECT_EQ(first["inputRequests"][key].value("method", ""), "roots/list");
        json retry = call_params("add_to_balance", true, caps);
        retry["inputResponses"] = {{key, {{"roots", json::array({{{"uri", "file:///home/a"}, {"name", "a"}}})}}}};
        retry["requestState"] = first["requestState"];
        const json done = answer(server, retry);
        EXPECT_EQ(done.value("resultType", ""), "complete") << done.dump();
        ASSERT_TRUE(done.contains("content")) << done.dump();
        EXPECT_EQ(done["content"].at(0).value("text", ""), "file:///home/a") << done.dump();
      });
      EXPECT_EQ(runs.load(), 1) << "the call was parked and resumed, not run again";
      if (nonblocking) {
        EXPECT_TRUE(seen.others().empty()) << "nothing but the session's thread and the server's executor";
      } else {
        EXPECT_FALSE(seen.others().empty()) << "the control prepares on a caller thread";
      }
    }
}

// A 2026-07-28 call without a caller thread reports as one on a caller thread does: its tool's progress and log
// message reach its request, and a request cancelled before its call is admitted (here: before it is sent) ends
// without running the tool, with the same result; by default too. Control: the same calls on caller threads.
TEST(NonblockingCalls, AModernCallReportsAndIsCancelledAsOnACallerThread) {
  std::map<route, std::vector<std::string>> seen_by;  // what each route's requests saw
  for (const route way : {route::option, route::by_default, route::control}) {
    SCOPED_TRACE(route_name(way));
    te::tool_registry<> reg;
    te::json_tool_host<> host{reg};
    std::atomic<int> runs{0};
    host.add(te::dynamic_tool{"add_to_balance", account_write("add_to_balance"), {}},
             [&runs](const te::attempt_context& ctx, const json&) -> boost::asio::awaitable<json> {
               ++runs;
               ctx.report_progress(1, 2, "half");
               ctx.report_log("info", "hello");
               co_return json(1);
             });
    boost::asio::thread_pool pool(1);
    std::mutex m;
    std::vector<std::string>& seen = seen_by[way];
    te::mcp_server_request reporting;
    reporting.progress = [&](double done, double total, const std::string& message) {
      const std::lock_guard l(m);
      seen.push_back("progress " + std::to_string(done) + "/" + std::to_string(total) + " " + message);
    };
    reporting.log = [&](json params) {
      const std::lock_guard l(m);
      seen.push_back("log " + params.dump());
    };
    json params = call_params("add_to_balance", true);
    params["_meta"]["io.modelcontextprotocol/logLevel"] = "debug";
    with_server(way, pool, host, [&](auto& server) {
      const json done = answer(server, params, reporting);
      EXPECT_EQ(done.value("resultType", ""), "complete") << done.dump();
      te::mcp_server_request cancelled;
      cancelled.cancel.cancel();
      const json c = answer(server, call_params("add_to_balance", true), cancelled);
      EXPECT_TRUE(c.value("isError", false)) << c.dump();
      EXPECT_EQ(runs.load(), 1) << "the cancelled call's tool did not run";
      const std::lock_guard l(m);
      seen.push_back("cancelled " + c.dump());
      EXPECT_EQ(seen.size(), 3u);
    });
  }
  EXPECT_EQ(seen_by[route::option], seen_by[route::control]) << "the same as on a caller thread";
  EXPECT_EQ(seen_by[route::by_default], seen_by[route::control]) << "the same as on a caller thread";
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

// When a server runs its calls without caller threads by default: with dispatch options that start a turn without
// blocking (here: only a coordinator), not with an approver (nor with a journal).
static_assert(te::detail::mcp_turn_starts_without_blocking<decltype(te::run_options{}.with(te::local_coordinator{}))>);
static_assert(!te::detail::mcp_turn_starts_without_blocking<decltype(te::run_options{}
                                                                         .with(te::local_coordinator{})
                                                                         .with(te::approver{}))>);

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
