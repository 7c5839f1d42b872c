// tool_effects/recovery_options.hpp — what a caller states about the
// recovery of calls: `recovery_options` (a retry policy and an approver, for
// `run_with_recovery`), `call_settings` (one call's name, idempotency key and
// destructive-retry opt-in), and a tool's `RepairsIdempotent` declaration.
// Values only; retry.hpp and the dispatcher apply them.
#ifndef TOOL_EFFECTS_RECOVERY_OPTIONS_HPP
#define TOOL_EFFECTS_RECOVERY_OPTIONS_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include <tool_effects/attempt.hpp>
#include <tool_effects/confirmation.hpp>
#include <tool_effects/retry_policy.hpp>

namespace tool_effects {

/// Specialise (or give the tool `static constexpr bool repairs_idempotent =
/// true;`) to declare that a repaired request with changed inputs is still
/// safe to repeat. Default: false.
template <class Tool>
struct repairs_idempotent : std::false_type {};
template <class Tool>
  requires requires { requires static_cast<bool>(Tool::repairs_idempotent); }
struct repairs_idempotent<Tool> : std::true_type {};

/// Whether `T` declares repairs idempotent (cv/ref ignored).
template <class T>
concept RepairsIdempotent = repairs_idempotent<std::remove_cvref_t<T>>::value;

/// What the dispatcher (or `run_with_recovery`) applies to calls: a retry
/// policy (none: one attempt, errors propagate unchanged) and the approver of
/// destructive calls (empty: every destructive call is denied).
struct recovery_options {
  std::optional<retry_policy> retry{};
  tool_effects::approver approver{};
  /// Run calls with unknown effects without confirmation (see
  /// `run_unknown_tools_unconfirmed`). Off: they need an approver.
  bool unknown_tools_unconfirmed = false;
};

/// Per-call settings: its name (for records and the approver), its
/// idempotency key (empty: generated), the explicit opt-in that lets a
/// destructive, otherwise retry-safe call be retried, and what the approver
/// is shown besides (`call_subject`).
struct call_settings {
  std::string name{};
  std::string idempotency_key{};
  bool allow_destructive_retry = false;
  call_subject subject{};  ///< what the approver is shown besides (tool, call id, MCP server, arguments)
  std::uint64_t fencing_token = detail::current_fencing_token();  ///< the call's coordinator grant (coordination.hpp)
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_RECOVERY_OPTIONS_HPP
