// The recovery layer inside the dispatcher (issue 5 on issue 4): run_plan,
// run_parallel, async_run_plan and the runtime form accept a retry policy and
// an approver as options extras; the policy is applied per call only where
// the call may be retried; a denied destructive call yields an outcome holding
// call_failure{confirmation_denied} and its tool never runs; destructive calls
// are retried only when that call opts in (`call(...).allow_destructive_retry()`).
#include <tool_effects/dispatch.hpp>
#include <tool_effects/retry.hpp>

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

// Unity-built with the other dispatch tests (test/CMakeLists.txt): all below is this file's own.
namespace dispatch_recovery_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {
struct timeout_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct users : te::resource<> {};
struct mail : te::resource<> {};
struct prefs : te::resource<> {};

// Each tool fails transiently on its first `fail_first` invocations and counts them (thread-safe).
struct counter {
  std::atomic<int> calls{0};
  int fail_first = 0;
  void hit() {
    if (++calls <= fail_first) throw timeout_error("timeout");
  }
};

struct fetch_user {  // class none: retry-safe
  using side_effects = te::effects<te::reads<users>, te::network>;
  counter* c;
  std::vector<std::string>* keys = nullptr;
  std::mutex* m = nullptr;
  int operator()(const te::attempt_context& ctx, int id) const {
    if (keys) {
      std::lock_guard lock(*m);
      keys->push_back(std::to_string(id) + ":" + ctx.idempotency_key);
    }
    c->hit();
    return id;
  }
};
struct send_email {  // non_idempotent
  using side_effects = te::effects<te::appends<mail>, te::external, te::network>;
  counter* c;
  std::string operator()(const std::string& to) const {
    c->hit();
    return "sent to " + to;
  }
};
struct set_pref {  // idempotent
  using side_effects = te::effects<te::writes<prefs>, te::idempotent>;
  counter* c;
  void operator()(int) const { c->hit(); }
};
struct delete_account {  // destructive, idempotent apart from that
  using side_effects = te::effects<te::writes<users>, te::destructive, te::idempotent>;
  counter* c;
  bool operator()(int) const {
    c->hit();
    return true;
  }
};
struct remote_fetch {  // an awaitable tool
  using side_effects = te::effects<te::reads<prefs>, te::network>;
  counter* c;
  asio::awaitable<int> operator()(int v) const {
    asio::steady_timer t(co_await asio::this_coro::executor, 50us);
    co_await t.async_wait(asio::use_awaitable);
    c->hit();
    co_return v;
  }
};

te::retry_policy policy(std::size_t n = 4) {
  return te::retry_policy{.max_attempts = n, .base_delay = 100us, .max_delay = 1ms,
                          .is_transient = te::transient_on<timeout_error>(), .seed = 5};
}

template <class T>
te::failure_reason reason_of(const te::outcome<T>& o) {
  try {
    std::rethrow_exception(o.error());
  } catch (const te::call_failure& f) {
    return f.reason();
  } catch (...) {
  }
  ADD_FAILURE() << "outcome does not hold a call_failure";
  return te::failure_reason::unsafe_to_retry;
}

struct approvals {
  std::atomic<int> asked{0};
  te::confirmation answer = te::confirmation::approve;
  te::approver get() {
    return te::approver([this](const te::confirmation_request&) {
      ++asked;
      return answer;
    });
  }
};
}  // namespace

TEST(DispatchRecovery, ThePolicyIsAppliedOnlyWhereTheCallMayBeRetried) {
  asio::thread_pool pool(2);
  counter fetch_c, mail_c, pref_c;
  fetch_c.fail_first = 2;
  mail_c.fail_first = 1;
  pref_c.fail_first = 3;
  const auto opts = te::run_options{}.with(policy());
  auto [u, m, p] = te::run_plan(pool, opts, te::call(fetch_user{&fetch_c}, 7), te::call(send_email{&mail_c}, "bob"),
                                te::call(set_pref{&pref_c}, 1));
  pool.join();
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u.value(), 7);
  EXPECT_EQ(fetch_c.calls.load(), 3);
  ASSERT_TRUE(m.has_error());
  EXPECT_EQ(reason_of(m), te::failure_reason::unsafe_to_retry);
  EXPECT_EQ(mail_c.calls.load(), 1);  // never re-sent
  EXPECT_TRUE(p.has_value());
  EXPECT_EQ(pref_c.calls.load(), 4);
}

TEST(DispatchRecovery, WithoutAPolicyErrorsAreDeliveredUnchanged) {
  asio::thread_pool pool(2);
  counter fetch_c;
  fetch_c.fail_first = 1;
  auto [u] = te::run_plan(pool, te::call(fetch_user{&fetch_c}, 7));
  pool.join();
  ASSERT_TRUE(u.has_error());
  EXPECT_THROW(std::rethrow_exception(u.error()), timeout_error);
  EXPECT_EQ(fetch_c.calls.load(), 1);
}

TEST(DispatchRecovery, ExhaustedRetriesAreAFailureRecord) {
  asio::thread_pool pool(1);
  counter c;
  c.fail_first = 100;
  auto [u] = te::run_plan(pool, te::run_options{}.with(policy(3)), te::call(fetch_user{&c}, 1));
  pool.join();
  ASSERT_TRUE(u.has_error());
  try {
    std::rethrow_exception(u.error());
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::retries_exhausted);
    EXPECT_EQ(f.record().attempts, 3u);
    EXPECT_NE(f.record().tool.find("fetch_user"), std::string::npos);
  }
  EXPECT_EQ(c.calls.load(), 3);
}

TEST(DispatchRecovery, ADeniedDestructiveCallNeverRunsAndOthersStillDo) {
  asio::thread_pool pool(2);
  counter del_c, fetch_c;
  approvals ask;
  ask.answer = te::confirmation::deny;
  const auto opts = te::run_options{}.with(ask.get());
  auto [d, u] = te::run_plan(pool, opts, te::call(delete_account{&del_c}, 1), te::call(fetch_user{&fetch_c}, 2));
  pool.join();
  ASSERT_TRUE(d.has_error());
  EXPECT_EQ(reason_of(d), te::failure_reason::confirmation_denied);
  EXPECT_EQ(del_c.calls.load(), 0);
  EXPECT_EQ(ask.asked.load(), 1);
  EXPECT_TRUE(u.has_value());
}

TEST(DispatchRecovery, AnApprovedDestructiveCallRunsOnceAndIsNotRetriedWithoutOptIn) {
  asio::thread_pool pool(2);
  counter del_c;
  del_c.fail_first = 1;
  approvals ask;
  const auto opts = te::run_options{}.with(policy()).with(ask.get());
  auto [d] = te::run_plan(pool, opts, te::call(delete_account{&del_c}, 1));
  pool.join();
  ASSERT_TRUE(d.has_error());
  EXPECT_EQ(reason_of(d), te::failure_reason::unsafe_to_retry);
  EXPECT_EQ(del_c.calls.load(), 1);
  EXPECT_EQ(ask.asked.load(), 1);
}

TEST(DispatchRecovery, AnOptedInDestructiveCallIsRetriedAndConfirmedOnce) {
  asio::thread_pool pool(2);
  counter del_c;
  del_c.fail_first = 2;
  approvals ask;
  const auto opts = te::run_options{}.with(policy()).with(ask.get());
  auto [d] = te::run_plan(pool, opts, te::call(delete_account{&del_c}, 1).allow_destructive_retry());
  pool.join();
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d.value());
  EXPECT_EQ(del_c.calls.load(), 3);
  EXPECT_EQ(ask.asked.load(), 1);
}

TEST(DispatchRecovery, RunParallelAndTheInlineExecutorApplyThePolicy) {
  counter a, b;
  a.fail_first = 1;
  b.fail_first = 1;
  {
    asio::thread_pool pool(2);
    auto [x, y] = te::run_parallel(pool, te::run_options{}.with(policy()), te::call(fetch_user{&a}, 1),
                                   te::call(fetch_user{&b}, 2));
    pool.join();
    EXPECT_TRUE(x.has_value() && y.has_value());
  }
  EXPECT_EQ(a.calls.load(), 2);
  EXPECT_EQ(b.calls.load(), 2);
  counter c, m;
  c.fail_first = 2;
  m.fail_first = 1;
  auto [x, y] = te::run_plan(te::inline_executor{}, te::run_options{}.with(policy()), te::call(fetch_user{&c}, 3),
                             te::call(send_email{&m}, "al"));
  EXPECT_EQ(x.value(), 3);
  EXPECT_EQ(c.calls.load(), 3);
  EXPECT_EQ(reason_of(y), te::failure_reason::unsafe_to_retry);
  EXPECT_EQ(m.calls.load(), 1);
}

TEST(DispatchRecovery, AttemptsShareAKeyAndCallsDoNot) {
  asio::thread_pool pool(2);
  counter c1, c2;
  c1.fail_first = 2;
  c2.fail_first = 1;
  std::vector<std::string> keys;
  std::mutex m;
  auto [x, y] = te::run_plan(pool, te::run_options{}.with(policy()), te::call(fetch_user{&c1, &keys, &m}, 1),
                             te::call(fetch_user{&c2, &keys, &m}, 2));
  pool.join();
  ASSERT_TRUE(x.has_value() && y.has_value());
  std::set<std::string> k1, k2;
  for (const auto& k : keys) (k[0] == '1' ? k1 : k2).insert(k.substr(2));
  EXPECT_EQ(keys.size(), 5u);
  ASSERT_EQ(k1.size(), 1u);
  ASSERT_EQ(k2.size(), 1u);
  EXPECT_NE(*k1.begin(), *k2.begin());
}

TEST(DispatchRecovery, AwaitableToolsAndAsyncRunPlanAreRetried) {
  asio::io_context io;
  counter r, f;
  r.fail_first = 2;
  f.fail_first = 1;
  const auto opts = te::run_options{}.with(policy());
  auto fut = asio::co_spawn(
      io,
      [&]() -> asio::awaitable<te::turn_outcomes<int, int>> {
        co_return co_await te::async_run_plan(opts, te::call(remote_fetch{&r}, 4), te::call(fetch_user{&f}, 5));
      },
      asio::use_future);
  io.run();
  auto [a, b] = fut.get();
  EXPECT_EQ(a.value(), 4);
  EXPECT_EQ(b.value(), 5);
  EXPECT_EQ(r.calls.load(), 3);
  EXPECT_EQ(f.calls.load(), 2);
}

TEST(DispatchRecovery, TheRuntimeFormUsesTheDescriptions) {
  asio::thread_pool pool(2);
  std::vector<te::call_description> calls{
      te::describe_runtime("lookup", {te::effect::read, te::effect::network}, {}),
      te::describe_runtime("notify", {te::effect::write, te::effect::external}, {{"mail", te::access_mode::append, std::nullopt}}),
      te::describe_runtime("rm", {te::effect::destructive}, {{"fs", te::access_mode::write, "/x"}})};
  std::atomic<int> lookups{0}, notifies{0}, removals{0};
  std::vector<std::function<int()>> tasks{
      [&] {
        if (++lookups < 3) throw timeout_error("t");
        return 1;
      },
      [&]() -> int {
        ++notifies;
        throw timeout_error("t");
      },
      [&] { return ++removals; }};
  // No approver: the destructive call is denied at runtime.
  auto out = te::run_plan(pool, te::run_options{}.with(policy()), std::span<const te::call_description>(calls), tasks);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].value(), 1);
  EXPECT_EQ(lookups.load(), 3);
  EXPECT_EQ(reason_of(out[1]), te::failure_reason::unsafe_to_retry);
  EXPECT_EQ(notifies.load(), 1);
  EXPECT_EQ(reason_of(out[2]), te::failure_reason::confirmation_denied);
  EXPECT_EQ(removals.load(), 0);
  // Even without any recovery option, a runtime destructive call is held.
  auto plain = te::run_plan(pool, std::span<const te::call_description>(calls).subspan(2), std::span(tasks).subspan(2));
  EXPECT_EQ(reason_of(plain[0]), te::failure_reason::confirmation_denied);
  EXPECT_EQ(removals.load(), 0);
  // With an approver it runs.
  approvals ask;
  auto approved = te::run_plan(pool, te::run_options{}.with(ask.get()),
                               std::span<const te::call_description>(calls).subspan(2), std::span(tasks).subspan(2));
  EXPECT_EQ(approved[0].value(), 1);
  EXPECT_EQ(ask.asked.load(), 1);
  pool.join();
}

// ---------------------------------------------------------------------------- issue 12
namespace {
struct mystery_tool {  // undeclared: unknown effects
  counter* c;
  int operator()(int v) const {
    c->hit();
    return v;
  }
};
struct plugin_tool {  // explicit empty set: unknown too
  using side_effects = te::effects<>;
  counter* c;
  int operator()(int v) const {
    c->hit();
    return v;
  }
};
struct bad_request : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Rejects odd requests (a permanent error, not transient); records keys.
struct strict_fetch {  // class none: RetrySafe
  using side_effects = te::effects<te::reads<users>, te::network>;
  std::vector<std::string>* keys;
  int operator()(const te::attempt_context& ctx, int id) const {
    keys->push_back(ctx.idempotency_key);
    if (id % 2 != 0) throw bad_request("odd id");
    return id;
  }
};
struct strict_set {  // idempotent class, no RepairsIdempotent: a changed repair is refused
  using side_effects = te::effects<te::writes<prefs>, te::idempotent>;
  int* runs;
  int operator()(int v) const {
    ++*runs;
    if (v % 2 != 0) throw bad_request("odd value");
    return v;
  }
};
}  // namespace

TEST(DispatchUnknown, StaticUnknownCallsAskTheApprover) {
  counter m, p, f;
  approvals ask;
  auto [a, b, c] = te::run_plan(te::inline_executor{}, te::run_options{}.with(ask.get()), te::call(mystery_tool{&m}, 1),
                                te::call(plugin_tool{&p}, 2), te::call(fetch_user{&f}, 3));
  EXPECT_EQ(a.value() + b.value() + c.value(), 6);
  EXPECT_EQ(ask.asked.load(), 2) << "both unknown calls, not the declared read";
  ask.answer = te::confirmation::deny;
  auto [d] = te::run_plan(te::inline_executor{}, te::run_options{}.with(ask.get()), te::call(mystery_tool{&m}, 1));
  EXPECT_EQ(reason_of(d), te::failure_reason::confirmation_denied);
  EXPECT_EQ(m.calls.load(), 1) << "the denied call never ran";
}

TEST(DispatchUnknown, TheExplicitOptOutRunsUnknownCallsUnconfirmedAndAlone) {
  asio::thread_pool pool(2);
  counter m, f;
  const auto opts = te::run_options{}.with(te::run_unknown_tools_unconfirmed{});
  auto [a, b] = te::run_plan(pool, opts, te::call(fetch_user{&f}, 1), te::call(mystery_tool{&m}, 2));
  pool.join();
  EXPECT_EQ(a.value(), 1);
  EXPECT_EQ(b.value(), 2);
}

TEST(DispatchUnknown, RuntimeUnknownCallsWithoutApproverAreDenied) {
  asio::thread_pool pool(2);
  std::vector<te::call_description> calls{te::call_description{"mcp_untrusted", {}, {}, true},
                                          te::describe_runtime("lookup", {te::effect::read}, {})};
  std::atomic<int> ran{0};
  std::vector<std::function<int()>> tasks{[&] { return ++ran; }, [&] { return 10; }};
  auto out = te::run_plan(pool, std::span<const te::call_description>(calls), tasks);
  EXPECT_EQ(reason_of(out[0]), te::failure_reason::confirmation_denied);
  try {
    std::rethrow_exception(out[0].error());
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.record().last_error_message.rfind("unknown effects", 0), 0u) << f.record().last_error_message;
    EXPECT_EQ(f.record().attempts, 0u);
  }
  EXPECT_EQ(out[1].value(), 10);
  EXPECT_EQ(ran.load(), 0);
  approvals ask;
  auto approved = te::run_plan(pool, te::run_options{}.with(ask.get()), std::span<const te::call_description>(calls), tasks);
  EXPECT_EQ(approved[0].value(), 1);
  EXPECT_EQ(ask.asked.load(), 1);
  auto unconfirmed = te::run_plan(pool, te::run_options{}.with(te::run_unknown_tools_unconfirmed{}),
                                  std::span<const te::call_description>(calls), tasks);
  EXPECT_EQ(unconfirmed[0].value(), 2);
  pool.join();
}

TEST(DispatchUnknown, ARuntimeDestructiveRetryOptInOnAnIneligibleCallIsInvalid) {
  struct opted_task {
    int* runs;
    int operator()() const { return ++*runs; }
    bool destructive_retry_allowed() const { return true; }
  };
  int runs = 0;
  std::vector<te::call_description> calls{te::describe_runtime("append", {te::effect::write}, {})};
  std::vector<opted_task> tasks{opted_task{&runs}};
  auto out = te::run_plan(te::inline_executor{}, te::run_options{}.with(policy()),
                          std::span<const te::call_description>(calls), tasks);
  EXPECT_THROW(std::rethrow_exception(out[0].error()), std::invalid_argument);
  EXPECT_EQ(runs, 0);
}

TEST(DispatchRepair, ARepairThroughTheDispatcherChangesTheRequestAndReRuns) {
  std::vector<std::string> keys;
  int fixes = 0;
  auto fix = [&](const std::exception_ptr&, int& id) {
    ++fixes;
    id += 1;  // odd -> even
    return true;
  };
  auto [a, b] = te::run_plan(te::inline_executor{}, te::run_options{}.with(policy()),
                             te::call(strict_fetch{&keys}, 3).with_repair(fix), te::call(strict_fetch{&keys}, 4));
  EXPECT_EQ(a.value(), 4) << "the repaired request";
  EXPECT_EQ(b.value(), 4);
  EXPECT_EQ(fixes, 1);
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[1], keys[0] + ".r1") << "a changed request gets a derived key";
  EXPECT_NE(keys[2], keys[0]);
  // Without a fix (or when it declines) the error is delivered unchanged.
  auto [c] = te::run_plan(te::inline_executor{}, te::run_options{}.with(policy()),
                          te::call(strict_fetch{&keys}, 5).with_repair([](const std::exception_ptr&, int&) { return false; }));
  EXPECT_THROW(std::rethrow_exception(c.error()), bad_request);
}

TEST(DispatchRepair, AChangedRepairOfAnIdempotentToolIsRefused) {
  int runs = 0;
  auto fix = [](const std::exception_ptr&, int& v) {
    ++v;
    return true;
  };
  auto [a] = te::run_plan(te::inline_executor{}, te::run_options{}.with(policy()),
                          te::call(strict_set{&runs}, 1).with_repair(fix));
  EXPECT_EQ(reason_of(a), te::failure_reason::non_idempotent_side_effect);
  EXPECT_EQ(runs, 1) << "not invoked again";
}

TEST(DispatchRepair, RepairAsyncIsAwaitable) {
  asio::io_context io;
  std::vector<std::string> keys;
  int fixes = 0;
  auto fut = asio::co_spawn(
      io,
      [&]() -> asio::awaitable<int> {
        co_return co_await te::repair_async(
            policy(), strict_fetch{&keys},
            [&](const std::exception_ptr&, int& id) {
              ++fixes;
              id *= 2;
              return true;
            },
            5);
      },
      asio::use_future);
  io.run();
  EXPECT_EQ(fut.get(), 10);
  EXPECT_EQ(fixes, 1);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[1], keys[0] + ".r1");
}

TEST(DispatchKey, ACallerChosenKeyReachesEveryAttempt) {
  counter c;
  c.fail_first = 2;
  std::vector<std::string> keys;
  std::mutex m;
  auto [a, b] = te::run_plan(te::inline_executor{}, te::run_options{}.with(policy()),
                             te::call(fetch_user{&c, &keys, &m}, 1).with_idempotency_key("order-77"),
                             te::call(fetch_user{&c, &keys, &m}, 2));
  EXPECT_EQ(a.value(), 1);
  ASSERT_EQ(keys.size(), 4u);
  EXPECT_EQ(keys[0], "1:order-77");
  EXPECT_EQ(keys[1], "1:order-77");
  EXPECT_EQ(keys[2], "1:order-77");
  EXPECT_NE(keys[3], "2:order-77");
  // Without recovery options (the plain path) the key is handed over too.
  std::vector<std::string> plain;
  counter d;
  auto [p] = te::run_plan(te::inline_executor{}, te::call(fetch_user{&d, &plain, &m}, 9).with_idempotency_key("k-9"));
  EXPECT_EQ(p.value(), 9);
  EXPECT_EQ(plain, std::vector<std::string>{"9:k-9"});
}
}  // namespace dispatch_recovery_test_ns
