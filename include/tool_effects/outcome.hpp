// tool_effects/outcome.hpp — the result of one dispatched call: a value, the
// exception it threw, or "aborted" (the dispatcher never started it because
// an earlier call failed and the caller asked to abort). The dispatcher
// returns one outcome per call, in submission order, so one failing call
// never loses the other results; a static turn's outcomes come back as a
// `turn_outcomes<R...>` (a flat tuple: structured bindings, `get<I>`, any size).
#ifndef TOOL_EFFECTS_OUTCOME_HPP
#define TOOL_EFFECTS_OUTCOME_HPP

#include <cstddef>
#include <exception>
#include <stdexcept>
#include <tuple>
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
  /// Whether the call did not run in this turn: its outcome was replayed from
  /// a journal (journal.hpp), where an earlier run had recorded its end.
  [[nodiscard]] bool replayed() const noexcept { return replayed_; }
  /// Marks this outcome as replayed from a journal.
  outcome& mark_replayed() & noexcept {
    replayed_ = true;
    return *this;
  }

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
  bool replayed_ = false;
};

namespace detail {
// One element of a flat tuple: element I of type T. A flat tuple derives from
// every leaf at once, so the I-th element is reached by one derived-to-base
// conversion (O(1) template depth at any size, unlike a recursive
// std::tuple, which libstdc++ cannot instantiate beyond ~900 elements).
template <std::size_t I, class T>
struct leaf {
  T value;
};
template <std::size_t I, class T>
constexpr T& leaf_value(leaf<I, T>& l) noexcept {
  return l.value;
}
template <std::size_t I, class T>
constexpr const T& leaf_value(const leaf<I, T>& l) noexcept {
  return l.value;
}
template <std::size_t I, class T>
T leaf_type(const leaf<I, T>&);  // declared only: the element type, by deduction

template <class Seq, class... T>
struct flat_tuple;
template <std::size_t... I, class... T>
struct flat_tuple<std::index_sequence<I...>, T...> : leaf<I, T>... {};

struct turn_outcomes_access;
}  // namespace detail

/// The outcomes of a static turn (`run_plan`, `run_parallel`,
/// `async_run_plan`), in submission order: element I is `outcome<R_I>`.
/// A flat tuple, so a turn may have any number of calls (a `std::tuple` of
/// ~900 elements exceeds libstdc++'s template depth). Supports structured
/// bindings (`auto [a, b] = run_plan(...)`), `get<I>(o)` (found by ADL) and
/// `o.get<I>()`, `std::tuple_size` / `std::tuple_element`, `apply(f)` and
/// `to_tuple()`.
template <class... R>
class turn_outcomes : private detail::flat_tuple<std::index_sequence_for<R...>, outcome<R>...> {
  using base = detail::flat_tuple<std::index_sequence_for<R...>, outcome<R>...>;
  friend struct detail::turn_outcomes_access;
  template <std::size_t I>
  using element = decltype(detail::leaf_type<I>(std::declval<const base&>()));

 public:
  /// Number of calls.
  static constexpr std::size_t size() noexcept { return sizeof...(R); }

  /// The outcome of call I.
  template <std::size_t I>
  [[nodiscard]] element<I>& get() & noexcept {
    return detail::leaf_value<I>(static_cast<base&>(*this));
  }
  template <std::size_t I>
  [[nodiscard]] const element<I>& get() const& noexcept {
    return detail::leaf_value<I>(static_cast<const base&>(*this));
  }
  template <std::size_t I>
  [[nodiscard]] element<I>&& get() && noexcept {
    return std::move(detail::leaf_value<I>(static_cast<base&>(*this)));
  }

  /// `f(outcome<R>&...)`: every outcome at once.
  template <class F>
  decltype(auto) apply(F&& f) & {
    return apply_impl(*this, std::forward<F>(f), std::index_sequence_for<R...>{});
  }
  template <class F>
  decltype(auto) apply(F&& f) const& {
    return apply_impl(*this, std::forward<F>(f), std::index_sequence_for<R...>{});
  }

  /// The outcomes as a `std::tuple<outcome<R>...>` (moved out).
  [[nodiscard]] std::tuple<outcome<R>...> to_tuple() && {
    return to_tuple_impl(std::index_sequence_for<R...>{});
  }

 private:
  template <class Self, class F, std::size_t... I>
  static decltype(auto) apply_impl(Self& self, F&& f, std::index_sequence<I...>) {
    return std::forward<F>(f)(self.template get<I>()...);
  }
  template <std::size_t... I>
  std::tuple<outcome<R>...> to_tuple_impl(std::index_sequence<I...>) {
    return std::tuple<outcome<R>...>(std::move(this->template get<I>())...);
  }
};

namespace detail {
// The dispatcher's access to the elements (it fills them in place).
struct turn_outcomes_access {
  template <class... R>
  static auto& elements(turn_outcomes<R...>& o) noexcept {
    return static_cast<typename turn_outcomes<R...>::base&>(o);
  }
};
}  // namespace detail

/// The outcome of call I of a turn (ADL: `get<I>(outcomes)`).
template <std::size_t I, class... R>
[[nodiscard]] decltype(auto) get(turn_outcomes<R...>& o) noexcept {
  return o.template get<I>();
}
template <std::size_t I, class... R>
[[nodiscard]] decltype(auto) get(const turn_outcomes<R...>& o) noexcept {
  return o.template get<I>();
}
template <std::size_t I, class... R>
[[nodiscard]] decltype(auto) get(turn_outcomes<R...>&& o) noexcept {
  return std::move(o).template get<I>();
}

}  // namespace tool_effects

template <class... R>
struct std::tuple_size<tool_effects::turn_outcomes<R...>> : std::integral_constant<std::size_t, sizeof...(R)> {};

template <std::size_t I, class... R>
struct std::tuple_element<I, tool_effects::turn_outcomes<R...>> {
  using type = std::remove_reference_t<decltype(std::declval<tool_effects::turn_outcomes<R...>&>().template get<I>())>;
};

#endif  // TOOL_EFFECTS_OUTCOME_HPP
