// tool_effects/retry.hpp — retry and repair that cannot be misused.
//
//  * `retry(policy, tool, args...)` (sleeps between attempts) and
//    `retry_async(policy, tool, args...)` (an Asio awaitable whose backoff
//    waits on a steady_timer): both compile only for `RetrySafe` tools; the
//    error names the tool and the reason (`retry_rejected<Tool, reason::...>`,
//    diagnostics.hpp). The policy is retry_policy.hpp's.
//  * `repair(policy, tool, fix, args...)` and `repair_async`: re-run with a
//    changed request under the same gate; a changed request of an
//    `idempotent` tool counts as `non_idempotent` unless the tool declares
//    `RepairsIdempotent` (recovery_options.hpp).
//  * Idempotency keys: one per logical call, the same for all its attempts;
//    a tool invocable as `tool(const attempt_context&, args...)` receives it.
//  * `run_with_recovery(description, options, settings, fn, args...)`: the
//    runtime path for tools known only at runtime; refuses what the rules
//    refuse and returns a failure record instead of invoking the tool again.
//
// All of them, and the dispatcher, run one attempt loop (detail/recovery.hpp).
// Every decision is one constexpr function on `effect_set` (`may_retry`,
// `may_repair`, `needs_confirmation`: rules.hpp); docs/recovery.md maps each
// to the side-effect safety design note.
#ifndef TOOL_EFFECTS_RETRY_HPP
#define TOOL_EFFECTS_RETRY_HPP

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include <boost/asio/awaitable.hpp>

#include <tool_effects/call_description.hpp>
#include <tool_effects/detail/recovery.hpp>
#include <tool_effects/detail/type_name.hpp>
#include <tool_effects/diagnostics.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/recovery_options.hpp>
#include <tool_effects/retry_policy.hpp>
#include <tool_effects/rules.hpp>
#include <tool_effects/side_effects.hpp>

namespace tool_effects {

/// The reason `Tool` may (reason::retry_safe) or may not be retried.
template <class Tool>
using retry_reason_t = std::conditional_t<
    RetrySafe<Tool>, reason::retry_safe,
    std::conditional_t<!DeclaresSideEffects<Tool>, reason::undeclared_side_effects,
                       std::conditional_t<Destructive<Tool>, reason::destructive, reason::non_idempotent_side_effect>>>;

namespace detail {
// What a call of `Tool` with `Args` produces (the value of an awaitable).
template <class Tool, class... Args>
using call_result_t = typename typed_attempts<direct_attempt<Tool, std::nullptr_t, Args...>>::result;

template <class Tool>
call_settings settings_for(std::string name = {}) {
  call_settings s;
  s.name = name.empty() ? std::string(type_name_v<unwrap_tool_t<Tool>>) : std::move(name);
  return s;
}

template <class Tool>
constexpr void check_retry_gate() {
  using T = unwrap_tool_t<Tool>;
  static_assert(!retry_rejected<T, retry_reason_t<T>>::value,
                "tool_effects: retry/repair needs a RetrySafe tool (see retry_rejected<Tool, Reason> below for "
                "the tool and the reason)");
}
}  // namespace detail

// ============================================================================ public retry / repair

/// Calls `tool(args...)` (or `tool(ctx, args...)`) until it succeeds, up to
/// `policy.max_attempts` times, retrying only errors `policy.is_transient`
/// accepts and sleeping the policy's backoff between attempts. Compiles only
/// for `RetrySafe` tools. Returns the result; a non-transient error propagates
/// unchanged; when every attempt failed transiently, throws `call_failure`
/// (reason `retries_exhausted`, last error attached).
template <class Tool, class... Args>
decltype(auto) retry(const retry_policy& policy, Tool&& tool, Args&&... args) {
  detail::check_retry_gate<Tool>();
  const detail::recovery_refs o{&policy, nullptr};
  return detail::run_call(o, detail::settings_for<Tool>(), side_effects_v<detail::unwrap_tool_t<Tool>>, detail::stop_token{}, tool,
                          args...);
}

#if TOOL_EFFECTS_HAS_STOP_TOKEN
/// As `retry`, but a stop request (`stop`) ends the backoff sleep at once and
/// prevents further attempts; the last error is then rethrown. (Only where the
/// standard library provides std::stop_token, i.e. `__cpp_lib_jthread`.)
template <class Tool, class... Args>
decltype(auto) retry(std::stop_token stop, const retry_policy& policy, Tool&& tool, Args&&... args) {
  detail::check_retry_gate<Tool>();
  const detail::recovery_refs o{&policy, nullptr};
  return detail::run_call(o, detail::settings_for<Tool>(), side_effects_v<detail::unwrap_tool_t<Tool>>, std::move(stop), tool,
                          args...);
}
#endif

#include <tool_effects/detail/push_options.hpp>
/// The awaitable form of `retry`: the backoff waits on a steady_timer (no
/// thread blocks), a tool returning `awaitable<T>` is awaited, and terminal
/// cancellation of the coroutine stops further attempts (the last error is
/// rethrown). `policy`, `tool` and `args` are copied into the coroutine
/// (pass `std::ref` to share). Compiles only for `RetrySafe` tools.
template <class Tool, class... Args>
auto retry_async(retry_policy policy, Tool tool, Args... args)
    -> boost::asio::awaitable<detail::call_result_t<Tool, Args...>> {
  detail::check_retry_gate<Tool>();
  const recovery_options o{std::move(policy), {}};
  co_return co_await detail::run_call_async(o, detail::settings_for<Tool>(), side_effects_v<detail::unwrap_tool_t<Tool>>,
                                           tool, args...);
}

#include <tool_effects/detail/pop_options.hpp>

/// Calls the tool; after an error, a transient one is retried as by `retry`,
/// and any other is handed to `fix(error, args&...)`, which may change the
/// request in place and returns whether to re-run it. The repaired attempt
/// runs under the same gate as a retry (the tool must be `RetrySafe`) and
/// within `policy.max_attempts`; if its inputs changed (compared with `==`
/// when the arguments are equality-comparable, else assumed changed) and the
/// tool is `idempotent`-class without `RepairsIdempotent`, it counts as
/// non_idempotent: `call_failure` with reason `non_idempotent_side_effect`,
/// and the tool is not invoked again. `fix` returning false rethrows the error.
template <class Tool, class Fix, class... Args>
decltype(auto) repair(const retry_policy& policy, Tool&& tool, Fix&& fix, Args... args) {
  detail::check_retry_gate<Tool>();
  static_assert(std::is_invocable_r_v<bool, Fix&, const std::exception_ptr&, Args&...>,
                "tool_effects::repair: fix must be callable as bool(const std::exception_ptr&, Args&... request)");
  const detail::recovery_refs o{&policy, nullptr};
  return detail::run_call_impl(o, detail::settings_for<Tool>(), side_effects_v<detail::unwrap_tool_t<Tool>>,
                               detail::stop_token{}, &fix, tool, args...);
}

#include <tool_effects/detail/push_options.hpp>
/// The awaitable form of `repair`: the same gate and rules (a `RetrySafe`
/// tool; a changed request of an `idempotent`-class tool without
/// `RepairsIdempotent` is refused with `non_idempotent_side_effect`), the
/// backoff on a steady_timer, a tool returning `awaitable<T>` awaited, and
/// terminal cancellation stopping further attempts and repairs. `policy`,
/// `tool`, `fix` and `args` are copied into the coroutine (`std::ref` to
/// share); `fix(error, args&...)` changes the request in place.
template <class Tool, class Fix, class... Args>
auto repair_async(retry_policy policy, Tool tool, Fix fix, Args... args)
    -> boost::asio::awaitable<detail::call_result_t<Tool, Args...>> {
  detail::check_retry_gate<Tool>();
  static_assert(detail::RepairFix<Fix, Args...>,
                "tool_effects::repair_async: fix must be callable as bool(const std::exception_ptr&, Args&... request)");
  const recovery_options o{std::move(policy), {}};
  co_return co_await detail::run_call_async_impl(o, detail::settings_for<Tool>(),
                                                 side_effects_v<detail::unwrap_tool_t<Tool>>, &fix, tool, args...);
}
#include <tool_effects/detail/pop_options.hpp>

// ============================================================================ runtime path

/// The result of `run_with_recovery`: the tool's value (std::monostate for
/// void), or the failure record of a blocked or exhausted recovery.
template <class T>
class recovery_result {
 public:
  using value_type = T;
  using stored_type = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

  explicit recovery_result(stored_type v) : v_(std::in_place_index<0>, std::move(v)) {}
  explicit recovery_result(failure_record r) : v_(std::in_place_index<1>, std::move(r)) {}

  /// Whether the call succeeded.
  [[nodiscard]] bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  /// The value; throws `call_failure` carrying the record when it failed.
  decltype(auto) value() & { return get(*this); }
  decltype(auto) value() const& { return get(*this); }
  /// The record (precondition: `!has_value()`).
  [[nodiscard]] const failure_record& failure() const { return std::get<1>(v_); }

 private:
  template <class Self>
  static decltype(auto) get(Self& self) {
    if (!self.has_value()) throw call_failure(std::get<1>(self.v_));
    if constexpr (std::is_void_v<T>) return;
    else return (std::get<0>(self.v_));
  }
  std::variant<stored_type, failure_record> v_;
};

/// The runtime path, for tools known only by an `effect_set` or a
/// `call_description` (manifests, MCP): runs `fn(args...)` (or
/// `fn(ctx, args...)`) under `options` with the rules of the static path
/// (unknown/exclusive descriptions count as unknown effects: never retried;
/// destructive ones need an approving approver). A transient error of a call
/// that may not be retried returns a record with reason `unsafe_to_retry`
/// without invoking `fn` again; confirmation denied and retries exhausted are
/// records too. Non-transient errors (or any error without a policy) propagate.
/// `settings.name` defaults to `d.name`; pass `{}` for default settings.
template <class F, class... Args>
auto run_with_recovery(const call_description& d, const recovery_options& options, call_settings settings, F&& fn,
                       Args&&... args)
    -> recovery_result<std::remove_cvref_t<decltype(detail::invoke_attempt(fn, std::declval<const attempt_context&>(),
                                                                          args...))>> {
  using R = std::remove_cvref_t<decltype(detail::invoke_attempt(fn, std::declval<const attempt_context&>(), args...))>;
  if (settings.name.empty()) settings.name = d.name;
  const effect_set effects = d.exclusive ? effect_set{} : d.effects;
  try {
    if constexpr (std::is_void_v<R>) {
      detail::run_call(options, std::move(settings), effects, detail::stop_token{}, fn, args...);
      return recovery_result<R>(std::monostate{});
    } else {
      return recovery_result<R>(detail::run_call(options, std::move(settings), effects, detail::stop_token{}, fn, args...));
    }
  } catch (const call_failure& f) {
    return recovery_result<R>(f.record());
  }
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_RETRY_HPP
