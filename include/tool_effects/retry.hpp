// tool_effects/retry.hpp — retry and repair that cannot be misused.
//
//  * `retry_policy`: attempts, base delay, cap, jitter (AWS "Exponential
//    Backoff and Jitter": full, equal, decorrelated, none), which errors are
//    transient (default: none is), and a seed for deterministic tests.
//  * `retry(policy, tool, args...)` (sleeps between attempts) and
//    `retry_async(policy, tool, args...)` (an Asio awaitable whose backoff
//    waits on a steady_timer): both compile only for `RetrySafe` tools; the
//    error names the tool and the reason (`retry_rejected<Tool, reason::...>`).
//  * `repair(policy, tool, fix, args...)`: re-runs with a changed request under
//    the same gate; a changed request of an `idempotent` tool counts as
//    `non_idempotent` unless the tool declares `RepairsIdempotent`.
//  * Idempotency keys: one per logical call, the same for all its attempts;
//    a tool invocable as `tool(const attempt_context&, args...)` receives it.
//  * `run_with_recovery(description, options, fn, args...)`: the runtime path
//    for tools known only at runtime; refuses what the rules refuse and
//    returns a failure record instead of invoking the tool again.
//  * `detail::run_call` (sync) / `detail::recover` (awaitable, type-erased:
//    compiled once per translation unit): the per-call entry points (retry
//    only where safe, confirmation of the calls that need it).
//
// Every decision is one constexpr function on `effect_set` (`may_retry`,
// `repaired_attempt_class`) built on rules.hpp; docs/recovery.md maps each to
// the side-effect safety design note.
#ifndef TOOL_EFFECTS_RETRY_HPP
#define TOOL_EFFECTS_RETRY_HPP

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <version>
#if TOOL_EFFECTS_HAS_STOP_TOKEN
#include <stop_token>
#endif

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <tool_effects/attempt.hpp>
#include <tool_effects/detail/config.hpp>
#include <tool_effects/call_description.hpp>
#include <tool_effects/confirmation.hpp>
#include <tool_effects/detail/str_cat.hpp>
#include <tool_effects/detail/type_name.hpp>
#include <tool_effects/failure.hpp>
#include <tool_effects/rules.hpp>
#include <tool_effects/side_effects.hpp>

namespace tool_effects {

// ============================================================================ the rules

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

// ============================================================================ declarations

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

/// The reason words of the compile-time retry gate (diagnostic types).
namespace reason {
struct retry_safe {};                  ///< not a rejection: the tool is RetrySafe
struct non_idempotent_side_effect {};  ///< declared, not destructive, not retry-safe (e.g. write without idempotent)
struct destructive {};                 ///< declared destructive (even if idempotent)
struct undeclared_side_effects {};     ///< no declaration: unknown is non_idempotent
}  // namespace reason

/// Diagnostic type of the retry gate: `value` is true when `Tool` is rejected
/// for `Reason`. Compile errors of `retry`/`retry_async`/`repair` read
/// `retry_rejected<your_tool, tool_effects::reason::destructive>`.
template <class Tool, class Reason>
struct retry_rejected {
  static constexpr bool value = true;
};
template <class Tool>
struct retry_rejected<Tool, reason::retry_safe> {
  static constexpr bool value = false;
};

/// The reason `Tool` may (reason::retry_safe) or may not be retried.
template <class Tool>
using retry_reason_t = std::conditional_t<
    RetrySafe<Tool>, reason::retry_safe,
    std::conditional_t<!DeclaresSideEffects<Tool>, reason::undeclared_side_effects,
                       std::conditional_t<Destructive<Tool>, reason::destructive, reason::non_idempotent_side_effect>>>;

// ============================================================================ the policy

/// How a retry's sleep is randomised (AWS "Exponential Backoff and Jitter"),
/// with `exp(n) = min(cap, base * 2^n)` for the n-th retry (n = 0, 1, ...):
enum class jitter_mode : std::uint8_t {
  none,         ///< sleep = exp(n)
  full,         ///< sleep = uniform(0, exp(n))
  equal,        ///< sleep = exp(n)/2 + uniform(0, exp(n)/2)
  decorrelated  ///< sleep = min(cap, uniform(base, previous_sleep * 3)), previous_sleep starts at base
};

/// Stable slugs: "none", "full", "equal", "decorrelated".
constexpr std::string_view to_string(jitter_mode j) noexcept {
  switch (j) {
    case jitter_mode::none: return "none";
    case jitter_mode::full: return "full";
    case jitter_mode::equal: return "equal";
    case jitter_mode::decorrelated: return "decorrelated";
  }
  return {};
}

/// Decides whether an error is transient (worth another attempt).
using transient_predicate = std::function<bool(const std::exception_ptr&)>;

/// A predicate that calls an error transient iff it is (derived from) one of `E...`.
template <class... E>
transient_predicate transient_on() {
  return [](const std::exception_ptr& e) {
    if (!e) return false;
    bool hit = false;
    try {
      std::rethrow_exception(e);
    } catch (...) {
      const auto is = [&]<class X>() {
        try {
          throw;
        } catch (const X&) {
          return true;
        } catch (...) {
          return false;
        }
      };
      hit = (is.template operator()<E>() || ...);
    }
    return hit;
  };
}

/// A retry policy. Aggregate: `retry_policy{.max_attempts = 4, .is_transient = transient_on<timeout>()}`.
/// With the default (empty) `is_transient` nothing is transient, so nothing is
/// ever retried by accident.
struct retry_policy {
  std::size_t max_attempts = 3;                          ///< attempts in total (>= 1), the first included
  std::chrono::nanoseconds base_delay = std::chrono::milliseconds(100);
  std::chrono::nanoseconds max_delay = std::chrono::seconds(10);  ///< the cap
  jitter_mode jitter = jitter_mode::full;
  transient_predicate is_transient{};                    ///< empty: no error is transient
  std::optional<std::uint64_t> seed{};                   ///< fixed seed for deterministic jitter; none: random_device
};

/// Whether `policy` calls `e` transient. An empty predicate, a null error, or
/// a predicate that throws: false.
inline bool is_transient_error(const retry_policy& policy, const std::exception_ptr& e) noexcept {
  if (!policy.is_transient || !e) return false;
  try {
    return policy.is_transient(e);
  } catch (...) {
    return false;
  }
}

/// The delays of one logical call's retries, drawn from a seeded generator
/// (std::mt19937_64): `next()` is the sleep before the next retry.
class backoff {
 public:
  using duration = std::chrono::nanoseconds;

  backoff(const retry_policy& p, std::uint64_t seed)
      : base_(std::max(p.base_delay, duration::zero())),
        cap_(std::max(p.max_delay, duration::zero())),
        mode_(p.jitter),
        rng_(seed),
        prev_(base_) {}

  /// The sleep before the next retry, in [0, cap] (decorrelated: [min(base, cap), cap]).
  duration next() {
    const std::size_t n = retries_++;
    switch (mode_) {
      case jitter_mode::none: return exp(n);
      case jitter_mode::full: return uniform(duration::zero(), exp(n));
      case jitter_mode::equal: {
        const duration half = exp(n) / 2;
        return half + uniform(duration::zero(), exp(n) - half);
      }
      case jitter_mode::decorrelated: {
        const duration hi = prev_.count() > std::numeric_limits<duration::rep>::max() / 3 ? cap_ : prev_ * 3;
        prev_ = std::min(cap_, uniform(base_, std::max(base_, hi)));
        return prev_;
      }
    }
    return exp(n);
  }

  /// How many delays were drawn.
  [[nodiscard]] std::size_t retries() const noexcept { return retries_; }

  /// min(cap, base * 2^n), without overflow.
  [[nodiscard]] duration exp(std::size_t n) const noexcept {
    duration d = std::min(base_, cap_);
    for (std::size_t i = 0; i < n && d < cap_; ++i)
      d = d.count() > std::numeric_limits<duration::rep>::max() / 2 ? cap_ : std::min(cap_, d * 2);
    return d;
  }

 private:
  duration uniform(duration lo, duration hi) {
    if (hi <= lo) return lo;
    return duration(std::uniform_int_distribution<duration::rep>(lo.count(), hi.count())(rng_));
  }

  duration base_, cap_;
  jitter_mode mode_;
  std::mt19937_64 rng_;
  duration prev_;
  std::size_t retries_ = 0;
};

namespace detail {
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

template <class T>
struct is_awaitable : std::false_type {};
template <class T, class E>
struct is_awaitable<boost::asio::awaitable<T, E>> : std::true_type {
  using value_type = T;
};

template <class Tool, class... Args>
struct attempt_result {
  using raw = decltype(invoke_attempt(std::declval<Tool&>(), std::declval<const attempt_context&>(),
                                      std::declval<Args&>()...));
  static constexpr bool awaitable = is_awaitable<std::remove_cvref_t<raw>>::value;
};
template <class Raw, bool Awaitable = is_awaitable<std::remove_cvref_t<Raw>>::value>
struct awaited {
  using type = Raw;
};
template <class Raw>
struct awaited<Raw, true> {
  using type = typename is_awaitable<std::remove_cvref_t<Raw>>::value_type;
};

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
}  // namespace detail

// ============================================================================ options of one call

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
/// idempotency key (empty: generated), and the explicit opt-in that lets a
/// destructive, otherwise retry-safe call be retried.
struct call_settings {
  std::string name{};
  std::string idempotency_key{};
  bool allow_destructive_retry = false;
  std::uint64_t fencing_token = detail::current_fencing_token();  ///< the call's coordinator grant (coordination.hpp)
};

namespace detail {
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

// The decision procedure of one logical call, shared by the sync and async loops.
class recovery_state {
 public:
  enum class step_kind { propagate, fail, wait };
  struct step {
    step_kind kind = step_kind::propagate;
    failure_reason reason = failure_reason::unsafe_to_retry;
    std::chrono::nanoseconds delay{};
  };

  // Throws std::invalid_argument when the call asks for a destructive retry
  // it cannot have (`accepts_destructive_retry_opt_in`).
  recovery_state(recovery_refs o, call_settings s, effect_set effects)
      : opts_(o), settings_(std::move(s)), effects_(effects) {
    if (settings_.allow_destructive_retry && !accepts_destructive_retry_opt_in(effects_))
      throw std::invalid_argument("tool_effects: allow_destructive_retry on '" + settings_.name +
                                  "', a call that may not be retried even with the opt-in (it is not retry-safe "
                                  "apart from destructive)");
    ctx_.idempotency_key =
        settings_.idempotency_key.empty() ? make_idempotency_key() : std::move(settings_.idempotency_key);
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
    return {settings_.name, effects_, classify(effects_), ctx_.idempotency_key};
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
    return r;
  }

  // Starts the next attempt; returns its context.
  const attempt_context& begin_attempt() {
    ++ctx_.attempt;
    return ctx_;
  }

  // Marks the next attempt as a repair; `changed`: the request differs.
  void begin_repair(bool changed) {
    ctx_.is_repair = true;
    if (changed) {
      if (base_key_.empty()) base_key_ = ctx_.idempotency_key;
      ctx_.idempotency_key = detail::str_cat(base_key_, ".r", std::to_string(++changed_repairs_));
    }
  }

  // What to do after attempt `attempts()` failed with `e` (retry only; see on_repair).
  step on_error(const std::exception_ptr& e, bool cancelled) {
    if (!opts_.retry || !is_transient_error(*opts_.retry, e)) return {step_kind::propagate};
    if (!may_retry(effects_, settings_.allow_destructive_retry)) return {step_kind::fail, failure_reason::unsafe_to_retry};
    if (ctx_.attempt >= std::max<std::size_t>(1, opts_.retry->max_attempts))
      return {step_kind::fail, failure_reason::retries_exhausted};
    if (cancelled) return {step_kind::propagate};
    return {step_kind::wait, failure_reason::unsafe_to_retry, jitter().next()};
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

 private:
  backoff& jitter() {
    if (!backoff_) {
      const auto& p = *opts_.retry;
      const std::uint64_t seed = p.seed ? detail::mix_seed(*p.seed, key())
                                        : (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^
                                              std::random_device{}();
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

// Asks the approver (sync); throws call_failure{confirmation_denied} unless approved.
inline void confirm_or_throw(recovery_refs o, const recovery_state& st) {
  std::exception_ptr err;
  confirmation answer = confirmation::deny;
  try {
    if (o.approver) answer = o.approver->ask(st.request());
  } catch (...) {
    err = std::current_exception();
  }
  if (answer != confirmation::approve) throw call_failure(st.denied(err));
}

/// THE per-call entry point (sync): confirmation of destructive calls, then
/// attempts under `o.retry`, retrying only where `may_retry` allows. Returns
/// the tool's result; throws the tool's error when it is not transient (or no
/// policy is given, or `stop` was requested), `call_failure` otherwise.
/// `tool` and `args` are passed as lvalues to every attempt.
template <class Tool, class... Args>
decltype(auto) run_call(recovery_refs o, call_settings s, effect_set effects, stop_token stop,
                        Tool& tool, Args&... args) {
  check_invocable<Tool, Args...>();
  static_assert(!attempt_result<Tool, Args...>::awaitable,
                "tool_effects: this tool returns boost::asio::awaitable; use the awaitable form (retry_async)");
  recovery_state st(o, std::move(s), effects);
  if (st.needs_confirmation()) confirm_or_throw(o, st);
  for (;;) {
    const attempt_context& ctx = st.begin_attempt();
    try {
      return invoke_attempt(tool, ctx, args...);
    } catch (...) {
      const auto e = std::current_exception();
      const auto next = st.on_error(e, stop.stop_requested());
      if (next.kind == recovery_state::step_kind::propagate) throw;
      if (next.kind == recovery_state::step_kind::fail) throw call_failure(st.record(next.reason, e));
      if (!sleep_for(next.delay, stop)) throw;
    }
  }
}

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
    if (!std::invoke(fix, e, args...)) return false;
    changed = before != std::tie(args...);
  } else {
    if (!std::invoke(fix, e, args...)) return false;
    changed = true;
  }
  return true;
}

// A call under recovery, type-erased: what the awaitable recovery loop needs
// from the typed side. The loop (`recover`) is compiled once per translation
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
// whether it offers a repair (`has_fix()`, `fix(error, changed)`,
// `repairs_idempotent`): direct_attempt, dispatched_attempt.
template <class A>
struct typed_attempts {
  using raw = decltype(std::declval<A&>()(std::declval<const attempt_context&>()));
  static constexpr bool is_async = is_awaitable<std::remove_cvref_t<raw>>::value;
  using result = typename awaited<raw>::type;

  A attempt;
  result_slot<result> out{};

  erased_attempts erased() {
    erased_attempts c;
    c.self = this;
    if constexpr (is_async) c.run_async = &run_async;
    else c.run = &run;
    if (attempt.has_fix()) {
      c.fix = &fix;
      c.repairs_idempotent = A::repairs_idempotent;
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
  static constexpr bool repairs_idempotent = RepairsIdempotent<unwrap_tool_t<Tool>>;
  Tool* tool;
  Fix* repair;
  std::tuple<Args&...> args;

  decltype(auto) operator()(const attempt_context& ctx) {
    return std::apply([&](Args&... a) -> decltype(auto) { return invoke_attempt(*tool, ctx, a...); }, args);
  }
  [[nodiscard]] bool has_fix() const noexcept {
    if constexpr (std::is_same_v<Fix, std::nullptr_t>) return false;
    else return repair != nullptr;
  }
  bool fix(const std::exception_ptr& e, bool& changed) {
    if constexpr (std::is_same_v<Fix, std::nullptr_t>) {
      (void)e;
      (void)changed;
      return false;
    } else {
      return std::apply([&](Args&... a) { return apply_fix(*repair, e, changed, a...); }, args);
    }
  }
};

/// THE per-call recovery loop (awaitable), for the dispatcher and the
/// awaitable forms: confirmation of the calls that `needs_confirmation`,
/// then attempts under `o.retry`, retried only where `may_retry` allows,
/// the backoff waiting on a steady_timer of the coroutine's executor (no
/// thread blocks); the approver may be awaited, an awaitable call is
/// awaited. Cancellation of the coroutine (terminal, through its
/// cancellation slot) stops further attempts: the last error is rethrown.
/// With a repair (`c.fix`), an error that is not retried is handed to it as
/// by `repair`. A template (on the timer, Asio's steady_timer) only so that
/// it is compiled where it is used: once per translation unit.
template <class Timer = boost::asio::steady_timer>
boost::asio::awaitable<void, typename Timer::executor_type> recover(recovery_refs o, call_settings s,
                                                                    effect_set effects, erased_attempts c) {
  recovery_state st(o, std::move(s), effects);
  if (st.needs_confirmation()) {
    std::exception_ptr err;
    confirmation answer = confirmation::deny;
    const confirmation_request req = st.request();
    try {
      if (o.approver) answer = co_await o.approver->ask_async(req);
    } catch (...) {
      err = std::current_exception();
    }
    if (answer != confirmation::approve) throw call_failure(st.denied(err));
  }
  for (;;) {
    const attempt_context& ctx = st.begin_attempt();
    std::exception_ptr e;
    try {
      if (c.run_async != nullptr) co_await c.run_async(c.self, ctx);
      else c.run(c.self, ctx);
      co_return;
    } catch (...) {
      e = std::current_exception();
    }
    auto cs = co_await boost::asio::this_coro::cancellation_state;
    const bool cancelled = cs.cancelled() != boost::asio::cancellation_type::none;
    const auto next = st.on_error(e, cancelled);
    if (next.kind == recovery_state::step_kind::propagate) {
      // Cancellation is handled here (no further attempt): clear the state, or
      // Asio 1.81's co_spawn would throw operation_aborted from its final post.
      if (cancelled) co_await boost::asio::this_coro::reset_cancellation_state();
      if (c.fix != nullptr && !cancelled) {  // not transient: try a repair
        bool changed = true;
        if (!c.fix(c.self, e, changed)) std::rethrow_exception(e);
        if (const auto refusal = st.repair_refusal(changed, c.repairs_idempotent))
          throw call_failure(st.record(*refusal, e));
        st.begin_repair(changed);
        continue;
      }
      std::rethrow_exception(e);
    }
    if (next.kind == recovery_state::step_kind::fail) throw call_failure(st.record(next.reason, e));
    Timer timer(co_await boost::asio::this_coro::executor);
    timer.expires_after(std::chrono::duration_cast<typename Timer::duration>(next.delay));
    bool aborted = false;
    try {
      co_await timer.async_wait(boost::asio::use_awaitable);
    } catch (const boost::system::system_error&) {
      aborted = true;
    }
    cs = co_await boost::asio::this_coro::cancellation_state;
    if (aborted || cs.cancelled() != boost::asio::cancellation_type::none) {
      co_await boost::asio::this_coro::reset_cancellation_state();
      std::rethrow_exception(e);
    }
  }
}

/// `recover` with its error as a value (null: the call succeeded), for the
/// dispatcher: an error that leaves a coroutine through `co_spawn` stays
/// referenced by co_spawn's frame, on the thread that ran it, after the
/// completion handler handed it on; its last release there then races, as
/// ThreadSanitizer sees it (the standard library's reference count is not
/// instrumented), with the caller's reads of the exception. Caught here, the
/// error is moved through, and the caller holds the last reference.
template <class Timer = boost::asio::steady_timer>
boost::asio::awaitable<std::exception_ptr, typename Timer::executor_type> recover_to_error(recovery_refs o,
                                                                                         call_settings s,
                                                                                         effect_set effects,
                                                                                         erased_attempts c) {
  try {
    co_await recover<Timer>(o, std::move(s), effects, c);
  } catch (...) {
    co_return std::current_exception();
  }
  co_return std::exception_ptr{};
}

/// The awaitable per-call entry point over typed attempts: runs `recover`
/// and returns the result. `tool`, `fix` (null: no repair) and `args` must
/// outlive it.
template <class Tool, class Fix, class... Args>
auto run_call_async_impl(recovery_refs o, call_settings s, effect_set effects, Fix* fix, Tool& tool, Args&... args)
    -> boost::asio::awaitable<typename awaited<typename attempt_result<Tool, Args...>::raw>::type> {
  check_invocable<Tool, Args...>();
  typed_attempts<direct_attempt<Tool, Fix, Args...>> t{{&tool, fix, std::tuple<Args&...>(args...)}};
  co_await recover(o, std::move(s), effects, t.erased());
  co_return t.out.take();
}

/// `run_call_async_impl` without a repair.
template <class Tool, class... Args>
auto run_call_async(recovery_refs o, call_settings s, effect_set effects, Tool& tool, Args&... args) {
  return run_call_async_impl(o, std::move(s), effects, static_cast<std::nullptr_t*>(nullptr), tool, args...);
}

#include <tool_effects/detail/pop_options.hpp>

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
    -> boost::asio::awaitable<typename detail::awaited<typename detail::attempt_result<Tool, Args...>::raw>::type> {
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
  detail::recovery_state st(o, detail::settings_for<Tool>(), side_effects_v<detail::unwrap_tool_t<Tool>>);
  for (;;) {
    const attempt_context& ctx = st.begin_attempt();
    std::exception_ptr e;
    try {
      return detail::invoke_attempt(tool, ctx, args...);
    } catch (...) {
      e = std::current_exception();
    }
    const auto next = st.on_error(e, false);
    if (next.kind == detail::recovery_state::step_kind::fail) throw call_failure(st.record(next.reason, e));
    if (next.kind == detail::recovery_state::step_kind::wait) {
      detail::sleep_for(next.delay, detail::stop_token{});
      continue;
    }
    // Not transient: try a repair.
    bool changed = true;
    if (!detail::apply_fix(fix, e, changed, args...)) std::rethrow_exception(e);
    if (const auto refusal = st.repair_refusal(changed, RepairsIdempotent<detail::unwrap_tool_t<Tool>>))
      throw call_failure(st.record(*refusal, e));
    st.begin_repair(changed);
  }
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
    -> boost::asio::awaitable<typename detail::awaited<typename detail::attempt_result<Tool, Args...>::raw>::type> {
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
