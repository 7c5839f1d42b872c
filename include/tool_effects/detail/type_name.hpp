// tool_effects/detail/type_name.hpp — the name of a type as a constexpr
// string, for diagnostics, resource paths and registry tables.
#ifndef TOOL_EFFECTS_DETAIL_TYPE_NAME_HPP
#define TOOL_EFFECTS_DETAIL_TYPE_NAME_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tool_effects::detail {

template <class T>
constexpr std::string_view raw_type_name() noexcept {
#if defined(__clang__) || defined(__GNUC__)
  constexpr std::string_view p = __PRETTY_FUNCTION__;
  // clang: "... raw_type_name() [T = ns::foo]"
  // gcc:   "... raw_type_name() [with T = ns::foo; std::string_view = ...]"
  constexpr auto start = p.find("T = ") + 4;
#if defined(__clang__)
  constexpr auto stop = p.rfind(']');
#else
  constexpr auto stop = p.find(';', start);
#endif
  return p.substr(start, stop - start);
#else
#error "tool_effects needs GCC or Clang to name types"
#endif
}

// A copy of the name in static storage (not a view into __PRETTY_FUNCTION__),
// so that it is usable in constant expressions on every compiler.
template <class T>
struct type_name_storage {
  static constexpr std::string_view raw = raw_type_name<T>();
  static constexpr auto chars = [] {
    std::array<char, raw.size() + 1> a{};
    for (std::size_t i = 0; i < raw.size(); ++i) a[i] = raw[i];
    return a;
  }();
};

/// The compiler's spelling of `T`, e.g. "app::user_db".
template <class T>
inline constexpr std::string_view type_name_v{type_name_storage<T>::chars.data(), type_name_storage<T>::raw.size()};

/// 64-bit FNV-1a; used to index resources at compile time.
constexpr std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 14695981039346656037ull) noexcept {
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace tool_effects::detail

#endif  // TOOL_EFFECTS_DETAIL_TYPE_NAME_HPP
