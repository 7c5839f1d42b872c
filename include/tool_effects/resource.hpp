// tool_effects/resource.hpp — resources: the things tools read, write and
// append to. A resource is a user type; it may have a parent, and two
// resources overlap when one is an ancestor-or-self of the other.
// `everything` is the implicit root. At compile time each resource becomes
// one constexpr `resource_info` value; all algebra runs on those values.
#ifndef TOOL_EFFECTS_RESOURCE_HPP
#define TOOL_EFFECTS_RESOURCE_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <tool_effects/detail/type_name.hpp>

namespace tool_effects {

/// The implicit root resource: the ancestor of every resource. The unscoped
/// tags `read` and `write` access it, and so does an undeclared tool.
struct everything {};

/// Base class that gives a resource a parent:
/// `struct users_table : tool_effects::resource<user_db> {};`.
/// A class that does not derive from it is a top-level resource.
template <class Parent = everything>
struct resource {
  using tool_effects_parent = Parent;
};

namespace detail {
// Every effect tag derives from this; tags are never resources.
struct tag_marker {};

template <class R, class = void>
struct default_parent {
  using type = everything;
};
template <class R>
struct default_parent<R, std::void_t<typename R::tool_effects_parent>> {
  using type = typename R::tool_effects_parent;
};
}  // namespace detail

/// The parent of resource `R`. Specialise it for types you cannot edit:
/// `template <> struct tool_effects::resource_parent<lib::table> { using type = lib_db; };`
template <class R>
struct resource_parent : detail::default_parent<R> {};
template <>
struct resource_parent<everything> {
  using type = void;
};
template <class R>
using resource_parent_t = typename resource_parent<R>::type;

/// A type usable as a resource: an unqualified class type that is not an
/// effect tag, and whose parent (if any) is a resource too.
template <class R>
concept Resource = std::is_class_v<R> && !std::is_union_v<R> && std::is_same_v<R, std::remove_cv_t<R>> &&
                   !std::is_base_of_v<detail::tag_marker, R> &&
                   (std::is_same_v<R, everything> || std::is_class_v<resource_parent_t<R>>);

/// The compile-time value that stands for one resource type. Resources are
/// compared by PATH, as at runtime (call_description.hpp): two resource
/// types with the same path (e.g. the same `resource_name` under the same
/// parent) are the same resource, and their accesses conflict.
struct resource_info {
  std::string_view name;         ///< the type's name, or its `resource_name` member
  std::string_view path;         ///< "/"-joined names from below the root, e.g. "app::db/users"
  const resource_info* parent;   ///< nullptr for `everything`
  std::size_t depth;             ///< 0 for `everything`
  std::uint64_t hash;            ///< hash of `path`, for compile-time indexing
};

namespace detail {
template <class R, class = void>
struct resource_name_of {
  static constexpr std::string_view value = type_name_v<R>;
};
template <class R>
struct resource_name_of<R, std::void_t<decltype(R::resource_name)>> {
  static constexpr std::string_view value = R::resource_name;
};

template <class R>
struct resource_node;

template <>
struct resource_node<everything> {
  static constexpr std::array<char, 1> chars{};
  static constexpr resource_info value{"tool_effects::everything", std::string_view{}, nullptr, 0, fnv1a("")};
};

// A resource's name is one path segment: not empty, no '/'.
constexpr bool is_valid_resource_name(std::string_view name) noexcept {
  return !name.empty() && name.find('/') == std::string_view::npos;
}

template <class R>
struct resource_node {
  static_assert(Resource<R>, "tool_effects: not a resource type (see the instantiation of resource_node<R>)");
  using parent = resource_parent_t<R>;
  static constexpr std::string_view name = resource_name_of<R>::value;
  static_assert(is_valid_resource_name(name),
                "tool_effects: a resource's name is one path segment, not empty and without '/'; give the type a "
                "`static constexpr std::string_view resource_name`");
  static constexpr std::string_view parent_path = resource_node<parent>::value.path;
  static constexpr std::size_t length = parent_path.empty() ? name.size() : parent_path.size() + 1 + name.size();
  static constexpr std::array<char, length + 1> chars = [] {
    std::array<char, length + 1> a{};
    std::size_t n = 0;
    for (const char c : parent_path) a[n++] = c;
    if (!parent_path.empty()) a[n++] = '/';
    for (const char c : name) a[n++] = c;
    return a;
  }();
  static constexpr resource_info value{name, std::string_view(chars.data(), length), &resource_node<parent>::value,
                                       resource_node<parent>::value.depth + 1,
                                       fnv1a(std::string_view(chars.data(), length))};
};
}  // namespace detail

/// The identity of resource `R` as a constexpr pointer.
template <Resource R>
inline constexpr const resource_info* resource_v = &detail::resource_node<R>::value;

/// Whether resource path `a` is an ancestor-or-self of path `b`, comparing
/// whole "/"-separated segments ("db" is an ancestor of "db/users", not of
/// "dbx"). The empty path is the root, the ancestor of every path.
constexpr bool path_is_ancestor_or_self(std::string_view a, std::string_view b) noexcept {
  if (a.empty()) return true;
  return b.substr(0, a.size()) == a && (b.size() == a.size() || b[a.size()] == '/');
}

/// THE overlap rule of resources, at compile time and at runtime: two
/// resource paths overlap when one is an ancestor-or-self of the other.
constexpr bool paths_overlap(std::string_view a, std::string_view b) noexcept {
  return path_is_ancestor_or_self(a, b) || path_is_ancestor_or_self(b, a);
}

/// Whether `a` is an ancestor-or-self of `b` (by path).
constexpr bool is_ancestor_or_self(const resource_info* a, const resource_info* b) noexcept {
  return path_is_ancestor_or_self(a->path, b->path);
}

/// Whether two resources overlap: one is an ancestor-or-self of the other
/// (`paths_overlap` of their paths).
constexpr bool overlaps(const resource_info* a, const resource_info* b) noexcept {
  return paths_overlap(a->path, b->path);
}

/// Type-level form of `overlaps`.
template <Resource A, Resource B>
inline constexpr bool overlaps_v = overlaps(resource_v<A>, resource_v<B>);

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_RESOURCE_HPP
