// tool_effects/access.hpp — access modes and the conflict rule.
//
// The rule, stated once: two calls conflict iff either is exclusive, or some
// access of one and some access of the other touch overlapping resources and
// are not both reads and not both appends. Every consumer — `conflicts_v`,
// the constexpr conflict matrix, the compile-time and runtime planners, the
// registry — calls `access_modes_conflict` and `access_lists_conflict`.
#ifndef TOOL_EFFECTS_ACCESS_HPP
#define TOOL_EFFECTS_ACCESS_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <tool_effects/effect.hpp>
#include <tool_effects/resource.hpp>

namespace tool_effects {

/// How a call touches a resource. `append` is a commutative write (an audit
/// log, a counter): appends commute with each other, not with reads or writes.
enum class access_mode : std::uint8_t { read, write, append };

/// Stable slugs: "read", "write", "append".
constexpr std::string_view to_string(access_mode m) noexcept {
  switch (m) {
    case access_mode::read: return "read";
    case access_mode::write: return "write";
    case access_mode::append: return "append";
  }
  return {};
}

/// The mode whose slug is exactly `s`, or `std::nullopt`.
constexpr std::optional<access_mode> try_parse_access_mode(std::string_view s) noexcept {
  for (const auto m : {access_mode::read, access_mode::write, access_mode::append})
    if (to_string(m) == s) return m;
  return std::nullopt;
}

/// The flag an access implies: `read` for reads, `write` for writes and appends.
constexpr effect implied_flag(access_mode m) noexcept { return m == access_mode::read ? effect::read : effect::write; }

/// THE mode rule: accesses to overlapping resources conflict unless both
/// read or both append.
constexpr bool access_modes_conflict(access_mode a, access_mode b) noexcept {
  return !(a == b && a != access_mode::write);
}

/// THE list rule, generic over the access representation so the compile-time
/// (`access`) and runtime (`runtime_access`) forms share it. `overlap(x, y)`
/// says whether two accesses' resources (and targets) overlap.
template <class ListA, class ListB, class Overlap>
constexpr bool access_lists_conflict(bool a_exclusive, const ListA& a, bool b_exclusive, const ListB& b,
                                     Overlap&& overlap) {
  if (a_exclusive || b_exclusive) return true;
  for (const auto& x : a)
    for (const auto& y : b)
      if (access_modes_conflict(x.mode, y.mode) && overlap(x, y)) return true;
  return false;
}

/// One compile-time access: a resource and a mode. Equal when the modes and
/// the resources' paths are equal (resources are identified by path).
struct access {
  const resource_info* resource;
  access_mode mode;
  friend constexpr bool operator==(const access& a, const access& b) noexcept {
    return (a.resource == b.resource || a.resource->path == b.resource->path) && a.mode == b.mode;
  }
};

/// Whether two compile-time accesses conflict.
constexpr bool accesses_conflict(const access& a, const access& b) noexcept {
  return access_modes_conflict(a.mode, b.mode) && overlaps(a.resource, b.resource);
}

/// The accesses of one tool as a constexpr value: a view of its declared
/// accesses, and whether it is exclusive (unknown effects: it conflicts with
/// every call, so it runs alone).
struct access_list {
  const access* first = nullptr;  ///< the accesses (static storage)
  std::size_t count = 0;          ///< how many
  bool exclusive = true;          ///< unknown: conflicts with everything

  [[nodiscard]] constexpr const access* begin() const noexcept { return first; }
  [[nodiscard]] constexpr const access* end() const noexcept { return first + count; }
  [[nodiscard]] constexpr std::size_t size() const noexcept { return count; }
  [[nodiscard]] constexpr const access& operator[](std::size_t i) const noexcept { return first[i]; }
};

/// Whether calls with these access lists conflict (the list rule above).
constexpr bool conflicts(const access_list& a, const access_list& b) noexcept {
  return access_lists_conflict(a.exclusive, a, b.exclusive, b,
                               [](const access& x, const access& y) { return overlaps(x.resource, y.resource); });
}

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_ACCESS_HPP
