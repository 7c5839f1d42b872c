// Property tests of the recovery rules with invocation counters, over every
// effect set (all 128), random failure schedules (success / transient /
// permanent per attempt), random policies, approver answers and opt-ins, on
// the sync and the awaitable per-call entry points of the one attempt loop
// (detail::run_call / detail::run_call_async, detail/recovery.hpp: hence
// test/detail/):
//  * a call that may not be retried (not retry-safe, or destructive without
//    opt-in) is invoked exactly once, whatever fails;
//  * a destructive call is never invoked without a granted confirmation;
//  * a retryable call is invoked at most max_attempts times, exactly as many
//    times as its schedule dictates, and every attempt sees the same
//    idempotency key (1-based attempt numbers); different calls, different keys;
//  * the outcome is the value, the permanent error unchanged, or a record
//    with the right reason (retries_exhausted / unsafe_to_retry / confirmation_denied);
//  * the same through the dispatcher (runtime form, thread pool, random turns).
#include <tool_effects/dispatch.hpp>
#include <tool_effects/retry.hpp>

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

// Unity-built with the other recovery tests (test/CMakeLists.txt): all below is this file's own.
namespace recovery_property_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {
struct transient_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct permanent_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class outcome { ok, transient, permanent };

struct scenario {
  te::effect_set effects;
  std::vector<outcome> schedule;  // outcome of attempt i (ok after the end)
  std::size_t max_attempts = 1;
  bool has_policy = true;
  bool has_approver = true;
  bool approve = true;
  bool opt_in = false;
};

scenario random_scenario(std::mt19937_64& rng) {
  scenario s;
  s.effects = te::effect_set::from_bits(static_cast<std::uint8_t>(rng() % 128));
  const std::size_t len = rng() % 7;
  for (std::size_t i = 0; i < len; ++i) {
    const auto r = rng() % 10;
    s.schedule.push_back(r < 6 ? outcome::transient : r < 8 ? outcome::permanent : outcome::ok);
  }
  s.max_attempts = rng() % 6;  // 0 means 1
  s.has_policy = rng() % 8 != 0;
  s.has_approver = rng() % 6 != 0;
  s.approve = rng() % 3 != 0;
  s.opt_in = rng() % 2 == 0;
  // An opt-in the effects cannot accept is an error (issue 12): keep a quarter of those cases.
  if (s.opt_in && !te::accepts_destructive_retry_opt_in(s.effects) && rng() % 4 != 0) s.opt_in = false;
  return s;
}

// The scripted tool; counts invocations and checks the confirmation was granted first.
struct probe {
  const scenario* sc = nullptr;
  bool* granted = nullptr;
  int invocations = 0;
  int invoked_without_grant = 0;
  std::vector<std::string> keys{};
  std::vector<std::size_t> attempts{};
  int operator()(const te::attempt_context& c, int x) {
    ++invocations;
    if (te::needs_confirmation(sc->effects) && !*granted) ++invoked_without_grant;
    keys.push_back(c.idempotency_key);
    attempts.push_back(c.attempt);
    const auto i = static_cast<std::size_t>(invocations - 1);
    const outcome o = i < sc->schedule.size() ? sc->schedule[i] : outcome::ok;
    if (o == outcome::transient) throw transient_error("transient #" + std::to_string(invocations));
    if (o == outcome::permanent) throw permanent_error("permanent #" + std::to_string(invocations));
    return x;
  }
};

te::recovery_options options_for(const scenario& s, bool* granted) {
  te::recovery_options o;
  if (s.has_policy)
    o.retry = te::retry_policy{.max_attempts = s.max_attempts, .base_delay = 0ns, .max_delay = 0ns,
                               .is_transient = te::transient_on<transient_error>(), .seed = 1};
  if (s.has_approver) {
    const bool approve = s.approve;
    o.approver = [granted, approve](const te::confirmation_request&) {
      *granted = approve;
      return approve ? te::confirmation::approve : te::confirmation::deny;
    };
  }
  return o;
}

// What must have happened, from the rules alone.
struct expectation {
  int invocations = 0;
  enum { value, permanent, failure, invalid } kind = value;
  te::failure_reason reason{};
};

expectation expected(const scenario& s) {
  expectation e;
  if (s.opt_in && !te::accepts_destructive_retry_opt_in(s.effects)) {  // an opt-in that cannot take effect
    e.kind = expectation::invalid;
    return e;
  }
  if (te::needs_confirmation(s.effects) && !(s.has_approver && s.approve)) {
    e.kind = expectation::failure;
    e.reason = te::failure_reason::confirmation_denied;
    return e;
  }
  const bool retryable = s.has_policy && te::may_retry(s.effects, s.opt_in);
  const std::size_t max = s.max_attempts == 0 ? 1 : s.max_attempts;
  for (std::size_t i = 0;; ++i) {
    ++e.invocations;
    const outcome o = i < s.schedule.size() ? s.schedule[i] : outcome::ok;
    if (o == outcome::ok) return e;
    if (o == outcome::permanent || !s.has_policy) {
      e.kind = expectation::permanent;  // without a policy every error propagates unchanged
      return e;
    }
    if (!retryable) {
      e.kind = expectation::failure;
      e.reason = te::failure_reason::unsafe_to_retry;
      return e;
    }
    if (e.invocations >= static_cast<int>(max)) {
      e.kind = expectation::failure;
      e.reason = te::failure_reason::retries_exhausted;
      return e;
    }
  }
}

// Runs one scenario through `run` (sync or async) and checks every property.
template <class Run>
void check(const scenario& s, std::uint64_t iteration, std::set<std::string>& all_keys, Run&& run) {
  bool granted = false;
  probe p{&s, &granted};
  const te::recovery_options o = options_for(s, &granted);
  te::call_settings settings{"probe", "", s.opt_in};
  const expectation e = expected(s);
  SCOPED_TRACE("iteration " + std::to_string(iteration) + " effects {" + te::to_string(s.effects) + "}");

  std::exception_ptr error;
  int value = -1;
  try {
    value = run(o, settings, p);
  } catch (...) {
    error = std::current_exception();
  }

  EXPECT_EQ(p.invoked_without_grant, 0);
  EXPECT_EQ(p.invocations, e.invocations);
  if (!te::may_retry(s.effects, s.opt_in)) {
    EXPECT_LE(p.invocations, 1);
  }
  if (s.has_policy) {
    EXPECT_LE(p.invocations, static_cast<int>(std::max<std::size_t>(1, s.max_attempts)));
  }
  for (std::size_t i = 0; i < p.attempts.size(); ++i) EXPECT_EQ(p.attempts[i], i + 1);
  if (!p.keys.empty()) {
    EXPECT_EQ(std::set<std::string>(p.keys.begin(), p.keys.end()).size(), 1u);
    EXPECT_TRUE(all_keys.insert(p.keys.front()).second) << "a key was reused across logical calls";
  }
  switch (e.kind) {
    case expectation::value:
      EXPECT_FALSE(error);
      EXPECT_EQ(value, 7);
      break;
    case expectation::permanent:
      ASSERT_TRUE(error);
      try {  // the last attempt's own error, unchanged
        std::rethrow_exception(error);
      } catch (const permanent_error& x) {
        EXPECT_EQ(std::string(x.what()), "permanent #" + std::to_string(e.invocations));
      } catch (const transient_error& x) {
        EXPECT_FALSE(s.has_policy);  // a transient error propagates only when no policy was given
        EXPECT_EQ(std::string(x.what()), "transient #" + std::to_string(e.invocations));
      } catch (...) {
        ADD_FAILURE() << "unexpected exception type";
      }
      break;
    case expectation::failure:
      ASSERT_TRUE(error);
      try {
        std::rethrow_exception(error);
      } catch (const te::call_failure& f) {
        EXPECT_EQ(f.reason(), e.reason);
        EXPECT_EQ(f.record().attempts, static_cast<std::size_t>(e.invocations));
        EXPECT_EQ(f.record().effect_class, te::classify(s.effects));
        EXPECT_EQ(f.record().tool, "probe");
        if (e.reason != te::failure_reason::confirmation_denied) {
          EXPECT_EQ(f.record().last_error_message, "transient #" + std::to_string(e.invocations));
        }
      } catch (...) {
        ADD_FAILURE() << "expected call_failure";
      }
      break;
    case expectation::invalid:
      ASSERT_TRUE(error);
      EXPECT_THROW(std::rethrow_exception(error), std::invalid_argument);
      break;
  }
}
}  // namespace

TEST(RecoveryProperty, SyncEntryPointOverRandomSchedules) {
  std::mt19937_64 rng(20251122);
  std::set<std::string> keys;
  int destructive = 0, not_retry_safe = 0, retried = 0;
  for (std::uint64_t i = 0; i < 6000; ++i) {
    const scenario s = random_scenario(rng);
    destructive += te::is_destructive(s.effects);
    not_retry_safe += !te::is_retry_safe(s.effects);
    check(s, i, keys, [&](const te::recovery_options& o, const te::call_settings& cs, probe& p) {
      int x = 7;
      return te::detail::run_call(o, cs, s.effects, {}, p, x);
    });
    retried += expected(s).invocations > 1;
  }
  // The generator covers every branch.
  EXPECT_GT(destructive, 1000);
  EXPECT_GT(not_retry_safe, 1000);
  EXPECT_GT(retried, 500);
}

TEST(RecoveryProperty, AwaitableEntryPointOverRandomSchedules) {
  std::mt19937_64 rng(777);
  std::set<std::string> keys;
  for (std::uint64_t i = 0; i < 1500; ++i) {
    const scenario s = random_scenario(rng);
    check(s, i, keys, [&](const te::recovery_options& o, const te::call_settings& cs, probe& p) {
      asio::io_context io;
      int x = 7;
      auto f = asio::co_spawn(io, te::detail::run_call_async(o, cs, s.effects, p, x), asio::use_future);
      io.run();
      return f.get();
    });
  }
}

TEST(RecoveryProperty, RuntimePathNeverInvokesANonRetrySafeCallTwice) {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 3000; ++i) {
    const auto effects = te::effect_set::from_bits(static_cast<std::uint8_t>(rng() % 128));
    const auto d = te::describe_runtime("rt", effects, {});
    const int failures = static_cast<int>(rng() % 5);
    int calls = 0;
    te::recovery_options o{te::retry_policy{.max_attempts = 5, .base_delay = 0ns, .max_delay = 0ns,
                                            .is_transient = te::transient_on<transient_error>()},
                           te::approve_all()};
    auto r = te::run_with_recovery(d, o, {}, [&] {
      if (++calls <= failures) throw transient_error("t");
      return calls;
    });
    if (!te::is_retry_safe(effects) && failures > 0) {
      EXPECT_EQ(calls, 1) << te::to_string(effects);
      ASSERT_FALSE(r);
      EXPECT_EQ(r.failure().reason, te::failure_reason::unsafe_to_retry);
    } else {
      EXPECT_EQ(calls, failures + 1) << te::to_string(effects);
      EXPECT_TRUE(r);
    }
  }
}

TEST(RecoveryProperty, DispatcherOverRandomTurns) {
  // Random turns of 6 described calls through run_plan's runtime form on a pool,
  // with a policy and an approver that approves some destructive calls.
  std::mt19937_64 rng(4242);
  asio::thread_pool pool(2);
  std::set<std::string> keys;
  for (int turn = 0; turn < 250; ++turn) {
    constexpr std::size_t n = 6;
    std::vector<scenario> sc(n);
    std::vector<te::call_description> calls;
    std::vector<bool> approve(n);
    for (std::size_t i = 0; i < n; ++i) {
      sc[i] = random_scenario(rng);
      sc[i].has_policy = true;
      sc[i].has_approver = true;
      sc[i].opt_in = false;
      approve[i] = rng() % 2 == 0;
      sc[i].approve = approve[i];
      calls.push_back(te::describe_runtime("c" + std::to_string(i), sc[i].effects, {}));
    }
    // One policy per turn (max_attempts of call 0 for all).
    const std::size_t max_attempts = sc[0].max_attempts;
    for (auto& s : sc) s.max_attempts = max_attempts;
    auto granted = std::make_unique<std::atomic<bool>[]>(n);
    std::vector<std::atomic<int>> invocations(n), without_grant(n);
    std::vector<std::vector<std::string>> seen(n);
    // The runtime form needs tasks callable with no arguments; one that also
    // accepts an attempt_context receives it under the recovery layer.
    struct task {
      std::function<int(const te::attempt_context&)> f;
      int operator()(const te::attempt_context& ctx) const { return f(ctx); }
      int operator()() const { return f(te::attempt_context{}); }
    };
    std::vector<task> tasks;
    for (std::size_t i = 0; i < n; ++i)
      tasks.push_back(task{[&, i](const te::attempt_context& ctx) {
        const int k = ++invocations[i];
        if (te::needs_confirmation(sc[i].effects) && !granted[i]) ++without_grant[i];
        seen[i].push_back(ctx.idempotency_key);
        const auto at = static_cast<std::size_t>(k - 1);
        const outcome o = at < sc[i].schedule.size() ? sc[i].schedule[at] : outcome::ok;
        if (o == outcome::transient) throw transient_error("transient #" + std::to_string(k));
        if (o == outcome::permanent) throw permanent_error("permanent #" + std::to_string(k));
        return 7;
      }});
    const auto options =
        te::run_options{}
            .with(te::retry_policy{.max_attempts = max_attempts, .base_delay = 0ns, .max_delay = 0ns,
                                   .is_transient = te::transient_on<transient_error>(), .seed = 3})
            .with(te::approver([&](const te::confirmation_request& r) {
              const std::size_t i = static_cast<std::size_t>(std::stoi(std::string(r.tool.substr(1))));
              granted[i] = approve[i];
              return approve[i] ? te::confirmation::approve : te::confirmation::deny;
            }));
    auto out = te::run_plan(pool, options, std::span<const te::call_description>(calls), tasks);
    for (std::size_t i = 0; i < n; ++i) {
      SCOPED_TRACE("turn " + std::to_string(turn) + " call " + std::to_string(i) + " {" +
                   te::to_string(sc[i].effects) + "}");
      const expectation e = expected(sc[i]);
      EXPECT_EQ(without_grant[i].load(), 0);
      EXPECT_EQ(invocations[i].load(), e.invocations);
      if (!seen[i].empty()) {
        EXPECT_EQ(std::set<std::string>(seen[i].begin(), seen[i].end()).size(), 1u);
        EXPECT_TRUE(keys.insert(seen[i].front()).second);
      }
      switch (e.kind) {
        case expectation::value:
          EXPECT_TRUE(out[i].has_value());
          break;
        case expectation::permanent:
          ASSERT_TRUE(out[i].has_error());
          EXPECT_THROW(std::rethrow_exception(out[i].error()), permanent_error);
          break;
        case expectation::failure:
          ASSERT_TRUE(out[i].has_error());
          try {
            std::rethrow_exception(out[i].error());
          } catch (const te::call_failure& f) {
            EXPECT_EQ(f.reason(), e.reason);
          } catch (...) {
            ADD_FAILURE() << "expected call_failure";
          }
          break;
        case expectation::invalid:
          ADD_FAILURE() << "no opt-in in this test";
          break;
      }
    }
  }
  pool.join();
}
}  // namespace recovery_property_test_ns
