// tool_effects/detail/recovery.hpp — THE attempt loop of a logical call:
// confirmation, attempts, retries with backoff, repairs with their fix hook,
// cancellation. `retry`, `repair`, their awaitable forms, `run_with_recovery`
// (retry.hpp) and the dispatcher (detail/dispatch_recovery.hpp) all run it.
//
// Every decision is one member of `recovery_state` (start, confirmed, failed,
// waited, fixed, finish), built on the constexpr rules of rules.hpp
// (`needs_confirmation`, `may_retry`, `may_repair`). Two thin drivers carry
// out its steps: `drive` (synchronous: the approver's `ask`, a sleep that a
// stop token ends) and `recover` (an Asio awaitable: `ask_async`, a
// steady_timer, the coroutine's cancellation). Both are type-erased
// (`erased_attempts`), so each is compiled once per translation unit; per
// tool type only `typed_attempts`' small functions are. See docs/recovery.md.
#ifndef TOOL_EFFECTS_DETAIL_RECOVERY_HPP
#define TOOL_EFFECTS_DETAIL_RECOVERY_HPP

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <tool_effects/detail/config.hpp>
#if TOOL_EFFECTS_HAS_STOP_TOKEN
#include <condition_variable>
#include <mutex>
#include <stop_token>
#else
#include <thread>
#endif

#include <boost/asio/awaitable.hpp>

#include <tool_effects/attempt.hpp>
#include <tool_effects/confirmation.hpp>
#include <tool_effects/detail/awaitable.hpp>
#include <tool_effects/detail/entropy.hpp>
#include <tool_effects/detail/invoke.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/detail/type_name.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/recovery_options.hpp>
#include <tool_effects/retry_policy.hpp>
#include <tool_effects/rules.hpp>

namespace tool_effects::detail {

// The tool a value stands for: `std::reference_wrapper<T>` stands for T.
template <class T>
struct unwrap_tool {
  using type = std::remove_cvref_t<T>;
};
template <class T>
struct unwrap_tool<std::reference_wrapper<T>> {
  using type = std::remove_cv_t<T>;
};
template <class T>
using unwrap_tool_t = typename unwrap_tool<std::remove_cvref_t<T>>::type;

// A readable error when the tool cannot take the arguments.
template <class Tool, class... Args>
constexpr void check_invocable() {
  static_assert(std::is_invocable_v<Tool&, Args&...> || AttemptAware<Tool, Args...>,
                "tool_effects: the tool cannot be called with these arguments (as tool(args...) or "
                "tool(const attempt_context&, args...))");
}

// Mixes a user seed with the call's key, so calls with one seed still jitter apart.
inline std::uint64_t mix_seed(std::uint64_t seed, std::string_view key) noexcept {
  std::uint64_t z = seed ^ fnv1a(key);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// What the per-call entry points read: a policy (null: one attempt, errors
// propagate) and an approver (null or empty: deny). Non-owning: the pointees
// must outlive the call (the dispatcher points into its options).
struct recovery_refs {
  const retry_policy* retry = nullptr;
  const tool_effects::approver* approver = nullptr;
  bool unknown_unconfirmed = false;  // run_unknown_tools_unconfirmed

  recovery_refs() = default;
  recovery_refs(const retry_policy* r, const tool_effects::approver* a, bool unknown_unconfirmed = false) noexcept
      : retry(r), approver(a), unknown_unconfirmed(unknown_unconfirmed) {}
  recovery_refs(const recovery_options& o) noexcept  // NOLINT(google-explicit-constructor)
      : retry(o.retry ? &*o.retry : nullptr), approver(&o.approver), unknown_unconfirmed(o.unknown_tools_unconfirmed) {}

  [[nodiscard]] bool has_approver() const noexcept { return approver && approver->has_value(); }
};

// The decision procedure of one logical call. The drivers ask it what to do
// next (`step`) and report what happened; it states every rule once.
class recovery_state {
 public:
  enum class step_kind {
    confirm,    // ask the approver for `request()`, then `confirmed(answer)`
    attempt,    // run the next attempt with `begin_attempt()`; on error `failed(...)`
    wait,       // wait `delay` (the backoff), then `waited(completed)`
    fix,        // hand the error to the fix hook, then `fixed(rerun, changed, ...)`
    fail,       // end with call_failure (`finish`)
    propagate   // end by rethrowing the error (`finish`)
  };
  struct step {
    step_kind kind = step_kind::propagate;
    failure_reason reason = failure_reason::unsafe_to_retry;  // of `fail`
    std::chrono::nanoseconds delay{};                          // of `wait`
  };

  // Throws std::invalid_argument when the call asks for a destructive retry
  // it cannot have (`accepts_destructive_retry_opt_in`).
  recovery_state(recovery_refs o, call_settings s, effect_set effects)
      : opts_(o), settings_(std::move(s)), effects_(effects) {
    if (settings_.allow_destructive_retry && !accepts_destructive_retry_opt_in(effects_))
      throw std::invalid_argument(detail::str_cat("tool_effects: allow_destructive_retry on '", settings_.name,
                                                  "', a call that may not be retried even with the opt-in (it is "
                                                  "not retry-safe apart from destructive)"));
    ctx_.idempotency_key =
        settings_.idempotency_key.empty() ? random_idempotency_key() : std::move(settings_.idempotency_key);
    settings_.idempotency_key.clear();  // the key lives in ctx_ (see key())
    ctx_.attempt = 0;
    ctx_.fencing_token = settings_.fencing_token;
  }

  [[nodiscard]] const call_settings& settings() const noexcept { return settings_; }
  // The logical call's key (repairs with changed inputs derive "<key>.r<k>" from it).
  [[nodiscard]] const std::string& key() const noexcept { return base_key_.empty() ? ctx_.idempotency_key : base_key_; }
  [[nodiscard]] effect_set effects() const noexcept { return effects_; }
  [[nodiscard]] std::size_t attempts() const noexcept { return ctx_.attempt; }
  // The confirmation rule (`needs_confirmation`), less unknown effects when
  // the caller opted out explicitly (run_unknown_tools_unconfirmed).
  [[nodiscard]] bool needs_confirmation() const noexcept {
    return tool_effects::needs_confirmation(effects_) && !(effects_.empty() && opts_.unknown_unconfirmed);
  }

  [[nodiscard]] confirmation_request request() const noexcept {
    return make_confirmation_request(settings_.name, settings_.subject, effects_, ctx_.idempotency_key);
  }

  // The record when the approver did not approve (never ran: 0 attempts).
  [[nodiscard]] failure_record denied(std::exception_ptr approver_error) const {
    failure_record r = make_failure_record(settings_.name, 0, classify(effects_), failure_reason::confirmation_denied,
                                           approver_error);
    if (effects_.empty()) {
      // Unknown effects: the reason text names them first.
      std::string why = "unknown effects: ";
      if (approver_error) why += r.last_error_message;
      else if (opts_.has_approver()) why += "denied by the approver";
      else why += "no approver was given; declare the tool's effects or pass an approver";
      r.last_error_message = std::move(why);
    } else if (!approver_error) {
      r.last_error_message =
          opts_.has_approver() ? "denied by the approver" : "no approver was given for a destructive call";
    }
    if (!settings_.subject.server.empty())  // an MCP tool: say whose (the model may see two servers' tools)
      r.last_error_message += detail::str_cat(" (tool ", terminal_quote(settings_.subject.tool.empty() ? settings_.name
                                                                                                  : settings_.subject.tool),
                                              " of MCP server ", terminal_quote(settings_.subject.server), ")");
    return r;
  }

  // ---------------------------------------------------------------- the steps

  // The first step: confirmation of the calls that need it, else the first attempt.
  [[nodiscard]] step start() const noexcept { return {needs_confirmation() ? step_kind::confirm : step_kind::attempt}; }

  // After the approver answered (an approver that threw: `deny`, its error is the record's).
  [[nodiscard]] static step confirmed(confirmation answer) noexcept {
    if (answer == confirmation::approve) return {step_kind::attempt};
    return {step_kind::fail, failure_reason::confirmation_denied};
  }

  // After attempt `attempts()` failed with `e`: a transient error is retried
  // where `may_retry` allows and attempts remain (else a record), any other
  // goes to the fix hook when there is one, else propagates. `cancelled`
  // (stop requested / coroutine cancelled) ends the call with the error.
  [[nodiscard]] step failed(const std::exception_ptr& e, bool cancelled, bool has_fix) {
    if (!opts_.retry || !is_transient_error(*opts_.retry, e))
      return {has_fix && !cancelled ? step_kind::fix : step_kind::propagate};
    if (!may_retry(effects_, settings_.allow_destructive_retry)) return {step_kind::fail, failure_reason::unsafe_to_retry};
    if (ctx_.attempt >= std::max<std::size_t>(1, opts_.retry->max_attempts))
      return {step_kind::fail, failure_reason::retries_exhausted};
    if (cancelled) return {step_kind::propagate};
    return {step_kind::wait, failure_reason::unsafe_to_retry, jitter().next()};
  }

  // After the backoff: `completed` false (stopped, cancelled, the timer aborted) ends the call with the error.
  [[nodiscard]] static step waited(bool completed) noexcept {
    return {completed ? step_kind::attempt : step_kind::propagate};
  }

  // After the fix hook: `rerun` false propagates the error; a repair the
  // rules refuse (`may_repair`) or one past the attempts is a record; else
  // the next attempt runs the repaired request.
  [[nodiscard]] step fixed(bool rerun, bool inputs_changed, bool declares_repairs_idempotent) {
    if (!rerun) return {step_kind::propagate};
    if (const auto refusal = repair_refusal(inputs_changed, declares_repairs_idempotent))
      return {step_kind::fail, *refusal};
    begin_repair(inputs_changed);
    return {step_kind::attempt};
  }

  // Ends the call (`s` is `fail` or `propagate`): throws call_failure with the
  // record, or rethrows `e` (the attempt's error; for a denied confirmation,
  // the approver's, if it threw).
  [[noreturn]] void finish(const step& s, std::exception_ptr e) const {
    if (s.kind == step_kind::fail)
      throw call_failure(s.reason == failure_reason::confirmation_denied ? denied(std::move(e))
                                                                         : record(s.reason, std::move(e)));
    std::rethrow_exception(std::move(e));
  }

  // Starts the next attempt; returns its context.
  const attempt_context& begin_attempt() {
    ++ctx_.attempt;
    return ctx_;
  }

  // ---------------------------------------------------------------- the rules behind the steps
 private:
  // Marks the next attempt as a repair; `changed`: the request differs.
  void begin_repair(bool changed) {
    ctx_.is_repair = true;
    if (changed) {
      if (base_key_.empty()) base_key_ = ctx_.idempotency_key;
      ctx_.idempotency_key = detail::str_cat(base_key_, ".r", std::to_string(++changed_repairs_));
    }
  }

  // Whether a repair (changed or not) may run after attempt `attempts()`.
  std::optional<failure_reason> repair_refusal(bool inputs_changed, bool declares_repairs_idempotent) const {
    if (!may_repair(effects_, inputs_changed, declares_repairs_idempotent, settings_.allow_destructive_retry))
      return failure_reason::non_idempotent_side_effect;
    const std::size_t max = opts_.retry ? std::max<std::size_t>(1, opts_.retry->max_attempts) : 1;
    if (ctx_.attempt >= max) return failure_reason::retries_exhausted;
    return std::nullopt;
  }

  // The record of a failure: the class is the call's, or non_idempotent for a refused repair.
  [[nodiscard]] failure_record record(failure_reason r, std::exception_ptr e) const {
    const side_effect_class c =
        r == failure_reason::non_idempotent_side_effect ? side_effect_class::non_idempotent : classify(effects_);
    return make_failure_record(settings_.name, ctx_.attempt, c, r, std::move(e));
  }

  backoff& jitter() {
    if (!backoff_) {
      const auto& p = *opts_.retry;
      const std::uint64_t seed = p.seed ? detail::mix_seed(*p.seed, key()) : detail::entropy64();
      backoff_.emplace(p, seed);
    }
    return *backoff_;
  }

  recovery_refs opts_;
  call_settings settings_;
  effect_set effects_;
  attempt_context ctx_;
  std::size_t changed_repairs_ = 0;
  std::string base_key_;  // the logical call's key, once a repair changed the request
  std::optional<backoff> backoff_;
};

#if TOOL_EFFECTS_HAS_STOP_TOKEN
using stop_token = std::stop_token;
#else
// Standard libraries without <stop_token> (libc++ 19 keeps it behind -fexperimental-library): a token that
// is never stopped; the public overloads that take a std::stop_token are then absent.
struct stop_token {
  [[nodiscard]] constexpr bool stop_requested() const noexcept { return false; }
};
#endif

// Sleeps `d` or until `stop` is requested; returns false when stopped.
inline bool sleep_for(std::chrono::nanoseconds d, const stop_token& stop) {
  if (stop.stop_requested()) return false;
  if (d <= std::chrono::nanoseconds::zero()) return true;
#if TOOL_EFFECTS_HAS_STOP_TOKEN
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  return !cv.wait_for(lock, stop, d, [] { return false; }) && !stop.stop_requested();
#else
  std::this_thread::sleep_for(d);
  return true;
#endif
}

// Coroutines from here on (typed_attempts, recover, the awaitable entry points).
#include <tool_effects/detail/push_options.hpp>

// Whether `fix(error, args...)` may be called as a repair of `args...`.
template <class Fix, class... Args>
concept RepairFix = std::is_invocable_r_v<bool, Fix&, const std::exception_ptr&, Args&...>;

// Runs `fix` on the failed request `args...` (in place); returns whether to
// re-run, and sets `changed` to whether the request differs (compared with
// `==` when the arguments allow it, else assumed changed).
template <class Fix, class... Args>
bool apply_fix(Fix& fix, const std::exception_ptr& e, bool& changed, Args&... args) {
  if constexpr ((std::equality_comparable<Args> && ...) && (std::is_copy_constructible_v<Args> && ...)) {
    const std::tuple<Args...> before(args...);
    if (!detail::invoke(fix, e, args...)) return false;
    changed = before != std::tie(args...);
  } else {
    if (!detail::invoke(fix, e, args...)) return false;
    changed = true;
  }
  return true;
}

// A call under recovery, type-erased: what the drivers (`drive`, `recover`)
// need from the typed side. Both drivers are compiled once per translation
// unit; per tool type only the small functions behind these pointers are.
struct erased_attempts {
  void* self = nullptr;
  // A sync call: runs the attempt with `ctx` and keeps its result; throws its error.
  void (*run)(void* self, const attempt_context& ctx) = nullptr;
  // An awaitable call (instead of `run`): the attempt's awaitable, which keeps the result.
  boost::asio::awaitable<void> (*run_async)(void* self, const attempt_context& ctx) = nullptr;
  // A repair (null: none): `fix(error)` may change the request in place and says whether to
  // re-run it; `changed` is set to whether the request differs.
  bool (*fix)(void* self, const std::exception_ptr& error, bool& changed) = nullptr;
  bool repairs_idempotent = false;  // the tool declares RepairsIdempotent
};

// Where a typed call keeps its result between the attempt and the caller.
template <class T>
struct result_slot {
  std::optional<T> value;
  template <class X>
  void set(X&& x) {
    value.emplace(std::forward<X>(x));
  }
  T take() { return std::move(*value); }
};
template <class T>
struct result_slot<T&> {
  T* value = nullptr;
  void set(T& x) noexcept { value = &x; }
  T& take() noexcept { return *value; }
};
template <>
struct result_slot<void> {
  void take() noexcept {}
};

// The typed half of a call under recovery. `A` is invocable with the
// attempt context and returns the attempt's result or its awaitable, and says
// whether it may offer a repair (`can_fix`; then `has_fix()`, `fix(error,
// changed)`, `repairs_idempotent`): direct_attempt, dispatched_attempt. The
// repair path is instantiated only where `can_fix`.
template <class A>
struct typed_attempts {
  using raw = decltype(std::declval<A&>()(std::declval<const attempt_context&>()));
  static constexpr bool is_async = is_awaitable<raw>::value;
  // An rvalue reference result is kept (and returned) by value.
  using result = std::conditional_t<std::is_rvalue_reference_v<awaited_t<raw>>,
                                    std::remove_cvref_t<awaited_t<raw>>, awaited_t<raw>>;

  A attempt;
  result_slot<result> out{};

  erased_attempts erased() {
    erased_attempts c;
    c.self = this;
    if constexpr (is_async) c.run_async = &run_async;
    else c.run = &run;
    if constexpr (A::can_fix) {
      if (attempt.has_fix()) {
        c.fix = &fix;
        c.repairs_idempotent = A::repairs_idempotent;
      }
    }
    return c;
  }

 private:
  static void run(void* p, const attempt_context& ctx) {
    auto& self = *static_cast<typed_attempts*>(p);
    if constexpr (std::is_void_v<result>) self.attempt(ctx);
    else self.out.set(self.attempt(ctx));
  }
  static boost::asio::awaitable<void> run_async(void* p, const attempt_context& ctx) {
    auto& self = *static_cast<typed_attempts*>(p);
    if constexpr (std::is_void_v<result>) co_await self.attempt(ctx);
    else self.out.set(co_await self.attempt(ctx));
  }
  static bool fix(void* p, const std::exception_ptr& e, bool& changed) {
    return static_cast<typed_attempts*>(p)->attempt.fix(e, changed);
  }
};

// The attempts of `tool(args...)` (or `tool(ctx, args...)`), with an optional
// repair `fix(error, args&...)` (Fix = std::nullptr_t: none).
template <class Tool, class Fix, class... Args>
struct direct_attempt {
  static constexpr bool can_fix = !std::is_same_v<Fix, std::nullptr_t>;
  static constexpr bool repairs_idempotent = RepairsIdempotent<unwrap_tool_t<Tool>>;
  Tool* tool;
  Fix* repair;
  std::tuple<Args&...> args;

  decltype(auto) operator()(const attempt_context& ctx) {
    return std::apply([&](Args&... a) -> decltype(auto) { return invoke_attempt(*tool, ctx, a...); }, args);
  }
  [[nodiscard]] bool has_fix() const noexcept { return repair != nullptr; }
  bool fix(const std::exception_ptr& e, bool& changed) {
    return std::apply([&](Args&... a) { return apply_fix(*repair, e, changed, a...); }, args);
  }
};

// ============================================================================ the drivers

// The synchronous driver of `recovery_state`'s steps: the approver's `ask`,
// the backoff slept in this thread (a stop request ends it), attempts run by
// `c.run`. Returns when an attempt succeeded (its result is in the typed
// side); throws the call's error or its call_failure otherwise. Defined in
// impl/recovery.ipp.
TOOL_EFFECTS_DECL void drive(recovery_refs o, call_settings s, effect_set effects, const erased_attempts& c,
                             const stop_token& stop);

// The awaitable driver of the same steps: the approver may be awaited
// (`ask_async`), an awaitable attempt is awaited, the backoff waits on an Asio
// timer of `Clock` (a steady_timer) on the coroutine's executor (no thread
// blocks), and terminal cancellation of the coroutine (through its
// cancellation slot) stops further attempts and repairs: the last error is
// rethrown. A template (on the clock) only so that it is compiled where it is
// used: once per translation unit, or once per program with separate
// compilation. Defined in impl/recovery.ipp (which includes Asio's timer).
template <class Clock = std::chrono::steady_clock>
boost::asio::awaitable<void> recover(recovery_refs o, call_settings s, effect_set effects, erased_attempts c);

/// `recover` with its error as a value (null: the call succeeded), for the
/// dispatcher: an error that leaves a coroutine through `co_spawn` stays
/// referenced by co_spawn's frame, on the thread that ran it, after the
/// completion handler handed it on; its last release there then races, as
/// ThreadSanitizer sees it (the standard library's reference count is not
/// instrumented), with the caller's reads of the exception. Caught here, the
/// error is moved through, and the caller holds the last reference.
template <class Clock = std::chrono::steady_clock>
boost::asio::awaitable<std::exception_ptr> recover_to_error(recovery_refs o, call_settings s, effect_set effects,
                                                            erased_attempts c);

#if !TOOL_EFFECTS_HEADER_ONLY
// Separate compilation: the drivers on the steady clock (what every program uses) are instantiated once, in
// impl/recovery.ipp; a translation unit then needs neither their bodies nor Asio's timer.
extern template boost::asio::awaitable<void> recover<std::chrono::steady_clock>(recovery_refs, call_settings,
                                                                               effect_set, erased_attempts);
extern template boost::asio::awaitable<std::exception_ptr> recover_to_error<std::chrono::steady_clock>(
    recovery_refs, call_settings, effect_set, erased_attempts);
#endif

// ============================================================================ typed entry points

// The synchronous per-call entry point: `tool(args...)` (or `tool(ctx,
// args...)`) under `drive`, with the repair `fix(error, args&...)` (null: none).
// Returns the tool's result. `tool`, `fix` and `args` must outlive it.
template <class Tool, class Fix, class... Args>
decltype(auto) run_call_impl(recovery_refs o, call_settings s, effect_set effects, const stop_token& stop, Fix* fix,
                             Tool& tool, Args&... args) {
  check_invocable<Tool, Args...>();
  using attempts = typed_attempts<direct_attempt<Tool, Fix, Args...>>;
  static_assert(!attempts::is_async,
                "tool_effects: this tool returns boost::asio::awaitable; use the awaitable form (retry_async)");
  attempts t{{&tool, fix, std::tuple<Args&...>(args...)}};
  drive(o, std::move(s), effects, t.erased(), stop);
  return t.out.take();
}

// `run_call_impl` without a repair (the runtime path and `retry`).
template <class Tool, class... Args>
decltype(auto) run_call(recovery_refs o, call_settings s, effect_set effects, const stop_token& stop, Tool& tool,
                        Args&... args) {
  return run_call_impl(o, std::move(s), effects, stop, static_cast<std::nullptr_t*>(nullptr), tool, args...);
}

// The awaitable per-call entry point: as `run_call_impl`, under `recover`.
template <class Tool, class Fix, class... Args>
auto run_call_async_impl(recovery_refs o, call_settings s, effect_set effects, Fix* fix, Tool& tool, Args&... args)
    -> boost::asio::awaitable<typename typed_attempts<direct_attempt<Tool, Fix, Args...>>::result> {
  check_invocable<Tool, Args...>();
  typed_attempts<direct_attempt<Tool, Fix, Args...>> t{{&tool, fix, std::tuple<Args&...>(args...)}};
  co_await recover(o, std::move(s), effects, t.erased());
  co_return t.out.take();
}

// `run_call_async_impl` without a repair.
template <class Tool, class... Args>
auto run_call_async(recovery_refs o, call_settings s, effect_set effects, Tool& tool, Args&... args) {
  return run_call_async_impl(o, std::move(s), effects, static_cast<std::nullptr_t*>(nullptr), tool, args...);
}

#include <tool_effects/detail/pop_options.hpp>

}  // namespace tool_effects::detail

#if TOOL_EFFECTS_HEADER_ONLY
#include <tool_effects/impl/recovery.ipp>
#endif

#endif  // TOOL_EFFECTS_DETAIL_RECOVERY_HPP
