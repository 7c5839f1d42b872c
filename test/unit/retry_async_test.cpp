// The awaitable retry on Boost.Asio: backoff on steady_timers (a pool thread
// is never blocked: other work runs during a backoff), awaitable tools,
// exhaustion and permanent errors, terminal cancellation that stops further
// attempts, and many concurrent logical calls with distinct keys.
// Timers are short (<= 2 ms) or cancelled; no assertion depends on timing.
#include <tool_effects/retry.hpp>

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

// Unity-built with the other recovery tests (test/CMakeLists.txt): all below is this file's own.
namespace retry_async_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {
struct timeout_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct bad_request : std::runtime_error {
  using std::runtime_error::runtime_error;
};

te::retry_policy policy(std::size_t n, std::chrono::nanoseconds base = 1ms) {
  return te::retry_policy{.max_attempts = n, .base_delay = base, .max_delay = 2ms, .jitter = te::jitter_mode::full,
                          .is_transient = te::transient_on<timeout_error>(), .seed = 11};
}

struct flaky {  // class idempotent
  using side_effects = te::effects<te::write, te::idempotent, te::network>;
  int fail_first = 0;
  int calls = 0;
  std::vector<std::string> keys;
  std::vector<std::string>* events = nullptr;
  int operator()(const te::attempt_context& c, int x) {
    ++calls;
    keys.push_back(c.idempotency_key);
    if (events) events->push_back("A" + std::to_string(c.attempt));
    if (calls <= fail_first) throw timeout_error("timeout");
    return x + 1;
  }
};

struct remote_lookup {  // returns an awaitable: an I/O-bound tool
  using side_effects = te::effects<te::read, te::network>;
  int fail_first = 0;
  int calls = 0;
  asio::awaitable<std::string> operator()(std::string q) {
    ++calls;
    asio::steady_timer t(co_await asio::this_coro::executor, 100us);
    co_await t.async_wait(asio::use_awaitable);
    if (calls <= fail_first) throw timeout_error("remote timeout");
    co_return "found " + q;
  }
};

template <class T>
T run_io(asio::awaitable<T> a) {
  asio::io_context io;
  auto f = asio::co_spawn(io, std::move(a), asio::use_future);
  io.run();
  return f.get();
}
}  // namespace

TEST(RetryAsync, RetriesOnAnIoContextWithOneKey) {
  flaky t;
  t.fail_first = 3;
  EXPECT_EQ(run_io(te::retry_async(policy(5), std::ref(t), 41)), 42);
  EXPECT_EQ(t.calls, 4);
  EXPECT_EQ(std::set<std::string>(t.keys.begin(), t.keys.end()).size(), 1u);
}

TEST(RetryAsync, TheToolIsCopiedUnlessPassedByReference) {
  flaky t;
  t.fail_first = 1;
  EXPECT_EQ(run_io(te::retry_async(policy(3), t, 1)), 2);
  EXPECT_EQ(t.calls, 0);  // the coroutine retried its own copy
}

TEST(RetryAsync, AwaitableToolsAreAwaited) {
  remote_lookup t;
  t.fail_first = 2;
  EXPECT_EQ(run_io(te::retry_async(policy(4), std::ref(t), std::string("cats"))), "found cats");
  EXPECT_EQ(t.calls, 3);
}

TEST(RetryAsync, ExhaustionAndPermanentErrors) {
  flaky t;
  t.fail_first = 100;
  try {
    (void)run_io(te::retry_async(policy(3), std::ref(t), 1));
    FAIL();
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::retries_exhausted);
    EXPECT_EQ(f.record().attempts, 3u);
    EXPECT_EQ(f.record().effect_class, te::side_effect_class::idempotent);
  }
  EXPECT_EQ(t.calls, 3);
  int calls = 0;
  auto permanent = te::tag<te::read>([&]() -> int {
    ++calls;
    throw bad_request("bad");
  });
  EXPECT_THROW((void)run_io(te::retry_async(policy(3), std::ref(permanent))), bad_request);
  EXPECT_EQ(calls, 1);
}

TEST(RetryAsync, ABackoffDoesNotBlockTheThread) {
  // One thread. A fails and backs off 2 ms; B, queued before A's timer can
  // fire, must run during A's backoff: the order is A1, B, A2.
  asio::io_context io;
  std::vector<std::string> events;
  flaky a;
  a.fail_first = 1;
  a.events = &events;
  auto p = policy(3, 2ms);
  p.jitter = te::jitter_mode::none;
  auto fa = asio::co_spawn(io, te::retry_async(p, std::ref(a), 0), asio::use_future);
  asio::post(io, [&] { events.push_back("B"); });
  io.run();
  EXPECT_EQ(fa.get(), 1);
  EXPECT_EQ(events, (std::vector<std::string>{"A1", "B", "A2"}));
}

TEST(RetryAsync, CancellationDuringABackoffStopsFurtherAttempts) {
  asio::io_context io;
  asio::cancellation_signal signal;
  int calls = 0;
  auto t = te::tag<te::read, te::idempotent>([&]() -> int {
    ++calls;
    asio::post(io, [&] { signal.emit(asio::cancellation_type::terminal); });  // fires while backing off
    throw timeout_error("timeout");
  });
  auto p = policy(10);
  p.base_delay = p.max_delay = std::chrono::hours(1);  // only cancellation can end this wait
  std::exception_ptr result;
  bool done = false;
  asio::co_spawn(io, te::retry_async(p, std::ref(t)),
                 asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e, int) {
                   result = e;
                   done = true;
                 }));
  io.run();
  EXPECT_TRUE(done);
  EXPECT_EQ(calls, 1);
  EXPECT_THROW(std::rethrow_exception(result), timeout_error);  // the last error, not operation_aborted
}

TEST(RetryAsync, CancellationDuringAnAttemptPreventsTheNextOne) {
  asio::io_context io;
  asio::cancellation_signal signal;
  int calls = 0;
  auto t = te::tag<te::read>([&]() -> int {
    ++calls;
    signal.emit(asio::cancellation_type::terminal);
    throw timeout_error("timeout");
  });
  std::exception_ptr result;
  asio::co_spawn(io, te::retry_async(policy(10), std::ref(t)),
                 asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e, int) { result = e; }));
  io.run();
  EXPECT_EQ(calls, 1);
  EXPECT_THROW(std::rethrow_exception(result), timeout_error);
}

TEST(RetryAsync, ManyConcurrentCallsOnAThreadPoolKeepTheirOwnKeys) {
  asio::thread_pool pool(2);
  constexpr int n = 64;
  std::vector<flaky> tools(n);
  std::vector<std::future<int>> results;
  for (int i = 0; i < n; ++i) {
    tools[static_cast<std::size_t>(i)].fail_first = i % 4;
    results.push_back(asio::co_spawn(pool, te::retry_async(policy(4, 100us), std::ref(tools[static_cast<std::size_t>(i)]), i),
                                     asio::use_future));
  }
  for (int i = 0; i < n; ++i) EXPECT_EQ(results[static_cast<std::size_t>(i)].get(), i + 1);
  pool.join();
  std::set<std::string> first_keys;
  for (int i = 0; i < n; ++i) {
    const auto& t = tools[static_cast<std::size_t>(i)];
    EXPECT_EQ(t.calls, i % 4 + 1);
    EXPECT_EQ(std::set<std::string>(t.keys.begin(), t.keys.end()).size(), 1u);
    first_keys.insert(t.keys.front());
  }
  EXPECT_EQ(first_keys.size(), static_cast<std::size_t>(n));
}
}  // namespace retry_async_test_ns
