// Confirmation of destructive calls: approver concepts and the type-erased
// approver (sync, awaitable, empty = deny), and the per-call gate, through
// the runtime path (run_with_recovery): a destructive tool runs only
// after an explicit approve, is asked once per logical call, and is never
// auto-retried unless that call opts in. (The awaitable gate, which no public
// runtime form reaches: test/detail/recovery_loop_test.cpp.)
#include <tool_effects/confirmation.hpp>
#include <tool_effects/retry.hpp>

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <stdexcept>
#include <string>
#include <vector>

// Unity-built with the other recovery tests (test/CMakeLists.txt): all below is this file's own.
namespace confirmation_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {
struct timeout_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct accounts : te::resource<> {
  static constexpr std::string_view resource_name = "accounts";
};
struct delete_account {  // destructive, idempotent (deleting twice leaves the same state)
  using side_effects = te::effects<te::writes<accounts>, te::destructive, te::idempotent>;
  int calls = 0;
  int fail_first = 0;
  std::vector<std::string> keys;
  int operator()(const te::attempt_context& c, int id) {
    ++calls;
    keys.push_back(c.idempotency_key);
    if (calls <= fail_first) throw timeout_error("timeout");
    return id;
  }
};
struct purge_and_notify {  // destructive and non-idempotent: never retried, even when opted in
  using side_effects = te::effects<te::writes<accounts>, te::destructive, te::external>;
  int calls = 0;
  int operator()() {
    ++calls;
    throw timeout_error("timeout");
  }
};

struct recording_approver {
  std::vector<te::confirmation_request>* seen;
  std::vector<std::string>* names;
  std::vector<std::string>* keys;
  te::confirmation answer;
  te::confirmation operator()(const te::confirmation_request& r) const {
    seen->push_back(r);
    names->push_back(std::string(r.tool));
    keys->push_back(std::string(r.idempotency_key));
    return answer;
  }
};

te::retry_policy transient_policy(std::size_t n) {
  return te::retry_policy{.max_attempts = n, .base_delay = 0ns, .max_delay = 0ns,
                          .is_transient = te::transient_on<timeout_error>(), .seed = 3};
}

// The runtime path (run_with_recovery) over a static tool's declared effects:
// its result, or its call_failure rethrown by `value()`.
template <class Tool, class... Args>
auto run_gated(const te::recovery_options& o, te::call_settings s, Tool& t, Args&... args) {
  const te::call_description d{s.name, te::side_effects_v<Tool>, {}, false};
  return te::run_with_recovery(d, o, std::move(s), t, args...).value();
}

template <class T>
T run_io(asio::awaitable<T> a) {
  asio::io_context io;
  auto f = asio::co_spawn(io, std::move(a), asio::use_future);
  io.run();
  return f.get();
}
}  // namespace

TEST(Approver, ConceptsAcceptExactlyTheTwoSignatures) {
  auto sync = [](const te::confirmation_request&) { return te::confirmation::approve; };
  auto async = [](const te::confirmation_request&) -> asio::awaitable<te::confirmation> {
    co_return te::confirmation::deny;
  };
  auto boolean = [](const te::confirmation_request&) { return true; };
  auto no_args = [] { return te::confirmation::approve; };
  static_assert(te::SyncApprover<decltype(sync)> && !te::AsyncApprover<decltype(sync)>);
  static_assert(te::AsyncApprover<decltype(async)> && !te::SyncApprover<decltype(async)>);
  static_assert(!te::Approver<decltype(boolean)>);  // an answer must be explicit
  static_assert(!te::Approver<decltype(no_args)>);
  static_assert(!std::is_constructible_v<te::approver, decltype(boolean)>);
  EXPECT_TRUE(te::approver(sync).has_value());
  EXPECT_TRUE(te::approver(async).is_async());
  EXPECT_FALSE(te::approver(sync).is_async());
}

TEST(Approver, EmptyDeniesAndHelpersAnswerAsNamed) {
  const te::confirmation_request r{"t", {te::effect::destructive}, te::side_effect_class::non_idempotent, "k"};
  EXPECT_FALSE(te::approver{});
  EXPECT_EQ(te::approver{}.ask(r), te::confirmation::deny);
  EXPECT_EQ(te::approve_all().ask(r), te::confirmation::approve);
  EXPECT_EQ(te::deny_all().ask(r), te::confirmation::deny);
  EXPECT_EQ(run_io(te::approver{}.ask_async(r)), te::confirmation::deny);
  EXPECT_EQ(te::to_string(te::confirmation::approve), "approve");
  EXPECT_EQ(te::to_string(te::confirmation::deny), "deny");
}

TEST(Approver, SyncAndAwaitableApproversAnswerBothWays) {
  int asked = 0;
  te::approver async([&](const te::confirmation_request& r) -> asio::awaitable<te::confirmation> {
    ++asked;
    co_return r.tool == "ok" ? te::confirmation::approve : te::confirmation::deny;
  });
  te::approver sync([&](const te::confirmation_request& r) {
    ++asked;
    return r.tool == "ok" ? te::confirmation::approve : te::confirmation::deny;
  });
  const te::confirmation_request ok{"ok", {}, {}, {}}, no{"no", {}, {}, {}};
  for (const auto* a : {&async, &sync}) {
    EXPECT_EQ(a->ask(ok), te::confirmation::approve);
    EXPECT_EQ(a->ask(no), te::confirmation::deny);
    EXPECT_EQ(run_io(a->ask_async(ok)), te::confirmation::approve);
    EXPECT_EQ(run_io(a->ask_async(no)), te::confirmation::deny);
  }
  EXPECT_EQ(asked, 8);
}

// ---------------------------------------------------------------------------------------------- the gate

TEST(ConfirmationGate, WithoutAnApproverTheToolNeverRuns) {
  delete_account t;
  int id = 7;
  try {
    (void)run_gated(te::recovery_options{}, {"delete_account"}, t,
                               id);
    FAIL();
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::confirmation_denied);
    EXPECT_EQ(f.record().attempts, 0u);
    EXPECT_EQ(f.record().tool, "delete_account");
    EXPECT_EQ(f.record().last_error_message, "no approver was given for a destructive call");
  }
  EXPECT_EQ(t.calls, 0);
}

TEST(ConfirmationGate, ADenialStopsTheCallAndTheApproverSeesTheCall) {
  std::vector<te::confirmation_request> seen;
  std::vector<std::string> names, keys;
  te::recovery_options o;
  o.approver = recording_approver{&seen, &names, &keys, te::confirmation::deny};
  delete_account t;
  int id = 7;
  te::call_settings s{"delete_account", "key-123", false};
  try {
    (void)run_gated(o, s, t, id);
    FAIL();
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::confirmation_denied);
    EXPECT_EQ(f.record().last_error_message, "denied by the approver");
    EXPECT_FALSE(f.record().last_error);
  }
  EXPECT_EQ(t.calls, 0);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(names[0], "delete_account");
  EXPECT_EQ(keys[0], "key-123");
  EXPECT_EQ(seen[0].effects, te::side_effects_v<delete_account>);
  EXPECT_EQ(seen[0].effect_class, te::side_effect_class::non_idempotent);
}

TEST(ConfirmationGate, AnApproverThatThrowsIsADenialCarryingItsError) {
  te::recovery_options o;
  o.approver = [](const te::confirmation_request&) -> te::confirmation { throw std::runtime_error("ui closed"); };
  delete_account t;
  int id = 1;
  try {
    (void)run_gated(o, {"delete_account"}, t, id);
    FAIL();
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::confirmation_denied);
    EXPECT_EQ(f.record().last_error_message, "ui closed");
    EXPECT_TRUE(f.record().last_error);
  }
  EXPECT_EQ(t.calls, 0);
}

TEST(ConfirmationGate, ApprovalRunsOnceWithTheKeyTheApproverSaw) {
  std::vector<te::confirmation_request> seen;
  std::vector<std::string> names, keys;
  te::recovery_options o;
  o.approver = recording_approver{&seen, &names, &keys, te::confirmation::approve};
  delete_account t;
  int id = 9;
  EXPECT_EQ(run_gated(o, {"delete_account"}, t, id), 9);
  EXPECT_EQ(t.calls, 1);
  ASSERT_EQ(keys.size(), 1u);
  ASSERT_EQ(t.keys.size(), 1u);
  EXPECT_EQ(t.keys[0], keys[0]);
}

TEST(ConfirmationGate, NonDestructiveCallsDoNotAsk) {
  std::vector<te::confirmation_request> seen;
  std::vector<std::string> names, keys;
  te::recovery_options o;
  o.approver = recording_approver{&seen, &names, &keys, te::confirmation::deny};
  auto write = te::tag<te::write>([] { return 1; });
  EXPECT_EQ(run_gated(o, {"w"}, write), 1);
  EXPECT_TRUE(seen.empty());
}

TEST(ConfirmationGate, DestructiveCallsAreNotAutoRetriedWithoutOptIn) {
  te::recovery_options o{transient_policy(5), te::approve_all()};
  delete_account t;
  t.fail_first = 2;
  int id = 3;
  try {
    (void)run_gated(o, {"delete_account"}, t, id);
    FAIL();
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::unsafe_to_retry);
    EXPECT_EQ(f.record().attempts, 1u);
  }
  EXPECT_EQ(t.calls, 1);
}

TEST(ConfirmationGate, AnOptedInDestructiveIdempotentCallIsRetriedAndAskedOnce) {
  int asked = 0;
  te::recovery_options o{transient_policy(5), te::approver([&](const te::confirmation_request&) {
                           ++asked;
                           return te::confirmation::approve;
                         })};
  delete_account t;
  t.fail_first = 2;
  int id = 3;
  te::call_settings s{"delete_account", "", true};
  EXPECT_EQ(run_gated(o, s, t, id), 3);
  EXPECT_EQ(t.calls, 3);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(std::set<std::string>(t.keys.begin(), t.keys.end()).size(), 1u);
}

TEST(ConfirmationGate, OptInDoesNotMakeANonIdempotentDestructiveCallRetryable) {
  te::recovery_options o{transient_policy(5), te::approve_all()};
  purge_and_notify t;
  // The opt-in could never take effect: asking for it is an error, before any attempt (issue 12).
  te::call_settings s{"purge", "", true};
  EXPECT_THROW((void)run_gated(o, s, t), std::invalid_argument);
  EXPECT_EQ(t.calls, 0);
  // Without it, the transient error is not retried.
  s.allow_destructive_retry = false;
  try {
    run_gated(o, s, t);
    FAIL();
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::unsafe_to_retry);
  }
  EXPECT_EQ(t.calls, 1);
}

TEST(ConfirmationGate, RuntimeDestructiveDescriptionsAreConfirmed) {
  const auto d = te::describe_runtime("rm", {te::effect::destructive}, {{"fs", te::access_mode::write, "/tmp/x"}});
  int calls = 0;
  auto denied = te::run_with_recovery(d, te::recovery_options{{}, te::deny_all()}, {}, [&] { ++calls; });
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.failure().reason, te::failure_reason::confirmation_denied);
  EXPECT_EQ(denied.failure().tool, "rm");
  EXPECT_EQ(calls, 0);
  auto approved = te::run_with_recovery(d, te::recovery_options{{}, te::approve_all()}, {}, [&] { ++calls; });
  EXPECT_TRUE(approved);
  EXPECT_EQ(calls, 1);
}

}  // namespace confirmation_test_ns
