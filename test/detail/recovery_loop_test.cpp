// The awaitable per-call entry point of the recovery loop
// (detail::run_call_async, detail/recovery.hpp), which no public runtime form
// reaches: its confirmation step awaits an awaitable approver, asks once per
// logical call, and a denial never runs the tool. (The dispatcher runs the
// same loop through `recover`: test/unit/dispatch_recovery_test.cpp.) And
// the loop's decisions, step by step (recovery_state).
#include <tool_effects/detail/recovery.hpp>
#include <tool_effects/resource.hpp>
#include <tool_effects/side_effects.hpp>
#include <tool_effects/tags.hpp>

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace recovery_loop_test_ns {

namespace te = tool_effects;
namespace asio = boost::asio;

namespace {
struct accounts : te::resource<> {
  static constexpr std::string_view resource_name = "accounts";
};
struct delete_account {  // destructive, idempotent (deleting twice leaves the same state)
  using side_effects = te::effects<te::writes<accounts>, te::destructive, te::idempotent>;
  int calls = 0;
  std::vector<std::string> keys;
  int operator()(const te::attempt_context& c, int id) {
    ++calls;
    keys.push_back(c.idempotency_key);
    return id;
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

TEST(ConfirmationGate, TheAwaitableGateAwaitsAnAwaitableApprover) {
  int answered = 0;
  te::recovery_options o;
  o.approver = [&](const te::confirmation_request& r) -> asio::awaitable<te::confirmation> {
    ++answered;
    co_return r.idempotency_key == "yes" ? te::confirmation::approve : te::confirmation::deny;
  };
  delete_account t;
  int id = 5;
  EXPECT_EQ(run_io(te::detail::run_call_async(o, {"d", "yes", false}, te::side_effects_v<delete_account>, t, id)), 5);
  EXPECT_EQ(t.calls, 1);
  try {
    (void)run_io(te::detail::run_call_async(o, {"d", "no", false}, te::side_effects_v<delete_account>, t, id));
    FAIL();
  } catch (const te::call_failure& f) {
    EXPECT_EQ(f.reason(), te::failure_reason::confirmation_denied);
  }
  EXPECT_EQ(t.calls, 1);
  EXPECT_EQ(answered, 2);
}

// ---------------------------------------------------------------------------------------------- the steps
// Each decision of the one loop, asked of recovery_state directly (the drivers only carry steps out).

struct transient_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
using step_kind = te::detail::recovery_state::step_kind;

te::retry_policy transient_policy(std::size_t n) {
  return te::retry_policy{.max_attempts = n, .base_delay = std::chrono::nanoseconds(0),
                          .max_delay = std::chrono::nanoseconds(0),
                          .is_transient = te::transient_on<transient_error>(), .seed = 1};
}

TEST(RecoverySteps, ConfirmationComesFirstOnlyWhereItIsNeeded) {
  const te::retry_policy p = transient_policy(3);
  te::detail::recovery_state destructive({&p, nullptr}, {"d"}, te::effect_set{te::effect::write, te::effect::destructive});
  te::detail::recovery_state reader({&p, nullptr}, {"r"}, te::effect_set{te::effect::read});
  te::detail::recovery_state unknown({&p, nullptr, true}, {"u"}, te::effect_set{});
  EXPECT_EQ(destructive.start().kind, step_kind::confirm);
  EXPECT_EQ(reader.start().kind, step_kind::attempt);
  EXPECT_EQ(unknown.start().kind, step_kind::attempt);  // run_unknown_tools_unconfirmed
  EXPECT_EQ(te::detail::recovery_state::confirmed(te::confirmation::approve).kind, step_kind::attempt);
  const auto denied = te::detail::recovery_state::confirmed(te::confirmation::deny);
  EXPECT_EQ(denied.kind, step_kind::fail);
  EXPECT_EQ(denied.reason, te::failure_reason::confirmation_denied);
}

TEST(RecoverySteps, AfterAnErrorWaitFixFailOrPropagate) {
  const te::retry_policy p = transient_policy(2);
  const auto transient = std::make_exception_ptr(transient_error("t"));
  const auto permanent = std::make_exception_ptr(std::logic_error("p"));
  const te::effect_set idempotent_write{te::effect::write, te::effect::idempotent};
  te::detail::recovery_state st({&p, nullptr}, {"w"}, idempotent_write);
  (void)st.begin_attempt();
  EXPECT_EQ(st.failed(permanent, false, false).kind, step_kind::propagate);
  EXPECT_EQ(st.failed(permanent, false, true).kind, step_kind::fix);
  EXPECT_EQ(st.failed(permanent, true, true).kind, step_kind::propagate);   // cancelled: no repair
  EXPECT_EQ(st.failed(transient, true, false).kind, step_kind::propagate);  // cancelled: no retry
  EXPECT_EQ(st.failed(transient, false, false).kind, step_kind::wait);
  EXPECT_EQ(te::detail::recovery_state::waited(true).kind, step_kind::attempt);
  EXPECT_EQ(te::detail::recovery_state::waited(false).kind, step_kind::propagate);
  (void)st.begin_attempt();
  const auto exhausted = st.failed(transient, false, false);
  EXPECT_EQ(exhausted.kind, step_kind::fail);
  EXPECT_EQ(exhausted.reason, te::failure_reason::retries_exhausted);

  te::detail::recovery_state unsafe({&p, nullptr}, {"a"}, te::effect_set{te::effect::write});
  (void)unsafe.begin_attempt();
  const auto refused = unsafe.failed(transient, false, false);
  EXPECT_EQ(refused.kind, step_kind::fail);
  EXPECT_EQ(refused.reason, te::failure_reason::unsafe_to_retry);
}

TEST(RecoverySteps, AfterTheFixHookTheRepairRulesDecide) {
  const te::retry_policy p = transient_policy(3);
  const te::effect_set idempotent_write{te::effect::write, te::effect::idempotent};
  te::detail::recovery_state st({&p, nullptr}, {"w", "key", false}, idempotent_write);
  (void)st.begin_attempt();
  EXPECT_EQ(st.fixed(false, true, false).kind, step_kind::propagate);  // the hook declined
  const auto changed = st.fixed(true, true, false);                    // changed, not RepairsIdempotent
  EXPECT_EQ(changed.kind, step_kind::fail);
  EXPECT_EQ(changed.reason, te::failure_reason::non_idempotent_side_effect);
  EXPECT_EQ(st.fixed(true, true, true).kind, step_kind::attempt);  // RepairsIdempotent
  const te::attempt_context& ctx = st.begin_attempt();
  EXPECT_TRUE(ctx.is_repair);
  EXPECT_EQ(ctx.idempotency_key, "key.r1");
  EXPECT_EQ(st.fixed(true, false, false).kind, step_kind::attempt);  // unchanged: a retry
  (void)st.begin_attempt();
  const auto past = st.fixed(true, false, false);
  EXPECT_EQ(past.kind, step_kind::fail);
  EXPECT_EQ(past.reason, te::failure_reason::retries_exhausted);
}
}  // namespace recovery_loop_test_ns
