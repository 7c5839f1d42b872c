// tool_effects/side_effects.hpp — declaring a tool's effects, once.
//
// Three equivalent routes, all seen by `side_effects_of<Tool>`:
//  1. a nested alias:      struct search { using side_effects = effects<read, network>; };
//  2. a specialisation:    template <> struct tool_effects::side_effects_of<lib::tool> { using type = effects<write>; };
//  3. a wrapper:           auto t = tag<read, idempotent>([](int id) { ... });
// An undeclared tool is unknown: empty effects, every predicate conservative,
// and exclusive for conflicts.
#ifndef TOOL_EFFECTS_SIDE_EFFECTS_HPP
#define TOOL_EFFECTS_SIDE_EFFECTS_HPP

#include <type_traits>
#include <utility>

#include <tool_effects/access.hpp>
#include <tool_effects/rules.hpp>
#include <tool_effects/tags.hpp>

namespace tool_effects {

namespace detail {
// Base of the primary template when nothing is declared.
struct undeclared {
  using type = effects<>;
};

template <class Tool>
struct nested_side_effects : undeclared {};
template <class Tool>
  requires requires { typename Tool::side_effects; }
struct nested_side_effects<Tool> {
  static_assert(EffectsList<typename Tool::side_effects>,
                "tool_effects: a tool's nested `side_effects` must be a tool_effects::effects<...>");
  using type = typename Tool::side_effects;
};
}  // namespace detail

/// The declaration of `Tool`: `::type` is an `effects<...>`. Specialise it for
/// types you cannot edit (route 2). cv/ref-qualified tools see the
/// declaration of the unqualified type.
template <class Tool>
struct side_effects_of : detail::nested_side_effects<Tool> {};
template <class Tool>
struct side_effects_of<const Tool> : side_effects_of<Tool> {};
template <class Tool>
struct side_effects_of<volatile Tool> : side_effects_of<Tool> {};
template <class Tool>
struct side_effects_of<const volatile Tool> : side_effects_of<Tool> {};
template <class Tool>
struct side_effects_of<Tool&> : side_effects_of<Tool> {};
template <class Tool>
struct side_effects_of<Tool&&> : side_effects_of<Tool> {};

/// The `effects<...>` of `Tool`.
template <class Tool>
using side_effects_of_t = typename side_effects_of<Tool>::type;

/// The `effect_set` of `Tool`; empty when undeclared.
template <class Tool>
inline constexpr effect_set side_effects_v = side_effects_of_t<Tool>::value;

/// The side-effect class of `Tool`: `non_idempotent` when undeclared.
template <class Tool>
inline constexpr side_effect_class side_effect_class_v = classify(side_effects_v<Tool>);

/// The access list of `Tool` as a constexpr value (exclusive when unknown).
template <class Tool>
inline constexpr access_list accesses_v{side_effects_of_t<Tool>::accesses.data(),
                                        side_effects_of_t<Tool>::accesses.size(), side_effects_of_t<Tool>::exclusive};

/// True only when `T` declared its effects by one of the three routes.
template <class T>
concept DeclaresSideEffects = !std::is_base_of_v<detail::undeclared, side_effects_of<std::remove_cvref_t<T>>>;

/// Safe to run alongside any call (reads; neither writes nor destroys).
template <class T>
concept ParallelSafe = is_parallel_safe(side_effects_v<T>);

/// Safe to re-run after a transient error (see `is_retry_safe`).
template <class T>
concept RetrySafe = is_retry_safe(side_effects_v<T>);

/// Removes or invalidates state; needs confirmation before it runs.
template <class T>
concept Destructive = is_destructive(side_effects_v<T>);

/// Needs approval before it runs: destructive, or unknown (undeclared or
/// `effects<>`); see `needs_confirmation`.
template <class T>
concept NeedsConfirmation = needs_confirmation(side_effects_v<T>);

namespace detail {
// std::invoke without <functional> (which costs ~0.4 s per translation unit).
template <class F, class T, class... Args>
  requires std::is_member_pointer_v<std::remove_cvref_t<F>>
constexpr decltype(auto) invoke(F&& f, T&& t, Args&&... args) noexcept(
    std::is_nothrow_invocable_v<F, T, Args...>) {
  using object = std::remove_cvref_t<T>;
  if constexpr (std::is_member_function_pointer_v<std::remove_cvref_t<F>>) {
    if constexpr (std::is_pointer_v<object>) return ((*std::forward<T>(t)).*f)(std::forward<Args>(args)...);
    else return (std::forward<T>(t).*f)(std::forward<Args>(args)...);
  } else {
    if constexpr (std::is_pointer_v<object>) return (*std::forward<T>(t)).*f;
    else return std::forward<T>(t).*f;
  }
}
template <class F, class... Args>
  requires(!std::is_member_pointer_v<std::remove_cvref_t<F>>)
constexpr decltype(auto) invoke(F&& f, Args&&... args) noexcept(std::is_nothrow_invocable_v<F, Args...>) {
  return std::forward<F>(f)(std::forward<Args>(args)...);
}
}  // namespace detail

/// A value (usually a callable) carrying a declaration: route 3. Callable
/// exactly like the wrapped value, with `noexcept` and value category
/// preserved; `get()` returns the wrapped value.
template <class Effects, class F>
class tagged {
  static_assert(EffectsList<Effects>, "tool_effects::tagged<Effects, F>: Effects must be an effects<...>");

 public:
  using side_effects = Effects;
  using value_type = F;

  constexpr tagged() = default;
  template <class G>
    requires std::is_constructible_v<F, G&&>
  constexpr explicit tagged(G&& g) noexcept(std::is_nothrow_constructible_v<F, G&&>) : f_(std::forward<G>(g)) {}

  [[nodiscard]] constexpr F& get() & noexcept { return f_; }
  [[nodiscard]] constexpr const F& get() const& noexcept { return f_; }
  [[nodiscard]] constexpr F&& get() && noexcept { return std::move(f_); }
  [[nodiscard]] constexpr const F&& get() const&& noexcept { return std::move(f_); }

  template <class... Args>
    requires std::is_invocable_v<F&, Args...>
  constexpr decltype(auto) operator()(Args&&... args) & noexcept(std::is_nothrow_invocable_v<F&, Args...>) {
    return detail::invoke(f_, std::forward<Args>(args)...);
  }
  template <class... Args>
    requires std::is_invocable_v<const F&, Args...>
  constexpr decltype(auto) operator()(Args&&... args) const& noexcept(std::is_nothrow_invocable_v<const F&, Args...>) {
    return detail::invoke(f_, std::forward<Args>(args)...);
  }
  template <class... Args>
    requires std::is_invocable_v<F&&, Args...>
  constexpr decltype(auto) operator()(Args&&... args) && noexcept(std::is_nothrow_invocable_v<F&&, Args...>) {
    return detail::invoke(std::move(f_), std::forward<Args>(args)...);
  }
  template <class... Args>
    requires std::is_invocable_v<const F&&, Args...>
  constexpr decltype(auto) operator()(Args&&... args) const&& noexcept(
      std::is_nothrow_invocable_v<const F&&, Args...>) {
    return detail::invoke(std::move(f_), std::forward<Args>(args)...);
  }

 private:
  F f_;
};

/// Wraps `f` (a lambda, function pointer, or any value) with the declaration
/// `effects<Tags...>`: `auto fetch = tag<read, idempotent>(fetch_user);`.
template <EffectTag... Tags, class F>
constexpr tagged<effects<Tags...>, std::decay_t<F>> tag(F&& f) noexcept(
    std::is_nothrow_constructible_v<std::decay_t<F>, F&&>) {
  return tagged<effects<Tags...>, std::decay_t<F>>(std::forward<F>(f));
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_SIDE_EFFECTS_HPP
