// The dispatcher with coroutines: tools returning boost::asio::awaitable<T> hold no pool thread while they wait,
// async_run_plan resumes the awaiting coroutine with the outcomes, sync and awaitable tools mix, errors and
// aborts are delivered, and the runtime form takes awaitable tasks. No timed assertions: waiting is proved by
// progress that is impossible if a thread were held (N waiters on a one-thread pool that each need all N).
#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <gtest/gtest.h>

#include <tool_effects/dispatch.hpp>

// Unity-built with the other dispatch tests (test/CMakeLists.txt): all below is this file's own.
namespace dispatch_coro_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;

// ThreadSanitizer does not model std::atomic_thread_fence, which Asio's reference count of a type-erased
// executor (any_io_executor holding a strand, made by co_spawn on a strand) uses before deleting its target:
// TSan then reports the delete as racing with the other thread's decrement. A known false positive inside
// Boost.Asio, suppressed for this binary only (harmless in non-TSan builds).
extern "C" const char* __tsan_default_suppressions();
extern "C" const char* __tsan_default_suppressions() { return "race:boost::asio::execution::detail::shared_target_executor\n"; }

namespace {
struct db : te::resource<> {};
struct users : te::resource<db> {};

asio::awaitable<void> sleep_for(std::chrono::microseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

// Starts, then waits (on timers) until `target` calls have started. On a one-thread pool this finishes only if
// a waiting call holds no thread. Gives up after many polls (returns false) rather than hanging.
struct rendezvous {
  using side_effects = te::effects<te::reads<users>>;
  std::atomic<int>* started;
  int target;
  asio::awaitable<bool> operator()() const {
    ++*started;
    for (int polls = 0; polls < 20000; ++polls) {
      if (started->load() >= target) co_return true;
      co_await sleep_for(std::chrono::microseconds(100));
    }
    co_return false;
  }
};

struct async_write {
  using side_effects = te::effects<te::writes<users>>;
  asio::awaitable<void> operator()(int& store, int v) const {
    co_await sleep_for(std::chrono::microseconds(200));
    store = v;
  }
};
struct sync_read {
  using side_effects = te::effects<te::reads<users>>;
  int operator()(const int& store) const { return store; }
};
struct async_fail {
  using side_effects = te::effects<te::writes<db>>;
  asio::awaitable<int> operator()() const {
    co_await sleep_for(std::chrono::microseconds(50));
    throw std::runtime_error("remote error");
  }
};
}  // namespace

TEST(DispatchCoro, AwaitingToolsHoldNoPoolThread) {
  asio::thread_pool pool(1);
  std::atomic<int> started{0};
  const rendezvous r{&started, 6};
  auto res = te::run_plan(pool, te::call(r), te::call(r), te::call(r), te::call(r), te::call(r), te::call(r));
  const bool all = res.apply([](auto&... o) { return (o.value() && ...); });
  EXPECT_TRUE(all);
}

TEST(DispatchCoro, AsyncRunPlanResumesTheCoroutine) {
  asio::thread_pool pool(1);
  std::atomic<int> started{0};
  const rendezvous r{&started, 3};
  int store = 0;
  auto fut = asio::co_spawn(
      pool,
      [&]() -> asio::awaitable<std::string> {
        auto [a, b, c, w, rd] = co_await te::async_run_plan(te::call(r), te::call(r), te::call(r),
                                                            te::call(async_write{}, std::ref(store), 9),
                                                            te::call(sync_read{}, std::cref(store)));
        co_return std::to_string(a.value() && b.value() && c.value()) + std::to_string(w.has_value()) +
            std::to_string(rd.value());
      },
      asio::use_future);
  EXPECT_EQ(fut.get(), "119");
}

TEST(DispatchCoro, AsyncRunPlanOnASingleThreadedIoContext) {
  // The async form needs no other thread: the io_context runs in this one.
  asio::io_context io;
  int store = 0;
  std::string seen;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto [w, r, f, r2] =
            co_await te::async_run_plan(te::run_options{.abort_on_error = true}, te::call(async_write{}, std::ref(store), 4),
                                        te::call(sync_read{}, std::cref(store)), te::call(async_fail{}),
                                        te::call(sync_read{}, std::cref(store)));
        seen = std::to_string(r.value()) + (f.has_error() ? "E" : "-") + (r2.aborted() ? "A" : "-");
      },
      asio::detached);
  io.run();
  EXPECT_EQ(seen, "4EA");
}

TEST(DispatchCoro, MixedSyncAndAwaitableKeepProgramOrder) {
  asio::thread_pool pool(2);
  for (int round = 0; round < 100; ++round) {
    int store = 0;
    auto r = te::run_plan(pool, te::call(async_write{}, std::ref(store), 1), te::call(sync_read{}, std::cref(store)),
                          te::call(async_write{}, std::ref(store), 2), te::call(sync_read{}, std::cref(store)));
    ASSERT_EQ(get<1>(r).value(), 1);
    ASSERT_EQ(get<3>(r).value(), 2);
  }
}

TEST(DispatchCoro, AwaitableErrorsAreOutcomes) {
  asio::thread_pool pool(1);
  auto r = te::run_plan(pool, te::call(async_fail{}));
  ASSERT_TRUE(get<0>(r).has_error());
  try {
    (void)get<0>(r).value();
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "remote error");
  }
  // A tool that throws before returning its awaitable.
  auto eager = te::tag<te::read>([]() -> asio::awaitable<int> { throw std::logic_error("eager"); });
  auto e = te::run_plan(pool, te::call(eager));
  EXPECT_THROW(get<0>(e).value(), std::logic_error);
}

TEST(DispatchCoro, InlineExecutorRunsAwaitablesInTheCallersThread) {
  int store = 0;
  auto r = te::run_plan(te::inline_executor{}, te::call(async_write{}, std::ref(store), 5),
                        te::call(sync_read{}, std::cref(store)));
  EXPECT_EQ(get<1>(r).value(), 5);
}

TEST(DispatchCoro, StrandExecutor) {
  asio::thread_pool pool(2);
  std::atomic<int> started{0};
  const rendezvous r{&started, 4};
  auto res = te::run_plan(asio::make_strand(pool), te::call(r), te::call(r), te::call(r), te::call(r));
  EXPECT_TRUE(get<3>(res).value());
}

TEST(DispatchCoro, RuntimeFormWithAwaitableTasks) {
  asio::thread_pool pool(1);
  std::atomic<int> started{0};
  const rendezvous r{&started, 3};
  std::vector<te::call_description> calls(3, te::describe<rendezvous>("rendezvous"));
  std::vector<std::function<asio::awaitable<bool>()>> tasks(3, [&] { return r(); });
  auto out = te::run_plan(pool, calls, tasks);
  ASSERT_EQ(out.size(), 3u);
  for (auto& o : out) EXPECT_TRUE(o.value());
}

// A coroutine tool that takes the attempt context reads it after its first suspension: the context must
// outlive the call's awaitable, not only the call that made it (Asio's awaitables start when awaited, so a
// context made on the stack of the function that returned the awaitable is gone by then). The stack is
// scribbled between the calls' starts (other calls, a deep recursion) so that a dangling context reads garbage.
struct keyed_async_write {
  using side_effects = te::effects<te::writes<users>>;
  asio::awaitable<std::string> operator()(const te::attempt_context& ctx, int id) const {
    co_await sleep_for(std::chrono::microseconds(100));
    co_return ctx.idempotency_key + "/" + std::to_string(ctx.attempt) + "/" + std::to_string(id);
  }
};

[[gnu::noinline]] int scribble_stack(int depth) {
  volatile char junk[512];
  for (auto& c : junk) c = static_cast<char>(0xA5);
  return depth == 0 ? junk[7] : scribble_stack(depth - 1) + junk[3];
}

TEST(DispatchCoro, ACoroutineToolReadsItsAttemptContextAfterSuspending) {
  for (int round = 0; round < 20; ++round) {
    asio::thread_pool pool(2);
    auto outcomes = te::run_plan(pool, te::call(keyed_async_write{}, 1).with_idempotency_key("key-one-long-enough-to-be-on-the-heap"),
                                 te::call(keyed_async_write{}, 2).with_idempotency_key("key-two-long-enough-to-be-on-the-heap"));
    (void)scribble_stack(64);
    ASSERT_TRUE(outcomes.get<0>().has_value()) << te::error_message(outcomes.get<0>().error());
    ASSERT_TRUE(outcomes.get<1>().has_value()) << te::error_message(outcomes.get<1>().error());
    EXPECT_EQ(outcomes.get<0>().value(), "key-one-long-enough-to-be-on-the-heap/1/1");
    EXPECT_EQ(outcomes.get<1>().value(), "key-two-long-enough-to-be-on-the-heap/1/2");
  }
}

}  // namespace dispatch_coro_test_ns
