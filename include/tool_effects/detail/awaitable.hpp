// tool_effects/detail/awaitable.hpp — whether a tool's result is an Asio
// awaitable, and what awaiting it gives. The one place call.hpp, the
// dispatcher, the recovery loop and the JSON host ask.
#ifndef TOOL_EFFECTS_DETAIL_AWAITABLE_HPP
#define TOOL_EFFECTS_DETAIL_AWAITABLE_HPP

#include <type_traits>

#include <boost/asio/awaitable.hpp>

namespace tool_effects::detail {

// `is_awaitable`: T (cv/ref removed by the callers) is boost::asio::awaitable<V, E>;
// `value_type`: V for an awaitable, T itself otherwise.
template <class T>
struct awaitable_traits {
  static constexpr bool is_awaitable = false;
  using value_type = T;
};
template <class T, class E>
struct awaitable_traits<boost::asio::awaitable<T, E>> {
  static constexpr bool is_awaitable = true;
  using value_type = T;
};

// std::bool_constant form of `awaitable_traits<remove_cvref_t<T>>::is_awaitable`.
template <class T>
using is_awaitable = std::bool_constant<awaitable_traits<std::remove_cvref_t<T>>::is_awaitable>;

// What a call returning `Raw` produces: V for an awaitable<V>, `Raw` itself (references kept) otherwise.
template <class Raw>
using awaited_t = std::conditional_t<is_awaitable<Raw>::value,
                                     typename awaitable_traits<std::remove_cvref_t<Raw>>::value_type, Raw>;

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_DETAIL_AWAITABLE_HPP
