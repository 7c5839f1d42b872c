// tool_effects/diagnostics.hpp — the named types of the library's
// compile-time rejections (as stdexec's __detail/__diagnostics.hpp), and a
// type-name printer.
//
// A rejected use fails a `static_assert` whose condition names one of these
// types, so the compiler's message reads, say,
// `retry_rejected<your_tool, tool_effects::reason::destructive>`: the tool
// and the property in one line. Each type's `value` is true when the use is
// rejected. Light on purpose (no Asio, no rules): call.hpp, retry.hpp and the
// dispatcher include it. test/compile_fail holds one case per rejection.
//
// (`conflicting_pair<A, B, Resource, I, J>`, the diagnostic of a rejected
// parallel batch, stays in conflict.hpp: it is computed there, and declaring
// tools includes it anyway.)
#ifndef TOOL_EFFECTS_DIAGNOSTICS_HPP
#define TOOL_EFFECTS_DIAGNOSTICS_HPP

#include <string_view>

#include <tool_effects/detail/type_name.hpp>

namespace tool_effects {

/// The reason words of the compile-time retry gate (retry, retry_async,
/// repair, repair_async, `call(...).with_repair`).
namespace reason {
struct retry_safe {};                  ///< not a rejection: the tool is RetrySafe
struct non_idempotent_side_effect {};  ///< declared, not destructive, not retry-safe (e.g. write without idempotent)
struct destructive {};                 ///< declared destructive (even if idempotent)
struct undeclared_side_effects {};     ///< no declaration: unknown is non_idempotent
}  // namespace reason

/// The retry gate: `value` is true when `Tool` is rejected for `Reason`.
/// Compile errors of `retry`/`retry_async`/`repair` read
/// `retry_rejected<your_tool, tool_effects::reason::destructive>`.
template <class Tool, class Reason>
struct retry_rejected {
  static constexpr bool value = true;
};
template <class Tool>
struct retry_rejected<Tool, reason::retry_safe> {
  static constexpr bool value = false;
};

/// `value` is true when `call(tool, ...).allow_destructive_retry()` names a
/// `Tool` that may not be retried even with the opt-in. The compile error
/// reads `destructive_retry_opt_in_rejected<your_tool>`.
template <class Tool>
struct destructive_retry_opt_in_rejected {
  static constexpr bool value = true;
};

/// `value` is true when a destructive `Tool` is dispatched with options that
/// carry no `approver`. The compile error reads
/// `destructive_call_without_approver<your_tool>`.
template <class Tool>
struct destructive_call_without_approver {
  static constexpr bool value = true;
};

/// `value` is true when a `Tool` with unknown effects (undeclared, or
/// `effects<>`) is dispatched with options that carry no `approver` (and no
/// `run_unknown_tools_unconfirmed`). The compile error reads
/// `unknown_effects_call_without_approver<your_tool>`.
template <class Tool>
struct unknown_effects_call_without_approver {
  static constexpr bool value = true;
};

/// The compiler's spelling of `T` (e.g. "app::user_db"), usable in constant
/// expressions; the same name the library's records and diagnostics print.
template <class T>
constexpr std::string_view type_name() noexcept {
  return detail::type_name_v<T>;
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_DIAGNOSTICS_HPP
