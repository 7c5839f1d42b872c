// tool_effects/detail/dispatch_recovery.hpp — the recovery layer of the
// dispatcher (dispatch.hpp): retry policy, approver and the per-call
// destructive-retry opt-in, applied to each dispatched call by `recover`
// (detail/recovery.hpp), the one attempt loop that `retry`, `repair` and
// their awaitable forms run too. Internal; see docs/recovery.md ("In the
// dispatcher").
//
// Options carry the recovery extras by type (`dispatch_options<...>::with`):
//   run_options{}.with(retry_policy{...}).with(approver(...))
//  * a `retry_policy` is applied per call, only where `may_retry` allows;
//  * an `approver` confirms the calls that `needs_confirmation`: destructive
//    ones and ones with unknown effects. A static such call dispatched
//    without one does not compile (`destructive_call_without_approver<Tool>`,
//    `unknown_effects_call_without_approver<Tool>`), a runtime one is denied;
//  * `run_unknown_tools_unconfirmed` (an extra) runs unknown calls unconfirmed;
//  * `call(tool, args...).allow_destructive_retry()` is the per-call opt-in,
//    `.with_idempotency_key(k)` the caller-chosen key.
#ifndef TOOL_EFFECTS_DETAIL_DISPATCH_RECOVERY_HPP
#define TOOL_EFFECTS_DETAIL_DISPATCH_RECOVERY_HPP

#include <array>
#include <cstddef>
#include <concepts>
#include <exception>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/execution/executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/is_executor.hpp>

#include <tool_effects/call.hpp>
#include <tool_effects/confirmation.hpp>
#include <tool_effects/detail/config.hpp>
#include <tool_effects/outcome.hpp>
#include <tool_effects/detail/recovery.hpp>
#include <tool_effects/diagnostics.hpp>
#include <tool_effects/recovery_options.hpp>
#include <tool_effects/retry_policy.hpp>
#include <tool_effects/side_effects.hpp>

namespace tool_effects {

namespace detail {

template <class Options>
inline constexpr bool options_run_unknown_unconfirmed =
    requires { requires Options::template has<run_unknown_tools_unconfirmed>; };

template <class Options>
inline constexpr bool options_have_policy = requires { requires Options::template has<retry_policy>; };
template <class Options>
inline constexpr bool options_have_approver = requires { requires Options::template has<tool_effects::approver>; };

template <class Fn>
inline constexpr bool is_static_call = requires(Fn& f) {
  typename Fn::tool_type;
  f.tool();
  f.args();
};

// The compile-time half of the confirmation rule (`needs_confirmation`): a
// static call of a destructive tool, or of one with unknown effects (unless
// the options carry `run_unknown_tools_unconfirmed`), needs an approver.
template <class Options, class Fn>
constexpr void check_dispatch_confirmation() {
  if constexpr (is_static_call<Fn> && !options_have_approver<Options>) {
    using tool = typename Fn::tool_type;
    constexpr effect_set effects = side_effects_v<tool>;
    if constexpr (needs_confirmation(effects) && is_destructive(effects)) {
      static_assert(!destructive_call_without_approver<std::remove_cv_t<tool>>::value,
                    "tool_effects: a Destructive call was dispatched without an approver; add one to the options: "
                    "run_options{}.with(tool_effects::approver(...))");
    } else if constexpr (needs_confirmation(effects) && !options_run_unknown_unconfirmed<Options>) {
      static_assert(!unknown_effects_call_without_approver<std::remove_cv_t<tool>>::value,
                    "tool_effects: a call of a tool with unknown effects (undeclared, or effects<>) was dispatched "
                    "without an approver; declare the tool's effects, or pass an approver: "
                    "run_options{}.with(tool_effects::approver(...))");
    }
  }
}

// Whether a call must go through the recovery layer (else the dispatcher's
// plain path runs it): a policy or an approver is given, the call needs
// confirmation (then, without an approver, it is denied, unless unknown
// calls run unconfirmed). A caller-chosen key needs no gate: the plain path
// hands it to the tool as well (bound_call::operator()).
template <class Options>
inline constexpr bool options_need_recovery = options_have_policy<Options> || options_have_approver<Options>;

template <class Options>
constexpr bool recovery_needed(effect_set effects) noexcept {
  return options_need_recovery<Options> || needs_confirmation(effects);
}

// What is known at compile time of `recovery_needed` for a call of type Fn:
// `always` when the options alone need it; `never` for a static call whose
// declared effects do not. Only the path(s) that can run are instantiated.
template <class Options, class Fn>
struct recovery_paths {
  static constexpr bool always = options_need_recovery<Options>;
  static constexpr bool never = [] {
    if constexpr (is_static_call<Fn>) return !recovery_needed<Options>(side_effects_v<typename Fn::tool_type>);
    else return false;
  }();
};

// The caller-chosen idempotency key (`call(...).with_idempotency_key(k)`), if the call type has one.
template <class Fn>
std::string chosen_idempotency_key(const Fn& fn) {
  if constexpr (requires { { fn.idempotency_key() } -> std::convertible_to<std::string>; })
    return std::string(fn.idempotency_key());
  else
    return {};
}

// What the approver is shown of a call that needs confirmation (tool, call
// id, MCP server, arguments), if the call type offers it (json_tool_host's tasks).
template <class Fn>
call_subject confirmation_subject_of(const Fn& fn, effect_set effects) {
  if constexpr (requires { { fn.confirmation_subject() } -> std::convertible_to<call_subject>; })
    if (needs_confirmation(effects)) return fn.confirmation_subject();
  return {};
}

// The per-call opt-in (`call(...).allow_destructive_retry()`), if the call type has one.
template <class Fn>
bool destructive_retry_opt_in(const Fn& fn) noexcept {
  if constexpr (requires { { fn.destructive_retry_allowed() } -> std::convertible_to<bool>; })
    return fn.destructive_retry_allowed();
  else
    return false;
}

// The raw result of one attempt of a dispatched call (see dispatched_attempt).
template <class Fn>
struct attempt_raw {
  using type = std::invoke_result_t<Fn&>;
};
template <class Fn>
  requires is_static_call<Fn>
struct attempt_raw<Fn> {
  using type = typename Fn::invoke_result;
};
template <class Fn>
  requires(!is_static_call<Fn> && std::is_invocable_v<Fn&, const attempt_context&>)
struct attempt_raw<Fn> {
  using type = std::invoke_result_t<Fn&, const attempt_context&>;
};

// One attempt of a dispatched call: a bound call invokes its tool with the
// attempt context when the tool accepts it; a runtime task is called with the
// context if it accepts it, else with nothing. Results are returned by value.
// A bound call given `with_repair(fix)` offers that repair.
template <class Fn>
struct dispatched_attempt {
  Fn* fn;

  static constexpr bool repairs_idempotent = [] {
    if constexpr (is_static_call<Fn>) return RepairsIdempotent<typename Fn::tool_type>;
    else return false;
  }();
  // Only a bound call of a RetrySafe tool returning by value can carry a repair
  // (`with_repair` compiles for no other): the repair path exists only for those.
  static constexpr bool can_fix = [] {
    if constexpr (is_static_call<Fn> && requires(Fn& f) { f.repair_fix(); })
      return RetrySafe<typename Fn::tool_type> && !std::is_reference_v<typename Fn::invoke_result>;
    else return false;
  }();

  auto operator()(const attempt_context& ctx) const -> std::remove_cvref_t<typename attempt_raw<Fn>::type> {
    if constexpr (is_static_call<Fn>)
      return std::apply([&](auto&... a) -> decltype(auto) { return invoke_attempt(fn->tool(), ctx, unwrap(a)...); },
                        fn->args());
    else if constexpr (std::is_invocable_v<Fn&, const attempt_context&>)
      return (*fn)(ctx);
    else
      return (*fn)();
  }
  [[nodiscard]] bool has_fix() const noexcept { return fn->repair_fix() != nullptr; }
  bool fix(const std::exception_ptr& e, bool& changed) const {
    return std::apply([&](auto&... a) { return apply_fix(*fn->repair_fix(), e, changed, unwrap(a)...); },
                      fn->args());
  }
};

// A dispatched call under recovery: its typed attempts and its completion,
// kept on the heap while `recover` runs.
template <class R, class Fn, class Done>
struct recovered_call {
  typed_attempts<dispatched_attempt<Fn>> attempts;
  Done done;

  // The end of `recover_to_error` (e: the call's error): the call's outcome goes to `done`.
  static void complete(void* p, std::exception_ptr e) {
    std::unique_ptr<recovered_call> self(static_cast<recovered_call*>(p));
    outcome<R> o;
    if (e) o = outcome<R>::failure(std::move(e));
    else if constexpr (std::is_void_v<R>) o = outcome<R>::success();
    else o = outcome<R>::success(self->attempts.out.take());
    Done d = std::move(self->done);
    self.reset();
    d(std::move(o));
  }
};

// The completion handler of every recovered call: one type, so `co_spawn`
// is instantiated once per executor. `spawn_error`: the wrapper itself could
// not run; `call_error`: the call's error (null: success).
struct erased_completion {
  void* self;
  void (*fn)(void*, std::exception_ptr);
  void operator()(std::exception_ptr spawn_error, std::exception_ptr call_error) const {
    fn(self, spawn_error ? std::move(spawn_error) : std::move(call_error));
  }
};

// Spawns the recovery loop (`recover_to_error`) of one call on `ex`; `complete` receives its end.
template <class Executor>
void spawn_recovery(const Executor& ex, recovery_refs o, call_settings s, effect_set effects, erased_attempts c,
                    erased_completion complete) {
  boost::asio::co_spawn(ex, recover_to_error(o, std::move(s), effects, c), complete);
}

#if TOOL_EFFECTS_HEADER_ONLY
// Header-only: the loop is spawned on the caller's executor type.
template <class Executor>
using recovery_executor_t = Executor;
#else
// Separate compilation: on Asio's polymorphic executor, so that one instantiation (impl/dispatch_recovery.ipp)
// serves every executor.
template <class Executor>
using recovery_executor_t = boost::asio::any_io_executor;
#endif

// Runs the recovery loop of one call to its end on a private io_context in this thread (the dispatcher's
// inline mode). A template (on the context) only so that it is compiled where it is used.
template <class Context = boost::asio::io_context>
void run_recovery_here(recovery_refs o, call_settings s, effect_set effects, erased_attempts c,
                       erased_completion complete) {
  Context ctx;
  spawn_recovery(recovery_executor_t<typename Context::executor_type>(ctx.get_executor()), o, std::move(s), effects,
                 c, complete);
  ctx.run();
}

#if !TOOL_EFFECTS_HEADER_ONLY
extern template void spawn_recovery<boost::asio::any_io_executor>(const boost::asio::any_io_executor&, recovery_refs,
                                                                  call_settings, effect_set, erased_attempts,
                                                                  erased_completion);
extern template void run_recovery_here<boost::asio::io_context>(recovery_refs, call_settings, effect_set,
                                                                erased_attempts, erased_completion);
#endif

/// Runs one dispatched call under the recovery layer and hands its outcome
/// to `done` exactly once: confirmation of the calls that
/// `needs_confirmation` (denied:
/// `call_failure{confirmation_denied}`, tool not run), then attempts under
/// the options' `retry_policy`, retried only where `may_retry(effects,
/// opt-in)` allows, with timer backoff (no pool thread blocks). `opts` and
/// `fn` must outlive the call (the engine owns both). With a non-Asio
/// executor (the dispatcher's inline mode) the call runs to its end on a
/// private io_context in this thread.
template <class R, class Options, class Fn, class Info, class Executor, class Done>
void execute_with_recovery(const Options& opts, Fn& fn, const Info& info, const Executor& ex, Done&& done) {
  const retry_policy* policy = nullptr;
  const tool_effects::approver* approver = nullptr;
  if constexpr (options_have_policy<Options>) policy = &opts.template get<retry_policy>();
  if constexpr (options_have_approver<Options>) approver = &opts.template get<tool_effects::approver>();
  call_settings settings{std::string(info.name), chosen_idempotency_key(fn), destructive_retry_opt_in(fn),
                         confirmation_subject_of(fn, info.effects)};
  using call_t = recovered_call<R, Fn, std::decay_t<Done>>;
  // Owned here until the coroutine is spawned; from then on its completion deletes it.
  auto call = std::make_unique<call_t>(call_t{{dispatched_attempt<Fn>{&fn}}, std::forward<Done>(done)});
  const recovery_refs refs{policy, approver, options_run_unknown_unconfirmed<Options>};
  const erased_completion complete{call.get(), &call_t::complete};
  const erased_attempts attempts = call->attempts.erased();
  // (An Asio executor, either model; a requires-check of co_spawn itself would instantiate co_spawn.)
  if constexpr (boost::asio::execution::is_executor<Executor>::value || boost::asio::is_executor<Executor>::value) {
    spawn_recovery(recovery_executor_t<Executor>(ex), refs, std::move(settings), info.effects, attempts, complete);
    (void)call.release();
  } else {
    (void)call.release();  // the call runs to its end in run_recovery_here, whose completion deletes it
    run_recovery_here(refs, std::move(settings), info.effects, attempts, complete);
  }
}

}  // namespace detail
}  // namespace tool_effects

#endif  // TOOL_EFFECTS_DETAIL_DISPATCH_RECOVERY_HPP
