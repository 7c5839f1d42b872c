// tool_effects/failure.hpp — failure records: why recovery of a call was
// blocked or gave up, as stable strings that survive process boundaries.
//
// The reasons are those recommended by the side-effect safety design note
// (`unsafe_to_retry`, `non_idempotent_side_effect`,
// `rollback_not_supported_for_side_effects`) plus those of this library
// (`confirmation_denied`, `retries_exhausted`, and for model-chosen calls
// `invalid_arguments`, `unknown_tool`, `repeated_call`, `turn_too_large`; for
// coordinated and journaled calls `coordination_timeout`, `in_doubt`, `lease_lost`). See
// docs/recovery.md and docs/coordination.md.
#ifndef TOOL_EFFECTS_FAILURE_HPP
#define TOOL_EFFECTS_FAILURE_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <tool_effects/detail/config.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/rules.hpp>
#include <tool_effects/text.hpp>

namespace tool_effects {

/// Why a call failed with a failure record instead of (another) attempt.
enum class failure_reason : std::uint8_t {
  unsafe_to_retry,                          ///< a retry was wanted, but the call is not retry-safe
  non_idempotent_side_effect,               ///< a repair was wanted, but the repaired attempt is non_idempotent
  rollback_not_supported_for_side_effects,  ///< rollback asked for a call with external effects (ledger-only)
  confirmation_denied,                      ///< a destructive call was not approved (denied, no approver, approver threw)
  retries_exhausted,                        ///< every allowed attempt failed with a transient error
  invalid_arguments,                        ///< a model-chosen call's arguments do not parse or are not an object (never ran)
  unknown_tool,                             ///< a model-chosen call names a tool that is not registered (never ran)
  repeated_call,                            ///< a loop guard refused a call repeated too often (never ran)
  turn_too_large,                           ///< a model turn had more calls than `plan_limits::max_calls` (never ran)
  coordination_timeout,                     ///< the call waited for its coordinator grant past its wait limit, or was cancelled while waiting (never ran)
  in_doubt,                                 ///< a journal shows the call started but never ended, and it is not retry-safe (not run again)
  lease_lost                                ///< the coordinator's lease (etcd) was lost before or while the call ran: its grant and fencing token are stale
};

/// Number of enumerators of `failure_reason`.
inline constexpr std::size_t failure_reason_count = 12;

/// The stable slug of `r` (the enumerator's name). Never changes between versions.
constexpr std::string_view to_string(failure_reason r) noexcept {
  constexpr std::array<std::string_view, failure_reason_count> slugs{
      "unsafe_to_retry", "non_idempotent_side_effect", "rollback_not_supported_for_side_effects",
      "confirmation_denied", "retries_exhausted", "invalid_arguments", "unknown_tool", "repeated_call",
      "turn_too_large", "coordination_timeout", "in_doubt", "lease_lost"};
  const auto i = static_cast<std::size_t>(r);
  return i < failure_reason_count ? slugs[i] : std::string_view{};
}

/// The reason whose slug is exactly `s` (case-sensitive), or `std::nullopt`.
constexpr std::optional<failure_reason> try_parse_failure_reason(std::string_view s) noexcept {
  for (std::size_t i = 0; i < failure_reason_count; ++i)
    if (to_string(static_cast<failure_reason>(i)) == s) return static_cast<failure_reason>(i);
  return std::nullopt;
}

/// Strict parse: throws `parse_error` naming `s` (`unknown failure reason: "x"`).
inline failure_reason parse_failure_reason(std::string_view s) {
  if (const auto r = try_parse_failure_reason(s)) return *r;
  throw parse_error("unknown failure reason", s);
}

inline std::ostream& operator<<(std::ostream& os, failure_reason r) { return os << to_string(r); }

/// Whether a call of class `c` can be rolled back: only `none`, and only in
/// the ledger. External effects (class `idempotent` or `non_idempotent`) are
/// never undone by this library (design note: rollback is ledger-only).
constexpr bool is_rollback_eligible(side_effect_class c) noexcept { return c == side_effect_class::none; }

/// The reason a rollback of a call of class `c` is refused:
/// `rollback_not_supported_for_side_effects` for every class but `none`,
/// `std::nullopt` (a ledger-only rollback is fine) for `none`.
constexpr std::optional<failure_reason> rollback_refusal(side_effect_class c) noexcept {
  if (is_rollback_eligible(c)) return std::nullopt;
  return failure_reason::rollback_not_supported_for_side_effects;
}

/// What is known about a failed call: which tool, how many times it was
/// invoked (0 when it never ran), its side-effect class, why recovery stopped,
/// and the last error (if any: `confirmation_denied` by a plain "deny" has none).
struct failure_record {
  std::string tool{};
  std::size_t attempts = 0;
  side_effect_class effect_class = side_effect_class::non_idempotent;
  failure_reason reason = failure_reason::unsafe_to_retry;
  std::exception_ptr last_error{};
  std::string last_error_message{};
};

/// One line for logs: `tool 'x' failed: reason=unsafe_to_retry class=non_idempotent attempts=1 error="boom"`.
TOOL_EFFECTS_DECL std::string to_string(const failure_record& r);

inline std::ostream& operator<<(std::ostream& os, const failure_record& r) { return os << to_string(r); }

namespace detail {
// The message of an exception: what() for std::exception, a fixed text otherwise.
TOOL_EFFECTS_DECL std::string message_of(const std::exception_ptr& e);
}  // namespace detail

/// The message of a failed call's error (`outcome<T>::error()`): `what()` for a
/// std::exception (a `call_failure` says its reason), "unknown exception"
/// otherwise, empty for a null pointer.
inline std::string error_message(const std::exception_ptr& e) { return detail::message_of(e); }

/// Builds a record; `last_error_message` is taken from `error` (`what()`).
TOOL_EFFECTS_DECL failure_record make_failure_record(std::string tool, std::size_t attempts, side_effect_class c,
                                                     failure_reason reason, std::exception_ptr error = nullptr);

/// The exception that delivers a failure record (e.g. inside the
/// dispatcher's outcome<T>). `what()` is `to_string(record())`.
class call_failure : public std::runtime_error {
 public:
  TOOL_EFFECTS_DECL explicit call_failure(failure_record r);

  /// The record: tool, attempts, class, reason and last error.
  [[nodiscard]] const failure_record& record() const noexcept { return record_; }
  /// Shorthand for `record().reason`.
  [[nodiscard]] failure_reason reason() const noexcept { return record_.reason; }

 private:
  failure_record record_;
};

}  // namespace tool_effects

#if TOOL_EFFECTS_HEADER_ONLY
#include <tool_effects/impl/failure.ipp>
#endif

#endif  // TOOL_EFFECTS_FAILURE_HPP
