// Compile-time truths of the recovery layer: the retry and repair rules on
// effect sets, the compile-time gate's reasons (retry_reason_t /
// retry_rejected) for the three routes of declaration, RepairsIdempotent, the
// destructive opt-in, the attempt-aware calling convention, and the stable slugs.
#include <tool_effects/failure.hpp>
#include <tool_effects/retry.hpp>

#include <functional>
#include <type_traits>

namespace te = tool_effects;

namespace recovery_static {
struct prefs : te::resource<> {};
struct reader {
  using side_effects = te::effects<te::reads<prefs>, te::network>;
};
struct upsert {
  using side_effects = te::effects<te::writes<prefs>, te::idempotent>;
};
struct upsert_repairable {
  using side_effects = te::effects<te::writes<prefs>, te::idempotent>;
  static constexpr bool repairs_idempotent = true;
};
struct sender {
  using side_effects = te::effects<te::write, te::external>;
};
struct deleter {
  using side_effects = te::effects<te::writes<prefs>, te::destructive, te::idempotent>;
};
struct undeclared {};
struct third_party {};
struct with_ctx {
  int operator()(const te::attempt_context&, int) const { return 0; }
};
struct without_ctx {
  int operator()(int) const { return 0; }
};
}  // namespace recovery_static

template <>
struct tool_effects::side_effects_of<recovery_static::third_party> {
  using type = te::effects<te::read, te::idempotent>;
};

namespace recovery_static {
using te::effect;

// may_retry is is_retry_safe, plus the narrow destructive opt-in.
static_assert(te::may_retry({effect::read}));
static_assert(te::may_retry({effect::write, effect::idempotent}));
static_assert(!te::may_retry({effect::write}));
static_assert(!te::may_retry({}));
static_assert(!te::may_retry({}, true));
static_assert(!te::may_retry({effect::write, effect::destructive, effect::idempotent}));
static_assert(te::may_retry({effect::write, effect::destructive, effect::idempotent}, true));
static_assert(!te::may_retry({effect::write, effect::destructive}, true));
static_assert(!te::may_retry({effect::write, effect::external}, true));  // opt-in is for destructive calls only

// Repair: changed inputs make an idempotent-class attempt non_idempotent unless declared.
static_assert(te::repaired_attempt_class({effect::write, effect::idempotent}, true, false) ==
              te::side_effect_class::non_idempotent);
static_assert(te::repaired_attempt_class({effect::write, effect::idempotent}, false, false) ==
              te::side_effect_class::idempotent);
static_assert(te::repaired_attempt_class({effect::read, effect::network}, true, false) == te::side_effect_class::none);
static_assert(!te::may_repair({effect::write, effect::idempotent}, true, false));
static_assert(te::may_repair({effect::write, effect::idempotent}, true, true));
static_assert(!te::may_repair({effect::write}, false, true));

// The gate's reasons, for every route of declaration.
static_assert(std::is_same_v<te::retry_reason_t<reader>, te::reason::retry_safe>);
static_assert(std::is_same_v<te::retry_reason_t<upsert>, te::reason::retry_safe>);
static_assert(std::is_same_v<te::retry_reason_t<third_party>, te::reason::retry_safe>);
static_assert(std::is_same_v<te::retry_reason_t<sender>, te::reason::non_idempotent_side_effect>);
static_assert(std::is_same_v<te::retry_reason_t<deleter>, te::reason::destructive>);
static_assert(std::is_same_v<te::retry_reason_t<undeclared>, te::reason::undeclared_side_effects>);
static_assert(std::is_same_v<te::retry_reason_t<const sender&>, te::reason::non_idempotent_side_effect>);
using tagged_writer = decltype(te::tag<te::write>(without_ctx{}));
static_assert(std::is_same_v<te::retry_reason_t<tagged_writer>, te::reason::non_idempotent_side_effect>);
static_assert(!te::retry_rejected<reader, te::retry_reason_t<reader>>::value);
static_assert(te::retry_rejected<sender, te::retry_reason_t<sender>>::value);
static_assert(te::retry_rejected<deleter, te::retry_reason_t<deleter>>::value);

// RepairsIdempotent and the std::ref unwrapping of the gate.
static_assert(te::RepairsIdempotent<upsert_repairable> && !te::RepairsIdempotent<upsert>);
static_assert(std::is_same_v<te::detail::unwrap_tool_t<std::reference_wrapper<upsert>>, upsert>);
static_assert(std::is_same_v<te::detail::unwrap_tool_t<const upsert&>, upsert>);

// Attempt-aware tools receive the context; others their arguments only.
static_assert(te::AttemptAware<with_ctx, int> && !te::AttemptAware<without_ctx, int>);

// Stable slugs, usable at compile time.
static_assert(te::to_string(te::failure_reason::unsafe_to_retry) == "unsafe_to_retry");
static_assert(te::try_parse_failure_reason("rollback_not_supported_for_side_effects") ==
              te::failure_reason::rollback_not_supported_for_side_effects);
static_assert(!te::try_parse_failure_reason("Unsafe_To_Retry").has_value());
static_assert(te::rollback_refusal(te::side_effect_class::none) == std::nullopt);
static_assert(te::rollback_refusal(te::side_effect_class::idempotent) ==
              te::failure_reason::rollback_not_supported_for_side_effects);
static_assert(te::to_string(te::jitter_mode::decorrelated) == "decorrelated");
}  // namespace recovery_static
