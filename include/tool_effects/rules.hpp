// tool_effects/rules.hpp — the unary safety rules, each one constexpr function
// on `effect_set`. Concepts, traits, the planner, the retry gate and the
// runtime registry all call these; no rule is stated anywhere else.
//
// They match the code (not the looser prose) of the reference Rust crate and
// Python package `tool-side-effects-tag`. See docs/concepts.md. The strict
// (throwing) class parser and stream output are in <tool_effects/text.hpp>.
#ifndef TOOL_EFFECTS_RULES_HPP
#define TOOL_EFFECTS_RULES_HPP

#include <cstdint>
#include <optional>
#include <string_view>

#include <tool_effects/effect.hpp>

namespace tool_effects {

namespace detail {
constexpr unsigned effect_bit(effect e) noexcept { return 1u << static_cast<unsigned>(e); }
inline constexpr unsigned read_bit = effect_bit(effect::read);
inline constexpr unsigned write_bit = effect_bit(effect::write);
inline constexpr unsigned idempotent_bit = effect_bit(effect::idempotent);
inline constexpr unsigned destructive_bit = effect_bit(effect::destructive);
}  // namespace detail

// The rules are written without short-circuits so that a loop applying them
// to many sets vectorises (see docs/benchmarks.md); each comment states the
// rule as the reference crates' code does.

/// Safe to run alongside any other call: reads, and neither writes nor
/// destroys. The empty (unknown) set is not parallel-safe.
constexpr bool is_parallel_safe(effect_set s) noexcept {
  using namespace detail;
  return (s.bits() & (read_bit | write_bit | destructive_bit)) == read_bit;
}

/// Safe to re-run after a transient error: never when empty (unknown) or
/// destructive; otherwise when idempotent, or when it reads without writing.
constexpr bool is_retry_safe(effect_set s) noexcept {
  using namespace detail;
  const unsigned b = s.bits();
  return (b != 0) & ((b & destructive_bit) == 0) &
         (((b & idempotent_bit) != 0) | ((b & (read_bit | write_bit)) == read_bit));
}

/// Removes or invalidates state: the set contains `destructive`.
constexpr bool is_destructive(effect_set s) noexcept { return (s.bits() & detail::destructive_bit) != 0; }

/// Whether a call may opt in to retries although destructive
/// (`allow_destructive_retry()`): when it is retry-safe apart from
/// `destructive` (e.g. an idempotent delete). For any other call the opt-in
/// could never take effect, so asking for it is an error (a compile error
/// for static calls, std::invalid_argument at runtime).
constexpr bool accepts_destructive_retry_opt_in(effect_set s) noexcept {
  return is_retry_safe(effect_set::from_bits(static_cast<std::uint8_t>(s.bits() & ~detail::destructive_bit)));
}

/// Needs a human's approval before it runs: destructive, or unknown (the
/// empty set: nothing declared, or an explicit `effects<>`). Unknown effects
/// may be anything, including destructive ones, so they are guarded at least
/// as strictly. `is_destructive` keeps the reference packages' truth table;
/// this is the rule the dispatcher and `run_with_recovery` apply.
constexpr bool needs_confirmation(effect_set s) noexcept {
  const unsigned b = s.bits();
  return (b == 0) | ((b & detail::destructive_bit) != 0);
}

/// The side-effect classes of the side-effect safety design note.
enum class side_effect_class : std::uint8_t {
  none,           ///< no external side effect: retry- and ledger-rollback-eligible
  idempotent,     ///< external effects are safe to repeat
  non_idempotent  ///< repeating may cause more effects; also every unknown
};

/// `none` if parallel-safe, else `idempotent` if retry-safe, else
/// `non_idempotent`. The empty (unknown) set is `non_idempotent`.
constexpr side_effect_class classify(effect_set s) noexcept {
  // Parallel-safe implies retry-safe, so the class is 2 - retry - parallel:
  // none (0), idempotent (1) or non_idempotent (2).
  return static_cast<side_effect_class>(2u - static_cast<unsigned>(is_retry_safe(s)) -
                                        static_cast<unsigned>(is_parallel_safe(s)));
}

/// Whether the class allows an automatic retry (`none` and `idempotent`).
constexpr bool is_retry_eligible(side_effect_class c) noexcept { return c != side_effect_class::non_idempotent; }

// The recovery rules (retry.hpp and the dispatcher apply them; docs/recovery.md).

/// Whether a call with effects `s` may be attempted again after a transient
/// error: when `is_retry_safe(s)`; a destructive call only when the call opted
/// in explicitly AND it is retry-safe apart from `destructive` (e.g. an
/// idempotent delete). Unknown (empty) effects: never.
constexpr bool may_retry(effect_set s, bool destructive_retry_opt_in = false) noexcept {
  return is_retry_safe(s) || (destructive_retry_opt_in && accepts_destructive_retry_opt_in(s));
}

/// The class of a repaired attempt (design note: "if repair changes inputs in
/// a way that would cause additional external side effects, treat the
/// repaired attempt as non_idempotent unless it can prove idempotency"):
/// unchanged inputs keep `classify(s)`; changed inputs of an `idempotent`
/// call become `non_idempotent` unless the tool declares repairs idempotent.
/// `none` (no external effect) stays `none`.
constexpr side_effect_class repaired_attempt_class(effect_set s, bool inputs_changed,
                                                   bool repairs_idempotent) noexcept {
  const side_effect_class c = classify(s);
  if (inputs_changed && c == side_effect_class::idempotent && !repairs_idempotent)
    return side_effect_class::non_idempotent;
  return c;
}

/// Whether a repaired attempt may run: the retry gate (`may_retry`) and a
/// retry-eligible repaired class. A destructive call that opted in to retries
/// may be repaired only with unchanged inputs or `repairs_idempotent`.
constexpr bool may_repair(effect_set s, bool inputs_changed, bool repairs_idempotent,
                          bool destructive_retry_opt_in = false) noexcept {
  if (!may_retry(s, destructive_retry_opt_in)) return false;
  if (is_destructive(s)) return !inputs_changed || repairs_idempotent;
  return is_retry_eligible(repaired_attempt_class(s, inputs_changed, repairs_idempotent));
}

/// The stable slug: "none", "idempotent" or "non_idempotent".
constexpr std::string_view to_string(side_effect_class c) noexcept {
  switch (c) {
    case side_effect_class::none: return "none";
    case side_effect_class::idempotent: return "idempotent";
    case side_effect_class::non_idempotent: return "non_idempotent";
  }
  return "non_idempotent";
}

/// The class whose slug is exactly `s`, or `std::nullopt`.
constexpr std::optional<side_effect_class> try_parse_side_effect_class(std::string_view s) noexcept {
  for (const auto c : {side_effect_class::none, side_effect_class::idempotent, side_effect_class::non_idempotent})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

/// Lenient parse, as the design note requires ("MUST treat unknown
/// side-effect class as non_idempotent"): an unknown slug is `non_idempotent`.
constexpr side_effect_class parse_side_effect_class(std::string_view s) noexcept {
  return try_parse_side_effect_class(s).value_or(side_effect_class::non_idempotent);
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_RULES_HPP
