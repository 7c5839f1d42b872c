// tool_effects/tags.hpp — the type-level declaration vocabulary: the seven
// flag tags, the resource-scoped access tags, and `effects<Tags...>`, which
// turns a tag list into constexpr values (an `effect_set` and an access list).
//
// Compile time matters here: every tool declaration instantiates this code.
// A tag is reduced at once to one `detail::tag_info` value, and `effects<>`
// folds those values with two constexpr calls; no per-tag lambdas, no type
// lists (the resource types, needed only for diagnostics, are computed lazily
// by `detail::resources_of`).
//
// Tag protocol (internal, open to new kinds of tag): a tag derives from
// `detail::tag_marker` and provides
//   static constexpr detail::tag_info tool_effects_info;  // flags, exclusive, accesses
//   using tool_effects_resources = ...;                  // the accesses' resource types
#ifndef TOOL_EFFECTS_TAGS_HPP
#define TOOL_EFFECTS_TAGS_HPP

#include <array>
#include <cstddef>
#include <type_traits>

#include <boost/mp11/list.hpp>

#include <tool_effects/access.hpp>
#include <tool_effects/effect.hpp>
#include <tool_effects/resource.hpp>

namespace tool_effects {

namespace detail {
// What one tag contributes to a declaration.
struct tag_info {
  effect_set flags;
  bool exclusive = false;
  const access* first = nullptr;
  std::size_t count = 0;
};

template <effect E>
struct flag_tag : tag_marker {
  static constexpr tag_info tool_effects_info{effect_set{E}, false, nullptr, 0};
  using tool_effects_resources = boost::mp11::mp_list<>;
};

// A flag tag that also accesses the root (`read`, `write`).
template <effect E, access_mode M>
struct root_tag : tag_marker {
  static constexpr access tool_effects_array[1] = {access{resource_v<everything>, M}};
  static constexpr tag_info tool_effects_info{effect_set{E}, false, tool_effects_array, 1};
  using tool_effects_resources = boost::mp11::mp_list<everything>;
};

template <access_mode M, class... R>
struct scoped_tag : tag_marker {
  static constexpr access tool_effects_array[sizeof...(R)] = {access{resource_v<R>, M}...};
  static constexpr tag_info tool_effects_info{effect_set{implied_flag(M)}, false, tool_effects_array, sizeof...(R)};
  using tool_effects_resources = boost::mp11::mp_list<R...>;
};
}  // namespace detail

/// Reads. Unscoped: it reads `everything`.
struct read : detail::root_tag<effect::read, access_mode::read> {};
/// Mutates state. Unscoped: it writes `everything`.
struct write : detail::root_tag<effect::write, access_mode::write> {};
/// Repeating the call with the same arguments has the same effect.
struct idempotent : detail::flag_tag<effect::idempotent> {};
/// Removes or invalidates state. Without a scoped `writes<>` it writes `everything`.
struct destructive : detail::flag_tag<effect::destructive> {};
/// Touches a third-party system (email, payments, webhooks). No effect on conflicts.
struct external : detail::flag_tag<effect::external> {};
/// High cost (tokens, money, time). No effect on conflicts.
struct expensive : detail::flag_tag<effect::expensive> {};
/// Makes a network call. No effect on conflicts.
struct network : detail::flag_tag<effect::network> {};

/// Reads the listed resources (implies the `read` flag).
template <Resource... R>
  requires(sizeof...(R) > 0)
struct reads : detail::scoped_tag<access_mode::read, R...> {};
/// Writes the listed resources (implies the `write` flag).
template <Resource... R>
  requires(sizeof...(R) > 0)
struct writes : detail::scoped_tag<access_mode::write, R...> {};
/// Appends to the listed resources: writes that commute with each other
/// (implies the `write` flag).
template <Resource... R>
  requires(sizeof...(R) > 0)
struct appends : detail::scoped_tag<access_mode::append, R...> {};

/// A type usable inside `effects<...>`.
template <class T>
concept EffectTag = std::is_base_of_v<detail::tag_marker, T>;

namespace detail {
struct declaration_head {
  effect_set flags;
  bool exclusive = true;
  bool destroys_everything = false;  // destructive, and no scoped write: writes `everything`
  std::size_t count = 0;             // accesses, including that implied write
};

// Folds tag values: the union of the flags; exclusive (unknown) when a tag is
// exclusive or the union is empty — then the declaration is empty.
constexpr declaration_head fold_head(const tag_info* tags, std::size_t n) noexcept {
  declaration_head h;
  bool any_exclusive = false, has_write = false;
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    h.flags |= tags[i].flags;
    any_exclusive = any_exclusive || tags[i].exclusive;
    count += tags[i].count;
    for (std::size_t k = 0; k < tags[i].count; ++k) has_write = has_write || tags[i].first[k].mode == access_mode::write;
  }
  h.exclusive = any_exclusive || h.flags.empty();
  if (h.exclusive) return declaration_head{};
  h.destroys_everything = h.flags.contains(effect::destructive) && !has_write;
  h.count = count + (h.destroys_everything ? 1 : 0);
  return h;
}

template <std::size_t K>
constexpr std::array<access, K> fold_accesses(const tag_info* tags, std::size_t n, declaration_head h) noexcept {
  std::array<access, K> out{};
  if (h.exclusive) return out;
  std::size_t at = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < tags[i].count; ++k) out[at++] = tags[i].first[k];
  if (h.destroys_everything) out[at] = access{resource_v<everything>, access_mode::write};
  return out;
}
}  // namespace detail

/// A tool's declaration: a list of tags. Exposes
///  - `value`: the `effect_set` (scoped tags add their implied flag);
///  - `accesses`: the constexpr array of (resource, mode) accesses;
///  - `exclusive`: true when the declaration is unknown (empty, or a part of
///    it is unknown) — such a tool conflicts with every call, and its
///    `value` is empty.
template <EffectTag... Tags>
struct effects {
 private:
  static constexpr detail::tag_info tags_[sizeof...(Tags) + 1] = {Tags::tool_effects_info..., detail::tag_info{}};

 public:
  static constexpr detail::declaration_head head = detail::fold_head(tags_, sizeof...(Tags));
  static constexpr bool exclusive = head.exclusive;
  static constexpr effect_set value = head.flags;
  static constexpr std::array<access, head.count> accesses =
      detail::fold_accesses<head.count>(tags_, sizeof...(Tags), head);
};

namespace detail {
template <class T>
struct is_effects : std::false_type {};
template <class... T>
struct is_effects<effects<T...>> : std::true_type {};

// The resource types of a declaration's accesses, in order (diagnostics only).
template <class Resources>
struct expand_resources {
  using type = Resources;
};
template <class Effects>
struct resources_of;
template <class... Tags>
struct resources_of<effects<Tags...>> {
  using declared = boost::mp11::mp_append<boost::mp11::mp_list<>,
                                          typename expand_resources<typename Tags::tool_effects_resources>::type...>;
  using type = std::conditional_t<effects<Tags...>::exclusive, boost::mp11::mp_list<>,
                                  std::conditional_t<effects<Tags...>::head.destroys_everything,
                                                     boost::mp11::mp_push_back<declared, everything>, declared>>;
};
}  // namespace detail

/// Whether `T` is a specialisation of `effects<...>`.
template <class T>
concept EffectsList = detail::is_effects<T>::value;

}  // namespace tool_effects

#endif  // TOOL_EFFECTS_TAGS_HPP
