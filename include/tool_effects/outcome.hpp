// tool_effects/outcome.hpp — the result of one dispatched call: a value, the
// exception it threw, or "aborted" (the dispatcher never started it because
// an earlier call failed and the caller asked to abort). The dispatcher
// returns one outcome per call, in submission order, so one failing call
// never loses the other results.
#ifndef TOOL_EFFECTS_OUTCOME_HPP
#define TOOL_EFFECTS_OUTCOME_HPP

#include <exception>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

namespace tool_effects {

/// Thrown by `outcome<T>::value()` for a call the dispatcher never started
/// (the `abort_on_error` option after an earlier failure).
class call_aborted : public std::runtime_error {
 public:
  call_aborted() : std::runtime_error("tool_effects: call aborted before it started (an earlier call failed)") {}
};

/// Thrown by `outcome<T>::value()` on an outcome that holds nothing yet
/// (default-constructed; the dispatcher never returns one).
class outcome_empty : public std::logic_error {
 public:
  outcome_empty() : std::logic_error("tool_effects: outcome holds no result (call not finished)") {}
};

namespace detail {
struct aborted_state {};
}  // namespace detail

/// Exactly one of: a value of `T`, an exception (`error()`), or aborted.
/// `outcome<void>` has no value, only success. A default-constructed outcome
/// is empty (none of the three); the dispatcher fills every outcome it returns.
template <class T>
class outcome {
  static_assert(!std::is_reference_v<T>, "tool_effects::outcome<T>: T must not be a reference");
  using storage = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

 public:
  using value_type = T;

  /// An empty outcome (not finished).
  outcome() = default;

  /// A success holding `v` (no argument for `outcome<void>`).
  template <class... A>
  [[nodiscard]] static outcome success(A&&... v) {
    outcome o;
    o.state_.template emplace<1>(std::forward<A>(v)...);
    return o;
  }
  /// A failure holding `e` (must not be null).
  [[nodiscard]] static outcome failure(std::exception_ptr e) noexcept {
    outcome o;
    o.state_.template emplace<2>(std::move(e));
    return o;
  }
  /// An aborted call: never started.
  [[nodiscard]] static outcome abort() noexcept {
    outcome o;
    o.state_.template emplace<3>();
    return o;
  }

  /// The call ran and returned normally.
  [[nodiscard]] bool has_value() const noexcept { return state_.index() == 1; }
  /// The call ran and threw (see `error()`).
  [[nodiscard]] bool has_error() const noexcept { return state_.index() == 2; }
  /// The call was never started (aborted after an earlier failure).
  [[nodiscard]] bool aborted() const noexcept { return state_.index() == 3; }
  /// Holds a value, an error or aborted (the dispatcher always returns finished outcomes).
  [[nodiscard]] bool finished() const noexcept { return state_.index() != 0; }
  /// Same as `has_value()`.
  explicit operator bool() const noexcept { return has_value(); }

  /// The value. Rethrows the call's exception; throws `call_aborted` if
  /// aborted, `outcome_empty` if empty.
  decltype(auto) value() & { return get(*this); }
  decltype(auto) value() const& { return get(*this); }
  decltype(auto) value() && {
    check();
    if constexpr (!std::is_void_v<T>) return T(std::move(std::get<1>(state_)));
  }

  /// The exception the call threw; null unless `has_error()`.
  [[nodiscard]] std::exception_ptr error() const noexcept {
    return has_error() ? std::get<2>(state_) : std::exception_ptr{};
  }

 private:
  void check() const {
    switch (state_.index()) {
      case 1: return;
      case 2: std::rethrow_exception(std::get<2>(state_));
      case 3: throw call_aborted();
      default: throw outcome_empty();
    }
  }
  template <class Self>
  static decltype(auto) get(Self& self) {
    self.check();
    if constexpr (!std::is_void_v<T>) return (std::get<1>(self.state_));
  }

  std::variant<std::monostate, storage, std::exception_ptr, detail::aborted_state> state_;
};

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_OUTCOME_HPP
