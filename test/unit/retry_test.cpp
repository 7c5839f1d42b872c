// Synchronous retry and repair: the gates (may_retry, repaired_attempt_class,
// may_repair) against the rules, attempts and idempotency keys, transient vs
// permanent errors, exhaustion, stop tokens, repair of changed requests, the
// runtime path, and the backoff formulas checked statistically with fixed seeds.
#include <tool_effects/retry.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <set>
#include <stdexcept>
#include <version>
#if defined(__cpp_lib_jthread)
#include <stop_token>
#endif
#include <string>
#include <string_view>
#include <thread>
#include <vector>

// Unity-built with the other recovery tests (test/CMakeLists.txt): all below is this file's own.
namespace retry_test_ns {

namespace te = tool_effects;
using namespace std::chrono_literals;

namespace {
struct timeout_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct bad_request : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct prefs : te::resource<> {};

// A tool that fails transiently on its first `fail_first` calls, recording every attempt it sees.
template <class Effects>
struct scripted {
  using side_effects = Effects;
  int calls = 0;
  int fail_first = 0;
  std::vector<std::string> keys;
  std::vector<std::size_t> attempts;
  std::vector<bool> repairs;
  int operator()(const te::attempt_context& c, int x) {
    ++calls;
    keys.push_back(c.idempotency_key);
    attempts.push_back(c.attempt);
    repairs.push_back(c.is_repair);
    if (calls <= fail_first) throw timeout_error("timeout #" + std::to_string(calls));
    return 2 * x;
  }
};

using fetch_tool = scripted<te::effects<te::read, te::idempotent, te::network>>;        // class none
using upsert_tool = scripted<te::effects<te::writes<prefs>, te::idempotent>>;           // class idempotent
using read_only_tool = scripted<te::effects<te::reads<prefs>>>;                         // class none

te::retry_policy fast_policy(std::size_t max_attempts) {
  return te::retry_policy{.max_attempts = max_attempts,
                          .base_delay = 0ns,
                          .max_delay = 0ns,
                          .jitter = te::jitter_mode::full,
                          .is_transient = te::transient_on<timeout_error>(),
                          .seed = 7};
}

te::effect_set set_of(unsigned bits) { return te::effect_set::from_bits(static_cast<std::uint8_t>(bits)); }
}  // namespace

// ---------------------------------------------------------------------------------------------- rules

TEST(RetryRules, MayRetryIsRetrySafetyUnlessADestructiveCallOptsIn) {
  for (unsigned bits = 0; bits < 128; ++bits) {
    const auto s = set_of(bits);
    EXPECT_EQ(te::may_retry(s), te::is_retry_safe(s)) << te::to_string(s);
    auto without = s;
    without.erase(te::effect::destructive);
    const bool expected_opt_in = te::is_retry_safe(s) || (te::is_destructive(s) && te::is_retry_safe(without));
    EXPECT_EQ(te::may_retry(s, true), expected_opt_in) << te::to_string(s);
    if (te::is_destructive(s)) {
      EXPECT_FALSE(te::may_retry(s)) << te::to_string(s);
    }
  }
  EXPECT_FALSE(te::may_retry(te::effect_set{}, true));  // unknown: never
  EXPECT_TRUE(te::may_retry({te::effect::write, te::effect::destructive, te::effect::idempotent}, true));
  EXPECT_FALSE(te::may_retry({te::effect::write, te::effect::destructive}, true));
}

TEST(RetryRules, RepairedAttemptOfAnIdempotentCallWithChangedInputsIsNonIdempotent) {
  for (unsigned bits = 0; bits < 128; ++bits) {
    const auto s = set_of(bits);
    const auto c = te::classify(s);
    EXPECT_EQ(te::repaired_attempt_class(s, false, false), c);
    EXPECT_EQ(te::repaired_attempt_class(s, true, true), c);
    EXPECT_EQ(te::repaired_attempt_class(s, true, false),
              c == te::side_effect_class::idempotent ? te::side_effect_class::non_idempotent : c);
    // Repair never allows more than retry does.
    for (bool changed : {false, true})
      for (bool declared : {false, true})
        for (bool opt_in : {false, true})
          if (te::may_repair(s, changed, declared, opt_in)) {
            EXPECT_TRUE(te::may_retry(s, opt_in)) << te::to_string(s);
          }
  }
  const te::effect_set upsert{te::effect::write, te::effect::idempotent};
  EXPECT_TRUE(te::may_repair(upsert, false, false));
  EXPECT_FALSE(te::may_repair(upsert, true, false));
  EXPECT_TRUE(te::may_repair(upsert, true, true));
  const te::effect_set lookup{te::effect::read, te::effect::network};
  EXPECT_TRUE(te::may_repair(lookup, true, false));  // class none: no external effect to repeat
  EXPECT_FALSE(te::may_repair({te::effect::write}, false, true));
}

namespace {
struct plain {
  using side_effects = te::effects<te::write, te::idempotent>;
};
struct declared {
  using side_effects = te::effects<te::write, te::idempotent>;
  static constexpr bool repairs_idempotent = true;
};
struct declared_false {
  using side_effects = te::effects<te::write, te::idempotent>;
  static constexpr bool repairs_idempotent = false;
};
}  // namespace

TEST(RetryRules, RepairsIdempotentIsReadFromTheToolOrATrait) {
  EXPECT_FALSE(te::RepairsIdempotent<plain>);
  EXPECT_TRUE(te::RepairsIdempotent<declared>);
  EXPECT_TRUE(te::RepairsIdempotent<const declared&>);
  EXPECT_FALSE(te::RepairsIdempotent<declared_false>);
}

// ---------------------------------------------------------------------------------------------- retry

TEST(Retry, TransientErrorsAreRetriedWithOneKeyAndCountedAttempts) {
  upsert_tool t;
  t.fail_first = 2;
  EXPECT_EQ(te::retry(fast_policy(5), t, 21), 42);
  EXPECT_EQ(t.calls, 3);
  EXPECT_EQ(t.attempts, (std::vector<std::size_t>{1, 2, 3}));
  ASSERT_EQ(t.keys.size(), 3u);
  EXPECT_FALSE(t.keys[0].empty());
  EXPECT_EQ(std::set<std::string>(t.keys.begin(), t.keys.end()).size(), 1u);
  EXPECT_EQ(t.repairs, (std::vector<bool>{false, false, false}));
}

TEST(Retry, DifferentLogicalCallsGetDifferentKeys) {
  fetch_tool a, b;
  (void)te::retry(fast_policy(3), a, 1);
  (void)te::retry(fast_policy(3), a, 1);
  (void)te::retry(fast_policy(3), b, 1);
  ASSERT_EQ(a.keys.size(), 2u);
  ASSERT_EQ(b.keys.size(), 1u);
  EXPECT_NE(a.keys[0], a.keys[1]);
  EXPECT_NE(a.keys[0], b.keys[0]);
  EXPECT_NE(a.keys[1], b.keys[0]);
}

TEST(Retry, ExhaustionThrowsCallFailureWithTheLastError) {
  upsert_tool t;
  t.fail_first = 100;
  try {
    (void)te::retry(fast_policy(4), t, 1);
    FAIL() << "retry returned";
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::retries_exhausted);
    EXPECT_EQ(f.record().attempts, 4u);
    EXPECT_EQ(f.record().effect_class, te::side_effect_class::idempotent);
    EXPECT_EQ(f.record().last_error_message, "timeout #4");
    EXPECT_NE(f.record().tool.find("scripted"), std::string::npos) << f.record().tool;
    EXPECT_THROW(std::rethrow_exception(f.record().last_error), timeout_error);
  }
  EXPECT_EQ(t.calls, 4);
}

TEST(Retry, PermanentErrorsPropagateUnchangedAfterOneAttempt) {
  int calls = 0;
  auto t = te::tag<te::read, te::idempotent>([&](int) -> int {
    ++calls;
    throw bad_request("no such user");
  });
  EXPECT_THROW((void)te::retry(fast_policy(5), t, 1), bad_request);
  EXPECT_EQ(calls, 1);
}

TEST(Retry, TheDefaultPolicyCallsNothingTransient) {
  upsert_tool t;
  t.fail_first = 1;
  EXPECT_THROW((void)te::retry(te::retry_policy{}, t, 1), timeout_error);
  EXPECT_EQ(t.calls, 1);
}

TEST(Retry, AThrowingPredicateMeansNotTransient) {
  upsert_tool t;
  t.fail_first = 1;
  auto p = fast_policy(5);
  p.is_transient = [](const std::exception_ptr&) -> bool { throw std::logic_error("predicate bug"); };
  EXPECT_THROW((void)te::retry(p, t, 1), timeout_error);
  EXPECT_EQ(t.calls, 1);
}

TEST(Retry, ToolsWithoutAttemptContextAreCalledWithArgsOnly) {
  int calls = 0;
  auto t = te::tag<te::reads<prefs>>([&](int a, int b) {
    if (++calls < 2) throw timeout_error("t");
    return a + b;
  });
  EXPECT_EQ(te::retry(fast_policy(3), t, 2, 3), 5);
  EXPECT_EQ(calls, 2);
}

TEST(Retry, VoidToolsAndZeroMaxAttemptsMeaningOne) {
  int calls = 0;
  auto t = te::tag<te::read>([&] {
    ++calls;
    throw timeout_error("t");
  });
  try {
    te::retry(fast_policy(0), t);
    FAIL();
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::retries_exhausted);
    EXPECT_EQ(f.record().attempts, 1u);
  }
  EXPECT_EQ(calls, 1);
}

#if defined(__cpp_lib_jthread)  // std::stop_token (libc++ 19 has it only with -fexperimental-library)
TEST(Retry, AStopRequestEndsABackoffSleepAndRethrowsTheLastError) {
  std::stop_source stop;
  std::atomic<int> calls{0};
  auto t = te::tag<te::read, te::idempotent>([&] {
    ++calls;
    throw timeout_error("t");
  });
  auto p = fast_policy(10);
  p.base_delay = p.max_delay = std::chrono::hours(1);  // only a stop request can end this sleep
  p.jitter = te::jitter_mode::none;
  std::thread stopper([&] {
    while (calls.load() == 0) std::this_thread::yield();
    stop.request_stop();
  });
  EXPECT_THROW(te::retry(stop.get_token(), p, t), timeout_error);
  stopper.join();
  EXPECT_EQ(calls.load(), 1);
}

TEST(Retry, AStopRequestedDuringAnAttemptPreventsTheNextOne) {
  std::stop_source stop;
  int calls = 0;
  auto t = te::tag<te::read>([&] {
    ++calls;
    stop.request_stop();
    throw timeout_error("t");
  });
  EXPECT_THROW(te::retry(stop.get_token(), fast_policy(10), t), timeout_error);
  EXPECT_EQ(calls, 1);
}

#endif

TEST(Retry, TransientOnMatchesDerivedTypesOnly) {
  const auto p = te::transient_on<std::runtime_error>();
  EXPECT_TRUE(p(std::make_exception_ptr(timeout_error("t"))));
  EXPECT_FALSE(p(std::make_exception_ptr(std::logic_error("l"))));
  EXPECT_FALSE(p(std::make_exception_ptr(7)));
  EXPECT_FALSE(p(nullptr));
  const auto two = te::transient_on<bad_request, int>();
  EXPECT_TRUE(two(std::make_exception_ptr(7)));
  EXPECT_TRUE(two(std::make_exception_ptr(bad_request("b"))));
  EXPECT_FALSE(two(std::make_exception_ptr(timeout_error("t"))));
}

// ---------------------------------------------------------------------------------------------- repair

namespace {
struct search_tool {  // class none: reads only
  using side_effects = te::effects<te::reads<prefs>, te::network>;
  std::vector<std::string> seen;
  std::vector<bool> repairs;
  std::vector<std::string> keys;
  std::string operator()(const te::attempt_context& c, const std::string& q) {
    seen.push_back(q);
    repairs.push_back(c.is_repair);
    keys.push_back(c.idempotency_key);
    if (q.find('!') != std::string::npos) throw bad_request("bad query: " + q);
    return "results for " + q;
  }
};
struct set_pref_tool {  // class idempotent
  using side_effects = te::effects<te::writes<prefs>, te::idempotent>;
  int calls = 0;
  int operator()(int v) {
    ++calls;
    if (v < 0) throw bad_request("negative");
    return v;
  }
};
struct set_pref_repairable : set_pref_tool {
  static constexpr bool repairs_idempotent = true;
};
const auto strip_bang = [](const std::exception_ptr&, std::string& q) {
  q.erase(std::remove(q.begin(), q.end(), '!'), q.end());
  return true;
};
const auto negate = [](const std::exception_ptr&, int& v) {
  v = -v;
  return true;
};
}  // namespace

TEST(Repair, AReadOnlyToolIsRepairedWithTheChangedRequest) {
  search_tool t;
  EXPECT_EQ(te::repair(fast_policy(3), t, strip_bang, std::string("cats!")), "results for cats");
  EXPECT_EQ(t.seen, (std::vector<std::string>{"cats!", "cats"}));
  EXPECT_EQ(t.repairs, (std::vector<bool>{false, true}));
  ASSERT_EQ(t.keys.size(), 2u);
  EXPECT_EQ(t.keys[1], t.keys[0] + ".r1");  // a changed request is a new request for deduplication
}

TEST(Repair, AChangedRequestOfAnIdempotentToolIsRefusedAsNonIdempotent) {
  set_pref_tool t;
  try {
    (void)te::repair(fast_policy(3), t, negate, -5);
    FAIL();
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::non_idempotent_side_effect);
    EXPECT_EQ(f.record().effect_class, te::side_effect_class::non_idempotent);
    EXPECT_EQ(f.record().attempts, 1u);
    EXPECT_EQ(f.record().last_error_message, "negative");
  }
  EXPECT_EQ(t.calls, 1);  // never invoked again
}

TEST(Repair, DeclaredRepairsIdempotentAllowsTheChangedRequest) {
  set_pref_repairable t;
  EXPECT_EQ(te::repair(fast_policy(3), t, negate, -5), 5);
  EXPECT_EQ(t.calls, 2);
}

TEST(Repair, AnUnchangedRequestIsARetryAndIsBoundedByMaxAttempts) {
  set_pref_tool t;
  int fixes = 0;
  const auto keep = [&](const std::exception_ptr&, int&) { return ++fixes < 100; };
  try {
    (void)te::repair(fast_policy(3), t, keep, -1);
    FAIL();
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::retries_exhausted);
    EXPECT_EQ(f.record().attempts, 3u);
  }
  EXPECT_EQ(t.calls, 3);
}

TEST(Repair, AFixThatGivesUpRethrowsTheError) {
  set_pref_tool t;
  EXPECT_THROW((void)te::repair(fast_policy(3), t, [](const std::exception_ptr&, int&) { return false; }, -1),
               bad_request);
  EXPECT_EQ(t.calls, 1);
}

// ---------------------------------------------------------------------------------------------- runtime path

TEST(RuntimePath, ANonRetrySafeCallIsNeverInvokedAgain) {
  const auto d = te::describe_runtime("send_email", {te::effect::write, te::effect::external, te::effect::network}, {});
  int calls = 0;
  auto r = te::run_with_recovery(d, te::recovery_options{fast_policy(5), {}}, {}, [&](int) -> int {
    ++calls;
    throw timeout_error("smtp timeout");
  }, 1);
  EXPECT_EQ(calls, 1);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.failure().reason, te::failure_reason::unsafe_to_retry);
  EXPECT_EQ(r.failure().tool, "send_email");
  EXPECT_EQ(r.failure().attempts, 1u);
  EXPECT_EQ(r.failure().effect_class, te::side_effect_class::non_idempotent);
  EXPECT_EQ(r.failure().last_error_message, "smtp timeout");
  EXPECT_THROW((void)r.value(), te::call_failure);
}

TEST(RuntimePath, UnknownDescriptionsAreNotRetried) {
  te::call_description unknown;  // exclusive, unknown
  unknown.name = "mystery";
  unknown.effects = {te::effect::read};  // ignored: an exclusive description is unknown
  int calls = 0;
  auto r = te::run_with_recovery(unknown, te::recovery_options{fast_policy(5), te::approve_all()}, {}, [&] {
    ++calls;
    throw timeout_error("t");
  });
  EXPECT_EQ(calls, 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.failure().reason, te::failure_reason::unsafe_to_retry);
}

TEST(RuntimePath, UnknownEffectsNeedAnApprover) {
  te::call_description unknown;  // exclusive, unknown
  unknown.name = "mystery";
  int calls = 0;
  auto tool = [&] { return ++calls; };
  auto denied = te::run_with_recovery(unknown, te::recovery_options{}, {}, tool);
  ASSERT_FALSE(denied);
  EXPECT_EQ(calls, 0) << "never ran";
  EXPECT_EQ(denied.failure().reason, te::failure_reason::confirmation_denied);
  EXPECT_EQ(denied.failure().attempts, 0u);
  EXPECT_EQ(denied.failure().last_error_message.rfind("unknown effects", 0), 0u) << denied.failure().last_error_message;

  auto by_approver = te::run_with_recovery(unknown, te::recovery_options{{}, te::deny_all()}, {}, tool);
  ASSERT_FALSE(by_approver);
  EXPECT_EQ(by_approver.failure().last_error_message, "unknown effects: denied by the approver");

  std::vector<std::string> asked;
  const te::approver record = [&](const te::confirmation_request& r) {
    asked.emplace_back(r.tool);
    EXPECT_TRUE(r.effects.empty());
    return te::confirmation::approve;
  };
  EXPECT_EQ(te::run_with_recovery(unknown, te::recovery_options{{}, record}, {}, tool).value(), 1);
  EXPECT_EQ(asked, std::vector<std::string>{"mystery"});

  te::recovery_options unconfirmed;
  unconfirmed.unknown_tools_unconfirmed = true;
  EXPECT_EQ(te::run_with_recovery(unknown, unconfirmed, {}, tool).value(), 2) << "the explicit opt-out";
  const auto rm = te::describe_runtime("rm", {te::effect::write, te::effect::destructive}, {});
  EXPECT_EQ(te::run_with_recovery(rm, unconfirmed, {}, tool).failure().reason, te::failure_reason::confirmation_denied)
      << "the opt-out is for unknown effects only";
}

TEST(RuntimePath, DestructiveRetryOptInOnAnIneligibleCallThrows) {
  const auto append = te::describe_runtime("append", {te::effect::write}, {});
  te::call_settings s;
  s.allow_destructive_retry = true;
  int calls = 0;
  EXPECT_THROW((void)te::run_with_recovery(append, te::recovery_options{}, s, [&] { return ++calls; }),
               std::invalid_argument);
  EXPECT_EQ(calls, 0);
  const auto idempotent_delete =
      te::describe_runtime("delete", {te::effect::write, te::effect::idempotent, te::effect::destructive}, {});
  EXPECT_EQ(te::run_with_recovery(idempotent_delete, te::recovery_options{{}, te::approve_all()}, s,
                                  [&] { return ++calls; })
                .value(),
            1);
}

TEST(RuntimePath, RetrySafeDescriptionsAreRetriedAndReturnValues) {
  const auto d = te::describe_runtime("lookup", {te::effect::read, te::effect::network}, {});
  std::vector<std::string> keys;
  te::call_settings s;
  s.idempotency_key = "caller-key-1";
  auto r = te::run_with_recovery(d, te::recovery_options{fast_policy(5), {}}, s, [&](const te::attempt_context& c) {
    keys.push_back(c.idempotency_key);
    if (keys.size() < 3) throw timeout_error("t");
    return std::string("ok");
  });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r.value(), "ok");
  EXPECT_EQ(keys, (std::vector<std::string>{"caller-key-1", "caller-key-1", "caller-key-1"}));
}

TEST(RuntimePath, WithoutAPolicyErrorsPropagate) {
  const auto d = te::describe_runtime("lookup", {te::effect::read}, {});
  int calls = 0;
  EXPECT_THROW((void)te::run_with_recovery(d, te::recovery_options{}, {}, [&] {
    ++calls;
    throw timeout_error("t");
  }),
               timeout_error);
  EXPECT_EQ(calls, 1);
}

// ---------------------------------------------------------------------------------------------- backoff

namespace {
struct stats {
  double min = 1e300, max = -1e300, sum = 0;
  int n = 0;
  void add(double v) {
    min = std::min(min, v);
    max = std::max(max, v);
    sum += v;
    ++n;
  }
  double mean() const { return sum / n; }
};
te::retry_policy jitter_policy(te::jitter_mode m) {
  return te::retry_policy{.max_attempts = 10, .base_delay = 1000ns, .max_delay = 16000ns, .jitter = m};
}
constexpr int samples = 20000;
}  // namespace

TEST(Backoff, ExponentIsCappedAndDoesNotOverflow) {
  te::backoff b(jitter_policy(te::jitter_mode::none), 1);
  EXPECT_EQ(b.exp(0), 1000ns);
  EXPECT_EQ(b.exp(1), 2000ns);
  EXPECT_EQ(b.exp(4), 16000ns);
  EXPECT_EQ(b.exp(5), 16000ns);
  EXPECT_EQ(b.exp(1000), 16000ns);
  te::retry_policy huge{.base_delay = std::chrono::hours(1), .max_delay = std::chrono::nanoseconds::max()};
  te::backoff h(huge, 1);
  EXPECT_EQ(h.exp(200), std::chrono::nanoseconds::max());
}

TEST(Backoff, NoneIsTheCappedExponential) {
  te::backoff b(jitter_policy(te::jitter_mode::none), 1);
  for (long expected : {1000L, 2000L, 4000L, 8000L, 16000L, 16000L}) EXPECT_EQ(b.next().count(), expected);
  EXPECT_EQ(b.retries(), 6u);
}

TEST(Backoff, FullJitterIsUniformBetweenZeroAndTheExponential) {
  for (std::size_t n : {0u, 2u, 6u}) {
    stats s;
    for (int i = 0; i < samples; ++i) {
      te::backoff b(jitter_policy(te::jitter_mode::full), 1000u * n + static_cast<std::uint64_t>(i));
      std::chrono::nanoseconds d{};
      for (std::size_t k = 0; k <= n; ++k) d = b.next();
      s.add(static_cast<double>(d.count()));
    }
    const double hi = static_cast<double>(std::min<long>(1000L << n, 16000L));
    EXPECT_GE(s.min, 0.0);
    EXPECT_LE(s.max, hi);
    EXPECT_LT(s.min, 0.02 * hi);  // the whole range is reached
    EXPECT_GT(s.max, 0.98 * hi);
    EXPECT_NEAR(s.mean(), hi / 2, 0.02 * hi) << "n=" << n;
  }
}

TEST(Backoff, EqualJitterIsHalfPlusUniformHalf) {
  for (std::size_t n : {0u, 3u, 7u}) {
    stats s;
    for (int i = 0; i < samples; ++i) {
      te::backoff b(jitter_policy(te::jitter_mode::equal), 77u + 1000u * n + static_cast<std::uint64_t>(i));
      std::chrono::nanoseconds d{};
      for (std::size_t k = 0; k <= n; ++k) d = b.next();
      s.add(static_cast<double>(d.count()));
    }
    const double hi = static_cast<double>(std::min<long>(1000L << n, 16000L));
    EXPECT_GE(s.min, hi / 2);
    EXPECT_LE(s.max, hi);
    EXPECT_LT(s.min, 0.52 * hi);
    EXPECT_GT(s.max, 0.98 * hi);
    EXPECT_NEAR(s.mean(), 0.75 * hi, 0.02 * hi) << "n=" << n;
  }
}

TEST(Backoff, DecorrelatedJitterStaysBetweenBaseAndCapAndTriplesAtMost) {
  stats first, all;
  for (int i = 0; i < samples / 10; ++i) {
    te::backoff b(jitter_policy(te::jitter_mode::decorrelated), 5u + static_cast<std::uint64_t>(i));
    double prev = 1000;  // the formula's initial "previous sleep" is base
    for (int k = 0; k < 10; ++k) {
      const double d = static_cast<double>(b.next().count());
      if (k == 0) first.add(d);
      all.add(d);
      EXPECT_GE(d, 1000.0);
      EXPECT_LE(d, std::min(16000.0, prev * 3));
      prev = d;
    }
  }
  // First sleep: uniform(base, 3*base).
  EXPECT_NEAR(first.mean(), 2000.0, 60.0);
  EXPECT_LT(first.min, 1050.0);
  EXPECT_GT(first.max, 2950.0);
  EXPECT_EQ(all.max, 16000.0);  // the cap is reached
  EXPECT_GE(all.min, 1000.0);
}

TEST(Backoff, AFixedSeedGivesTheSameSequenceAndSeedsDiffer) {
  for (auto m : {te::jitter_mode::full, te::jitter_mode::equal, te::jitter_mode::decorrelated}) {
    te::backoff a(jitter_policy(m), 42), b(jitter_policy(m), 42), c(jitter_policy(m), 43);
    std::vector<long> va, vb, vc;
    for (int i = 0; i < 8; ++i) {
      va.push_back(a.next().count());
      vb.push_back(b.next().count());
      vc.push_back(c.next().count());
    }
    EXPECT_EQ(va, vb) << te::to_string(m);
    EXPECT_NE(va, vc) << te::to_string(m);
  }
}

TEST(Backoff, JitterSlugs) {
  EXPECT_EQ(te::to_string(te::jitter_mode::none), "none");
  EXPECT_EQ(te::to_string(te::jitter_mode::full), "full");
  EXPECT_EQ(te::to_string(te::jitter_mode::equal), "equal");
  EXPECT_EQ(te::to_string(te::jitter_mode::decorrelated), "decorrelated");
}

TEST(IdempotencyKey, GeneratedKeysAreDistinctAcrossThreads) {
  std::vector<std::vector<std::string>> per(4);
  std::vector<std::thread> threads;
  for (auto& v : per)
    threads.emplace_back([&v] {
      for (int i = 0; i < 500; ++i) v.push_back(te::random_idempotency_key());
    });
  for (auto& t : threads) t.join();
  std::set<std::string> all;
  for (const auto& v : per) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), 2000u);
  for (const auto& k : all) {
    ASSERT_EQ(k.size(), 36u) << k;
    EXPECT_EQ(k[14], '4') << "RFC 9562 version 4 (random): " << k;
    // The standard form (formatted by the library since issue 39.3, without Boost.UUID): 8-4-4-4-12 lowercase
    // hexadecimal digits, and the variant 10 (the 17th digit is 8, 9, a or b).
    for (std::size_t i = 0; i < k.size(); ++i) {
      if (i == 8 || i == 13 || i == 18 || i == 23) EXPECT_EQ(k[i], '-') << k;
      else EXPECT_TRUE((k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'f')) << k;
    }
    EXPECT_NE(std::string_view("89ab").find(k[19]), std::string_view::npos) << "RFC 9562 variant: " << k;
  }
}
}  // namespace retry_test_ns
