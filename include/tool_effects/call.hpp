// tool_effects/call.hpp — `call(tool, args...)`: a tool bound to its
// arguments, ready for the dispatcher (dispatch.hpp).
//
// Storage: the tool and every argument are stored BY VALUE, decayed (arrays
// and functions become pointers, cv/ref dropped), like std::bind and
// std::thread. Pass `std::ref(x)` / `std::cref(x)` to bind a reference: the
// tool then receives `x&` (the wrapper is unwrapped). The bound arguments are
// passed to the tool as lvalues, so the same call can be invoked again (a
// retry sees the same arguments). `std::ref(tool)` binds the tool itself by
// reference; its declaration is still found.
#ifndef TOOL_EFFECTS_CALL_HPP
#define TOOL_EFFECTS_CALL_HPP

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <tool_effects/attempt.hpp>
#include <tool_effects/detail/awaitable.hpp>
#include <tool_effects/detail/invoke.hpp>
#include <tool_effects/diagnostics.hpp>
#include <tool_effects/side_effects.hpp>

namespace tool_effects {

namespace detail {
// An optional value held on the heap and copied deeply: one pointer to move
// and to destroy while empty.
template <class T>
class heap_box {
 public:
  heap_box() = default;
  heap_box(const heap_box& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  heap_box(heap_box&&) noexcept = default;
  heap_box& operator=(const heap_box& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  heap_box& operator=(heap_box&&) noexcept = default;
  ~heap_box() = default;

  [[nodiscard]] T* get() const noexcept { return p_.get(); }
  T& get_or_emplace() {
    if (!p_) p_ = std::make_unique<T>();
    return *p_;
  }

 private:
  std::unique_ptr<T> p_;
};

template <class T>
constexpr T& unwrap(T& v) noexcept {
  return v;
}
template <class T>
constexpr T& unwrap(std::reference_wrapper<T> v) noexcept {
  return v.get();
}
}  // namespace detail

/// A tool bound to its arguments. `tool_type` is the type whose declaration
/// the dispatcher uses (`std::reference_wrapper` removed);
/// `result_type` is what the call produces (`T` for a tool returning
/// `boost::asio::awaitable<T>`, decayed otherwise); `is_awaitable` says
/// whether the tool returns an awaitable (run as a coroutine, holding no
/// thread while suspended).
template <class Tool, class... Args>
class bound_call {
 public:
  using tool_type = std::remove_reference_t<std::unwrap_reference_t<Tool>>;
  using invoke_result = decltype(detail::invoke_attempt(std::declval<tool_type&>(),
                                                       std::declval<const attempt_context&>(),
                                                       std::declval<std::unwrap_reference_t<Args>&>()...));
  static constexpr bool is_awaitable = detail::is_awaitable<invoke_result>::value;
  using result_type = std::remove_cvref_t<detail::awaited_t<invoke_result>>;

  template <class T, class... A>
  constexpr explicit bound_call(T&& tool, A&&... args)
      : tool_(std::forward<T>(tool)), args_(std::forward<A>(args)...) {}

  /// Invokes the tool with the bound arguments (as lvalues). Returns what the
  /// tool returns (an awaitable for coroutine tools).
  decltype(auto) operator()() {
    // A tool taking `const attempt_context&` first (attempt.hpp) gets a fresh
    // key and attempt 1 here; under a retry policy the recovery layer calls
    // it instead, with one key for all attempts.
    // A coroutine tool's awaitable starts only when it is awaited, after this
    // function returned: the context it takes by reference is kept by the
    // call (which outlives its awaitable), not on this function's stack.
    return std::apply(
        [this](auto&... a) -> decltype(auto) {
          if constexpr (is_awaitable && AttemptAware<tool_type, std::unwrap_reference_t<Args>...>) {
            call_extras& e = extras();
            e.context = attempt_context{e.idempotency_key.empty() ? random_idempotency_key() : e.idempotency_key, 1,
                                        false};
            return detail::invoke_attempt(detail::unwrap(tool_), *e.context, detail::unwrap(a)...);
          } else {
            return detail::invoke_attempt(
                detail::unwrap(tool_),
                [this] {
                  return attempt_context{idempotency_key().empty() ? random_idempotency_key() : idempotency_key(), 1,
                                         false};
                },
                detail::unwrap(a)...);
          }
        },
        args_);
  }

  /// The bound tool.
  [[nodiscard]] tool_type& tool() noexcept { return detail::unwrap(tool_); }
  /// The bound arguments.
  [[nodiscard]] std::tuple<Args...>& args() noexcept { return args_; }

  /// Opts this call in to automatic retries by the dispatcher although its
  /// tool is destructive. Compiles only when the tool is retry-safe apart
  /// from `destructive` (`accepts_destructive_retry_opt_in`, e.g. an
  /// idempotent delete): on any other tool it could never take effect, and
  /// the error names `destructive_retry_opt_in_rejected<Tool>`.
  [[nodiscard]] bound_call allow_destructive_retry() && {
    static_assert(accepts_destructive_retry_opt_in(side_effects_v<tool_type>) ||
                      !destructive_retry_opt_in_rejected<std::remove_cv_t<tool_type>>::value,
                  "tool_effects: allow_destructive_retry() on a call that may not be retried even with the opt-in "
                  "(the tool is not retry-safe apart from destructive); remove it, or declare the tool idempotent");
    destructive_retry_ = true;
    return std::move(*this);
  }

  /// Gives this call a caller-chosen idempotency key (e.g. from
  /// `idempotency_key(identity, scope)`, or one stored for a retry by another
  /// process): every attempt the dispatcher makes carries it (a repair with
  /// changed inputs: "<key>.r<k>"). Empty: a fresh random key per call.
  [[nodiscard]] bound_call with_idempotency_key(std::string key) && {
    extras().idempotency_key = std::move(key);
    return std::move(*this);
  }
  /// The caller-chosen idempotency key ("" when none).
  [[nodiscard]] const std::string& idempotency_key() const noexcept {
    static const std::string none;
    const call_extras* e = extras_.get();
    return e ? e->idempotency_key : none;
  }

  /// The repair function type of this call: `fix(error, args&...)` may change
  /// the bound arguments in place and returns whether to re-run.
  using repair_function = std::function<bool(const std::exception_ptr&, std::unwrap_reference_t<Args>&...)>;

  /// Gives this call a repair, as `repair` in retry.hpp does for a direct
  /// call: after an error the dispatcher does not retry, `fix(error, args&...)`
  /// may change the bound arguments and asks for another attempt, under the
  /// same gate (a changed request of an `idempotent`-class tool without
  /// `RepairsIdempotent` is refused: `call_failure{non_idempotent_side_effect}`).
  /// Attempts and repairs together are bounded by the `retry_policy` of the
  /// dispatch options (without one there is a single attempt). Compiles only
  /// for `RetrySafe` tools returning by value, like `repair`.
  template <class Fix>
  [[nodiscard]] bound_call with_repair(Fix fix) && {
    static_assert(RetrySafe<tool_type>, "tool_effects: with_repair needs a RetrySafe tool (the gate of repair)");
    static_assert(std::is_invocable_r_v<bool, Fix&, const std::exception_ptr&, std::unwrap_reference_t<Args>&...>,
                  "tool_effects: with_repair: fix must be callable as bool(const std::exception_ptr&, Args&... request)");
    static_assert(!std::is_reference_v<invoke_result>, "tool_effects: with_repair: the tool must return by value");
    extras().repair = std::move(fix);
    return std::move(*this);
  }
  /// The repair given by `with_repair`, or nullptr.
  [[nodiscard]] repair_function* repair_fix() noexcept {
    call_extras* e = extras_.get();
    return e && e->repair ? &e->repair : nullptr;
  }
  /// Whether `allow_destructive_retry()` was called.
  [[nodiscard]] bool destructive_retry_allowed() const noexcept { return destructive_retry_; }

 private:
  // What few calls carry: kept out of line, so that a plain call moves and
  // dies as cheaply as its tool and arguments (a static turn of hundreds of
  // calls constructs, moves and destroys each of them).
  struct call_extras {
    std::string idempotency_key{};
    repair_function repair{};
    std::optional<attempt_context> context{};  // a coroutine tool's context, alive while its awaitable runs
  };
  call_extras& extras() { return extras_.get_or_emplace(); }

  Tool tool_;
  std::tuple<Args...> args_;
  bool destructive_retry_ = false;
  detail::heap_box<call_extras> extras_{};
};

namespace detail {
template <class T>
struct is_bound_call : std::false_type {};
template <class Tool, class... Args>
struct is_bound_call<bound_call<Tool, Args...>> : std::true_type {};
}  // namespace detail

/// A value made by `call(...)`.
template <class T>
concept BoundCall = detail::is_bound_call<std::remove_cvref_t<T>>::value;

/// Binds `tool` to `args` (stored by value, decayed; `std::ref` for
/// references). Any callable is accepted; an undeclared tool is unknown and
/// the dispatcher runs it alone.
template <class Tool, class... Args>
  requires(std::is_invocable_v<std::unwrap_ref_decay_t<Tool>&, std::unwrap_ref_decay_t<Args>&...> ||
           std::is_invocable_v<std::unwrap_ref_decay_t<Tool>&, const attempt_context&, std::unwrap_ref_decay_t<Args>&...>)
constexpr bound_call<std::decay_t<Tool>, std::decay_t<Args>...> call(Tool&& tool, Args&&... args) {
  return bound_call<std::decay_t<Tool>, std::decay_t<Args>...>(std::forward<Tool>(tool), std::forward<Args>(args)...);
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_CALL_HPP
